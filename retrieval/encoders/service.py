"""Built-in encoders on a dataset: video features, training, embedding and the index, fed
from the database and stored as model artifacts (embedding resumes chunk by chunk)."""

import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from django.conf import settings
from django.db import transaction

from config.errors import UserError
from retrieval.encoders import features as video_features
from retrieval.encoders.base import (
    EPOCHS,
    SEEDS,
    Encoder,
    EpochCallback,
    TrainingData,
    VideoInputs,
    device_problem,
    resolve_device,
    thresholded,
)
from retrieval.encoders.registry import ENCODERS, get_encoder, load_encoder
from retrieval.formats.embeddings import read_npy_header
from retrieval.formats.expert_features import read_experts
from retrieval.formats.records import FormatError
from retrieval.ids import positions_of
from retrieval.models import Caption, Dataset, RetrievalModel, Video
from retrieval.proxies import RELEVANCES
from retrieval.search.artifacts import (
    StoredEmbeddings,
    model_dir,
    relative,
    resolve,
    save_embeddings,
)
from retrieval.search.registration import check_name_free
from retrieval.search.service import build_exact_index

if TYPE_CHECKING:
    from retrieval.proxies.service import ProxyRelevance

Progress = Callable[[int], object]
CHUNK = 2048
"""Items per saved chunk while embedding: the unit of resumption."""
DEFAULT_THRESHOLD = 0.4
"""T when a proxy is chosen: Wray et al. (CVPR 2021, §5.4, Fig. 6) find SYN, METEOR and PoS
best near 0.4 (BoW near 0.2)."""


class EncodingError(UserError):
    """A step cannot run as asked (untrained model, missing features); nothing changed."""


def check_device(device: str) -> str:
    """``device`` if work can run on it in this process, else EncodingError (not torch's
    AssertionError on a machine without CUDA)."""
    problem = device_problem(device)
    if problem is not None:
        raise EncodingError(f"device: {problem}")
    return device


def register_encoder(
    dataset: Dataset, name: str, encoder: str, config: dict | None = None
) -> RetrievalModel:
    """Register a built-in encoder on ``dataset`` (it is trained or embedded later)."""
    if encoder not in ENCODERS:
        raise EncodingError(f"unknown encoder {encoder!r}; choose one of {sorted(ENCODERS)}")
    check_name_free(dataset, name)
    config = dict(config or {})
    try:
        get_encoder(encoder, **config)  # fail now on bad settings, not after training
    except (TypeError, ValueError) as exc:  # an unknown or out-of-range setting
        raise EncodingError(f"bad settings for {encoder}: {exc}") from None
    return RetrievalModel.objects.create(
        dataset=dataset,
        name=name,
        source=RetrievalModel.Source.ENCODER,
        encoder=encoder,
        config=config,
    )


def features_path(video: Video) -> str:
    """Where a video's feature vector is stored, relative to the media root."""
    return f"features/dataset-{video.dataset_id}/{video.key}.npy"


def experts_path(video: Video) -> str:
    """Where a video's three feature experts (``.npz``) are stored, relative to the media root."""
    return f"features/dataset-{video.dataset_id}/{video.key}.npz"


def extract_dataset_features(
    dataset: Dataset,
    *,
    device: str = "auto",
    force: bool = False,
    experts: bool = False,
    progress: Progress | None = None,
    workers: int = 1,
) -> int:
    """Compute and store features (and with ``experts`` the ``<key>.npz`` experts) of the
    dataset's local, readable videos that lack them, a segment on its span only; a file that
    cannot be read is named in an EncodingError raised after the others are stored."""
    check_device(device)
    videos = (
        Video.objects.filter(dataset=dataset)
        .exclude(media="")
        .exclude(media_state=Video.MediaState.FAILED)
        .order_by("pk")
    )
    root = Path(settings.MEDIA_ROOT)
    todo = list(videos.only("pk", "key", "media", "features", "dataset_id", "start", "end"))
    if not force:
        todo = [
            v
            for v in todo
            if not v.features or (experts and not (root / experts_path(v)).is_file())
        ]
    done: list[Video] = []
    problems: list[str] = []
    paths = [str(root / video.media.name) for video in todo]
    spans = [(video.start, video.end) for video in todo]  # (None, None): the whole file
    results = video_features.extract_videos(
        paths, device=resolve_device(device), experts=experts, workers=workers, spans=spans
    )
    for video, (vector, sequences, problem) in zip(todo, results, strict=True):
        if problem is not None:  # PyAV raises many error types for broken files
            problems.append(
                f"{video.media.name} (video {video.key!r}): cannot read frames ({problem})"
            )
            continue
        _store(root, video, vector.astype(np.float32), sequences)
        done.append(video)
        if progress:
            progress(1)
    Video.objects.bulk_update(done, ["features"], batch_size=2000)
    if problems:
        shown = "; ".join(problems[:5]) + (
            f"; and {len(problems) - 5} more" if len(problems) > 5 else ""
        )
        raise EncodingError(f"{shown}; features of the other {len(done)} videos are stored")
    return len(done)


def feature_workers(device: str = "auto") -> int:
    """Processes for feature extraction: one per core (at most two) on the CPU, else one.
    Two torch threads made one clip 20 times slower than one (bench/RESULTS.md, first start)."""
    if resolve_device(device).type != "cpu":
        return 1
    return max(1, min(2, os.cpu_count() or 1))


def _store(
    root: Path, video: Video, vector: np.ndarray, sequences: video_features.ExpertSequences | None
) -> None:
    """Write a video's vector (and experts) under the media root and point the row at it."""
    path = root / features_path(video)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, vector)
    if sequences is not None:
        np.savez(root / experts_path(video), **sequences.arrays())
    video.features.name = features_path(video)


def link_feature_files(dataset: Dataset, directory: Path) -> int:
    """Attach user-supplied ``<video key>.npy`` vectors and/or ``.npz`` experts (a video with
    experts only gets their pooled vector); all widths are checked before anything is written."""
    directory = Path(directory).resolve()
    videos = list(Video.objects.filter(dataset=dataset).only("pk", "key", "dataset_id"))
    # A key such as "../x" must not reach outside the folder, through a symlink either.
    files = {
        v.pk: (_feature_file(directory, v.key, ".npy"), _feature_file(directory, v.key, ".npz"))
        for v in videos
    }
    found = [v for v in videos if any(files[v.pk])]
    if not found:
        raise EncodingError(
            f"{directory}: no <video key>.npy or .npz file for any video of {dataset.name!r}"
        )
    vectors: list[np.ndarray] = []
    experts: list[video_features.ExpertSequences | None] = []
    widths: dict[str, int] = {}
    for video in found:
        npy, npz = files[video.pk]
        sequences = None if npz is None else _read_experts(npz, widths)
        vector = sequences.pooled() if npy is None else _read_vector(npy)
        if vectors and vector.size != vectors[0].size:
            source = npy or npz
            raise EncodingError(f"{source}: {vector.size} values, others have {vectors[0].size}")
        vectors.append(vector)
        experts.append(sequences)
    root = Path(settings.MEDIA_ROOT)
    for video, vector, sequences in zip(found, vectors, experts, strict=True):
        _store(root, video, vector, sequences)
    with transaction.atomic():
        Video.objects.bulk_update(found, ["features"], batch_size=2000)
    return len(found)


def _read_vector(source: Path) -> np.ndarray:
    try:
        read_npy_header(source)  # before allocating: a bad or huge header is refused
        vector = np.asarray(np.load(source, allow_pickle=False), dtype=np.float32).reshape(-1)
    except FormatError as exc:
        raise EncodingError(str(exc)) from None
    except (ValueError, OSError) as exc:
        raise EncodingError(f"{source}: not a readable .npy array ({exc})") from None
    if not np.isfinite(vector).all():
        raise EncodingError(f"{source}: contains NaN or infinite values")
    return vector


def _read_experts(source: Path, widths: dict[str, int]) -> video_features.ExpertSequences:
    """One uploaded ``.npz``, its widths checked against (and recorded in) ``widths``."""
    try:
        arrays = read_experts(source)
    except FormatError as exc:
        raise EncodingError(str(exc)) from None
    for name, array in arrays.items():
        width = widths.setdefault(name, array.shape[1])
        if array.shape[1] != width:
            raise EncodingError(
                f"{source.name}, field {name!r}: {array.shape[1]} columns, others have {width}"
            )
    return video_features.ExpertSequences(**arrays)


def _feature_file(directory: Path, key: str, suffix: str) -> Path | None:
    """``directory/<key><suffix>`` when it is a file inside ``directory`` (resolved), else None."""
    path = (directory / f"{key}{suffix}").resolve()
    return path if path.is_relative_to(directory) and path.is_file() else None


def load_experts(videos: Sequence[Video]) -> list[video_features.ExpertSequences]:
    """The stored expert sequences of ``videos`` (all must have them)."""
    root = Path(settings.MEDIA_ROOT)
    missing = [v.key for v in videos if not (root / experts_path(v)).is_file()]
    if missing:
        raise EncodingError(
            f"{len(missing)} videos have no feature experts (e.g. {missing[0]!r}); run "
            "`manage.py features --experts`, or attach .npz files with `--from DIR`"
        )
    loaded = []
    for video in videos:
        with np.load(root / experts_path(video), allow_pickle=False) as arrays:
            loaded.append(video_features.ExpertSequences(**{k: arrays[k] for k in arrays.files}))
    return loaded


def load_features(videos: Sequence[Video]) -> np.ndarray:
    """Stack the stored feature vectors of ``videos`` (all must have one)."""
    missing = [v.key for v in videos if not v.features]
    if missing:
        raise EncodingError(
            f"{len(missing)} videos have no features (e.g. {missing[0]!r}); run "
            "`manage.py features` first"
        )
    root = Path(settings.MEDIA_ROOT)
    return np.stack([np.load(root / v.features.name).astype(np.float32) for v in videos])


@dataclass(frozen=True)
class TrainingSplit:
    """:class:`TrainingData` with the primary keys of its videos and captions (rows in order)."""

    data: TrainingData
    video_ids: np.ndarray
    caption_ids: np.ndarray


def training_split(
    dataset: Dataset, split: str = "train", *, experts: bool = False
) -> TrainingSplit:
    """The split's videos (features, and experts with ``experts``) and captions, in pk order."""
    videos = list(Video.objects.filter(dataset=dataset, split=split).order_by("pk"))
    if not videos:
        raise EncodingError(f"dataset {dataset.name!r} has no {split!r} videos to train on")
    position = {v.pk: i for i, v in enumerate(videos)}
    rows = list(
        Caption.objects.filter(dataset=dataset, video__split=split)
        .order_by("pk")
        .values_list("pk", "text", "video_id")
    )
    data = TrainingData(
        video_features=load_features(videos),
        captions=[text for _, text, _ in rows],
        caption_video=np.array([position[video_id] for _, _, video_id in rows], dtype=np.int64),
        video_keys=[v.key for v in videos],
        video_experts=load_experts(videos) if experts else None,
    )
    return TrainingSplit(
        data=data,
        video_ids=np.array([v.pk for v in videos], dtype=np.int64),
        caption_ids=np.array([pk for pk, _, _ in rows], dtype=np.int64),
    )


def check_relevance(relevance: str, threshold: float | None) -> float | None:
    """Validate a training relevance and its threshold; the threshold to use (None: instance)."""
    if relevance not in RELEVANCES:
        raise EncodingError(f"unknown relevance {relevance!r}: use one of {', '.join(RELEVANCES)}")
    if relevance == "instance":
        if threshold is not None:
            raise EncodingError(
                "a threshold needs a proxy relevance (bow, pos, syn or met); instance "
                "relevance has only each caption's own video as positive"
            )
        return None
    if threshold is None:
        return DEFAULT_THRESHOLD
    threshold = float(threshold)
    if not 0.0 < threshold <= 1.0:  # also refuses NaN
        raise EncodingError(f"threshold must be in (0, 1], got {threshold:g}")
    return threshold


def semantic_positives(
    relevance: "ProxyRelevance",
    video_ids: np.ndarray,
    caption_ids: np.ndarray,
    threshold: float,
) -> np.ndarray:
    """Bool [captions, videos] in the order of ``caption_ids`` x ``video_ids``: S(video,
    caption) >= ``threshold`` (Wray et al., CVPR 2021, §4.3)."""
    video_rows = _index_of(relevance.video_ids, video_ids, "videos")
    caption_rows = _index_of(relevance.caption_ids, caption_ids, "captions")
    columns = relevance.items.caption_text[caption_rows]
    similarity = relevance.matrix[np.ix_(video_rows, columns)]  # [videos, captions]
    return np.ascontiguousarray(thresholded(similarity.T, threshold))


def _index_of(known: np.ndarray, wanted: np.ndarray, what: str) -> np.ndarray:
    """Position of each wanted pk in ``known`` (any order); an EncodingError if one is absent."""
    rows = positions_of(known, wanted)
    missing = np.asarray(wanted)[rows < 0]
    if len(missing):
        raise EncodingError(
            f"the proxy relevance lacks {len(missing)} of the {len(rows)} training {what} "
            f"(e.g. pk {missing[0]}); rebuild it or check the split"
        )
    return rows


def positives_per_caption(data: TrainingData) -> float:
    """Mean number of positive videos per caption (own video included) under ``data``."""
    n = len(data.captions)
    if not n:
        return 0.0
    if data.positives is None:
        return 1.0
    own_missing = ~data.positives[np.arange(n), data.caption_video]
    return float((data.positives.sum(1) + own_missing).mean())


def load_model_encoder(model: RetrievalModel) -> Encoder:
    """The model's encoder with its trained weights (a fresh one if it has none)."""
    if model.source != RetrievalModel.Source.ENCODER:
        raise EncodingError(f"model {model.name!r} is not a built-in encoder")
    if model.weights:
        return load_encoder(resolve(model.weights))
    encoder = get_encoder(model.encoder, **model.config)
    if encoder.trainable:
        raise EncodingError(f"model {model.name!r} ({model.encoder}) must be trained first")
    return encoder


def train(
    model: RetrievalModel,
    *,
    epochs: int | None = None,
    seed: int = 0,
    device: str = "auto",
    progress: bool = False,
    relevance: str = "instance",
    threshold: float | None = None,
    on_epoch: EpochCallback | None = None,
) -> list[float]:
    """Train a trainable encoder on the dataset's train split and save its weights; arguments
    are checked first. ``relevance`` picks the positives (Wray et al., CVPR 2021, §4.3): a
    caption's own video, plus with a proxy every pair with S >= ``threshold``."""
    threshold = check_relevance(relevance, threshold)
    check_device(device)
    for name, value, (low, high) in (("seed", seed, SEEDS), ("epochs", epochs, EPOCHS)):
        if value is not None and not low <= value <= high:
            raise EncodingError(f"{name}: {value} is not between {low} and {high}")
    encoder = get_encoder(model.encoder, **model.config)
    if not encoder.trainable:
        raise EncodingError(f"the {model.encoder} encoder has nothing to train")
    split = training_split(model.dataset, experts=encoder.uses_experts)
    data = split.data
    if threshold is not None:
        from retrieval.proxies.service import ProxyError, ProxyOptions, proxy_relevance

        try:
            proxy = proxy_relevance(
                model.dataset, ProxyOptions(relevance, split="train"), progress=progress
            )
        except ProxyError as exc:
            raise EncodingError(f"{relevance} relevance: {exc}") from None
        positives = semantic_positives(proxy, split.video_ids, split.caption_ids, threshold)
        positives[np.arange(len(data.captions)), data.caption_video] = True  # S = 1 there
        data.positives = positives
    started = time.perf_counter()
    losses = encoder.fit(
        data, epochs=epochs, seed=seed, device=device, progress=progress, on_epoch=on_epoch
    )
    seconds = time.perf_counter() - started
    path = model_dir(model) / "weights.pt"
    encoder.save(path)
    model.weights = relative(path)
    model.training_log = [
        {
            "epochs": len(losses),
            "seed": seed,
            "device": str(resolve_device(device)),
            "seconds": round(seconds, 2),
            "relevance": relevance,
            "threshold": threshold,
            "positives_per_caption": round(positives_per_caption(data), 4),
            "losses": [round(float(x), 6) for x in losses],
        }
    ]
    model.save(update_fields=["weights", "training_log", "updated_at"])
    return losses


def _encode_chunked(
    work: Path,
    label: str,
    ids: np.ndarray,
    encode: Callable[[slice], np.ndarray],
    progress: Progress | None,
) -> np.ndarray:
    """Encode ``ids`` chunk by chunk, saving each chunk so a rerun resumes."""
    parts = []
    for number, start in enumerate(range(0, len(ids), CHUNK)):
        window = slice(start, start + CHUNK)
        path = work / f"{label}-{number:05d}.npz"
        vectors = None
        if path.exists():
            with np.load(path) as saved:
                if np.array_equal(saved["ids"], ids[window]):
                    vectors = saved["vectors"]
        if vectors is None:
            vectors = np.asarray(encode(window), dtype=np.float32)
            tmp = work / f"{label}-{number:05d}.part.npz"
            np.savez(tmp, ids=ids[window], vectors=vectors)
            tmp.replace(path)
        parts.append(vectors)
        if progress:
            progress(len(vectors))
    return np.concatenate(parts) if parts else np.zeros((0, 0), np.float32)


def embed(
    model: RetrievalModel,
    *,
    split: str = "test",
    device: str = "auto",
    batch_size: int = 256,
    progress: Progress | None = None,
) -> StoredEmbeddings:
    """Embed the split's captions and videos, save them, and build the exact faiss index."""
    check_device(device)
    encoder = load_model_encoder(model)
    dataset = model.dataset
    captions = list(
        Caption.objects.filter(dataset=dataset, split=split)
        .order_by("pk")
        .values_list("pk", "text")
    )
    videos = list(Video.objects.filter(dataset=dataset, split=split).order_by("pk"))
    if not captions or not videos:
        raise EncodingError(f"dataset {dataset.name!r} has no {split!r} captions or videos")
    features = load_features(videos) if encoder.uses_features else None
    experts = load_experts(videos) if encoder.uses_experts else None
    video_captions = None
    if encoder.uses_captions:
        # A text-only model describes a video by its non-query captions (never the queries).
        texts: dict[int, list[str]] = {v.pk: [] for v in videos}
        for video_id, text in (
            Caption.objects.filter(  # the split's videos as a subquery: no id list
                dataset=dataset, video__dataset=dataset, video__split=split, is_query=False
            )
            .order_by("pk")
            .values_list("video_id", "text")
        ):
            texts[video_id].append(text)
        video_captions = [texts[v.pk] for v in videos]
    caption_ids = np.array([pk for pk, _ in captions], dtype=np.int64)
    video_ids = np.array([v.pk for v in videos], dtype=np.int64)
    work = model_dir(model) / f"partial-{split}"
    work.mkdir(exist_ok=True)
    caption_texts = [text for _, text in captions]
    caption_vectors = _encode_chunked(
        work,
        "captions",
        caption_ids,
        lambda w: encoder.encode_captions(caption_texts[w], device=device, batch_size=batch_size),
        progress,
    )
    keys = [v.key for v in videos]

    def encode_videos(window: slice) -> np.ndarray:
        inputs = VideoInputs(
            keys=keys[window],
            features=None if features is None else features[window],
            captions=None if video_captions is None else video_captions[window],
            experts=None if experts is None else experts[window],
        )
        return encoder.encode_videos(inputs, device=device, batch_size=batch_size)

    video_vectors = _encode_chunked(work, "videos", video_ids, encode_videos, progress)
    embeddings = StoredEmbeddings(caption_ids, caption_vectors, video_ids, video_vectors)
    save_embeddings(model, embeddings)
    shutil.rmtree(work, ignore_errors=True)
    build_exact_index(model, split)
    return embeddings

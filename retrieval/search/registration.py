"""Register a retrieval model on a dataset from uploaded embeddings or a TREC run file, all or
nothing: the files are validated completely first, then the rows written in one transaction."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from django.db import IntegrityError, transaction

from config.errors import UserError
from retrieval.datasets.names import check_name
from retrieval.formats import embeddings as embeddings_format
from retrieval.formats import trec
from retrieval.formats.records import FormatError
from retrieval.models import Dataset, RetrievalModel, Run
from retrieval.search.artifacts import StoredEmbeddings, save_embeddings
from retrieval.search.runs import RankedLists
from retrieval.search.runs_service import KeyIndex, store_run


class RegistrationError(UserError):
    """The model cannot be registered (name taken, unknown ids); nothing was written."""


def check_name_free(dataset: Dataset, name: str) -> None:
    """Refuse a model name the name rule refuses or the dataset already uses (by a model, or
    by a run: a model's run takes its name)."""
    check_name(name, "model")
    for table, what in ((RetrievalModel, "model"), (Run, "run")):
        if table.objects.filter(dataset=dataset, name=name).exists():
            raise RegistrationError(
                f"dataset {dataset.name!r} already has a {what} named {name!r}",
                code="name_taken",
                status=409,
            )


@contextmanager
def _new_model(dataset: Dataset, name: str, source: str, config: dict) -> Iterator[RetrievalModel]:
    """One transaction writing the model ``name`` and what the block adds (its embeddings or
    run): a name another upload took meanwhile is refused as :func:`check_name_free` refuses
    it, not by the unique index."""
    try:
        with transaction.atomic():
            yield RetrievalModel.objects.create(
                dataset=dataset, name=name, source=source, config=config
            )
    except IntegrityError:
        check_name_free(dataset, name)
        raise


def known_pks(index: KeyIndex, keys: list[str], file_name: str, what: str) -> np.ndarray:
    """Primary keys for ``keys``; the first unknown key is an error naming its line."""
    pks = [index.by_key.get(key) for key in keys]
    if None in pks:
        line = pks.index(None) + 1
        raise FormatError(
            file_name, line, "id", f"unknown {what} {keys[line - 1]!r} in this dataset"
        )
    return np.array(pks, dtype=np.int64)


def register_embeddings(dataset: Dataset, name: str, directory: Path) -> RetrievalModel:
    """Register uploaded caption/video embeddings (see :mod:`retrieval.formats.embeddings`)."""
    check_name_free(dataset, name)
    uploaded = embeddings_format.read_embeddings(Path(directory))
    caption_pks = known_pks(
        KeyIndex.captions(dataset), uploaded.caption_keys, "caption_ids.txt", "caption"
    )
    video_pks = known_pks(KeyIndex.videos(dataset), uploaded.video_keys, "video_ids.txt", "video")
    config = {"dim": int(uploaded.captions.shape[1]), "uploaded_from": str(directory)}
    with _new_model(dataset, name, RetrievalModel.Source.EMBEDDINGS, config) as model:
        save_embeddings(
            model, StoredEmbeddings(caption_pks, uploaded.captions, video_pks, uploaded.videos)
        )
    return model


def register_run_file(
    dataset: Dataset, name: str, path: Path, *, shown_as: str | None = None
) -> RetrievalModel:
    """Register a model known only by its TREC run (ranked by trec_eval's rule); ``shown_as``
    names the file in errors and the config instead of ``path`` (an upload's own name)."""
    check_name_free(dataset, name)
    try:
        parsed = trec.read_run(Path(path))
    except FormatError as exc:
        if shown_as is None:
            raise
        raise FormatError(shown_as, exc.line, exc.field, exc.message, where=exc.where) from None
    captions = KeyIndex.captions(dataset)
    videos = KeyIndex.videos(dataset)
    file_name = shown_as or Path(path).name
    query_keys = list(parsed.rankings)
    unknown = [key for key in query_keys if key not in captions.by_key]
    if unknown:
        raise FormatError(
            file_name, None, "qid", f"unknown caption key {unknown[0]!r} ({len(unknown)} unknown)"
        )
    depth = max((len(r) for r in parsed.rankings.values()), default=0)
    position = {key: i for i, key in enumerate(videos.keys)}
    try:
        doc_index, scores = trec.to_arrays(parsed.rankings, query_keys, position, depth)
    except KeyError as exc:
        raise FormatError(file_name, None, "docno", str(exc.args[0])) from None
    item_ids = np.where(doc_index < 0, -1, videos.pks[np.where(doc_index < 0, 0, doc_index)])
    query_ids = np.array([captions.by_key[key] for key in query_keys], dtype=np.int64)
    lists = RankedLists(query_ids, item_ids, np.nan_to_num(scores, nan=-np.inf))
    config = {"run_file": shown_as or str(path), "run_id": parsed.run_id}
    with _new_model(dataset, name, RetrievalModel.Source.RUN, config) as model:
        store_run(
            model, name, lists, videos=videos, metadata={"source": "trec", "run_id": parsed.run_id}
        )
    return model

"""Store, load, import and merge label sets: judged relevance that re-scoring reads.

An import resolves a file's keys (FIRE JSON: caption texts) against one dataset and writes
one :class:`~retrieval.models.LabelSet` in a transaction, so a bad file changes nothing; an
unknown key is an error with its line, while FIRE queries that match no caption are skipped
and reported. A dataset's default set (its report's) is an explicit choice
(:func:`make_default`); a new set becomes it only when the dataset has none, and a
replacement keeps its place.
"""

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import transaction

from config.batches import rows_in
from config.errors import UserError
from jobs import runner
from retrieval.datasets.names import check_name, derived_name
from retrieval.formats import fire_json, labels, trec
from retrieval.formats.records import FormatError
from retrieval.label_sets import judged
from retrieval.label_sets import status as label_status
from retrieval.label_sets.judged import Judged
from retrieval.models import Caption, Dataset, LabelSet
from retrieval.scoring.estimation import PoolState
from retrieval.search.runs_service import KeyIndex

IMPORT_FORMATS = ("qrels", "fire-json", "jsonl", "csv", "raw")
TEXT_CHUNK = 500
"""Caption texts looked up per query: SQLite limits the parameters of one statement."""


class LabelSetError(UserError):
    """The label set cannot be made as asked; nothing was written."""


@dataclass
class ImportReport:
    """What an import made, and what in the file matched nothing."""

    label_set: LabelSet
    read: int
    unmatched_queries: list[str] = field(default_factory=list)
    unmatched_videos: list[str] = field(default_factory=list)
    skipped: int = 0

    def as_dict(self) -> dict:
        return {
            "label_set": self.label_set.name,
            "dataset": self.label_set.dataset.name,
            "read": self.read,
            "pairs": self.label_set.pair_count,
            **{name: getattr(self.label_set, f"{name}_count") for name in judged.LABEL_CODES},
            "skipped": self.skipped,
            "unmatched_queries": self.unmatched_queries,
            "unmatched_videos": self.unmatched_videos,
        }


def load_judged(label_set: LabelSet) -> Judged:
    """The label set's pairs as arrays of caption and video primary keys."""
    return Judged.from_bytes(label_set.arrays)


def load_pool_state(label_set: LabelSet) -> PoolState | None:
    """What the label set knows of its pool's unjudged and sampled pairs (campaign sets)."""
    return PoolState.from_bytes(label_set.arrays)


WARM_JOB = "label-set-figures"
"""The job that computes a new label set's stored figures
(:mod:`retrieval.label_sets.figures`)."""


def store_label_set(
    dataset: Dataset,
    name: str,
    pairs: Judged,
    *,
    source: str,
    description: str = "",
    metadata: dict | None = None,
    replace: bool = False,
    pool_state: PoolState | None = None,
    parent: LabelSet | None = None,
) -> LabelSet:
    """Save ``pairs`` as the label set ``name`` (replacing one only if asked; with ``parent``
    its next version), the dataset's default when it has none."""
    check_name(name, "label set")
    counts = pairs.counts()
    with transaction.atomic():
        Dataset.objects.select_for_update().filter(pk=dataset.pk).first()  # one writer at a time
        existing = LabelSet.objects.filter(dataset=dataset, name=name)
        if existing.exists():
            if not replace:
                raise LabelSetError(
                    f"dataset {dataset.name!r} already has a label set named {name!r} "
                    "(choose another name, or replace it)"
                )
            existing.delete()
        made = LabelSet.objects.create(
            is_default=not LabelSet.objects.filter(dataset=dataset, is_default=True).exists(),
            dataset=dataset,
            name=name,
            source=source,
            description=description,
            pair_count=len(pairs),
            **{f"{kind}_count": count for kind, count in counts.items()},
            arrays=pairs.to_bytes(**(pool_state.arrays() if pool_state else {})),
            metadata=metadata or {},
            parent=parent,
            version=1 if parent is None else parent.version + 1,
        )
        if settings.FIREPOOL_WARM_FIGURES:
            # Its leaderboard and report are computed once, now, not by a page view.
            fields = {"dataset": dataset.name, "labels": made.name}
            transaction.on_commit(lambda: runner.submit(WARM_JOB, fields))
        return made


def check_rename(label_set: LabelSet, name: str) -> str:
    """The new name of ``label_set``, if the name rule allows it and no other set of its
    dataset has it."""
    check_name(name, "label set")
    clash = LabelSet.objects.filter(dataset_id=label_set.dataset_id, name=name)
    if clash.exclude(pk=label_set.pk).exists():
        raise LabelSetError(f"dataset {label_set.dataset.name!r} already has a label set {name!r}")
    return name


def make_default(label_set: LabelSet) -> None:
    """Make ``label_set`` the one its dataset's report uses when no set is named."""
    with transaction.atomic():
        LabelSet.objects.filter(dataset_id=label_set.dataset_id, is_default=True).exclude(
            pk=label_set.pk
        ).update(is_default=False)
        LabelSet.objects.filter(pk=label_set.pk).update(is_default=True)
    label_set.is_default = True


def choose_default(dataset: Dataset, name: str) -> LabelSet:
    """Make ``dataset``'s label set called ``name`` the default its report and leaderboard
    use (:func:`make_default`); LabelSetError, writing nothing, when it has no such set."""
    found = LabelSet.objects.filter(dataset=dataset, name=name).defer("arrays").first()
    if found is None:
        known = LabelSet.objects.filter(dataset=dataset).order_by("name")
        names = ", ".join(known.values_list("name", flat=True)) or "none"
        raise LabelSetError(
            f"dataset {dataset.name!r} has no label set named {str(name)[:100]!r} (known: {names})"
        )
    make_default(found)
    return found


def default_label_set(label_sets: Iterable[LabelSet]) -> LabelSet | None:
    """The default among one dataset's label sets, or None when it has none."""
    return next((s for s in label_sets if s.is_default), None)


@dataclass(frozen=True)
class Dependant:
    """Something that relies on a label set, in words, for the admin's delete confirmation."""

    label_set: str
    what: str


def dependants(label_sets: Iterable[LabelSet]) -> list[Dependant]:
    """What relies on each label set: its dataset's report (if the default), its campaign
    (named in ``metadata``: this app does not import the annotation app)."""
    found = []
    for label_set in label_sets:
        if label_set.is_default:
            found.append(
                Dependant(
                    str(label_set),
                    f"the report of dataset {label_set.dataset.name!r} uses it by default; "
                    "without it the report shows original positives only until another "
                    "set is made the default",
                )
            )
        if (campaign_id := label_set.metadata.get("campaign_id")) is not None:
            campaign = label_set.metadata.get("campaign", "")
            found.append(
                Dependant(
                    str(label_set),
                    f"campaign {campaign!r} (id {campaign_id}) was resolved into it; "
                    "resolve the campaign again to make a new one",
                )
            )
    return found


def merge_label_sets(
    dataset: Dataset, sources: Sequence[LabelSet], name: str, *, replace: bool = False
) -> LabelSet:
    """A new label set holding the union of ``sources``; later sets win where they overlap."""
    if not sources:
        raise LabelSetError("name at least one label set to merge")
    for source in sources:
        if source.dataset_id != dataset.pk:
            raise LabelSetError(f"label set {source.name!r} is not on dataset {dataset.name!r}")
    merged = judged.merge([load_judged(source) for source in sources])
    return store_label_set(
        dataset,
        name,
        merged,
        source=LabelSet.Source.MERGE,
        description="Merged from " + ", ".join(source.name for source in sources),
        metadata={"merged": [source.name for source in sources]},
        replace=replace,
    )


def version_name(base: LabelSet, suffix: str) -> str:
    """A name for the next version of ``base``: its family's name and the version number
    ("truth v2"); ``suffix`` (a campaign's name, say) is added when another set of the
    dataset already holds that name."""
    family = base.name if base.parent_id is None else base.name.removesuffix(f" v{base.version}")
    name = f"{family} v{base.version + 1}"
    if LabelSet.objects.filter(dataset_id=base.dataset_id, name=name).exists():
        name = f"{name} ({suffix})"
    return derived_name(name)


def extend_label_set(
    base: LabelSet,
    added: Judged,
    name: str,
    *,
    source: str,
    description: str = "",
    metadata: dict | None = None,
    replace: bool = False,
) -> LabelSet:
    """A new version of ``base``: its pairs plus ``added`` (which wins where both judge a
    pair). ``base`` itself is left as it was; the new set records it as its parent."""
    later = LabelSet.objects.filter(dataset_id=base.dataset_id, name=name, versions__isnull=False)
    if replace and later.exists():
        raise LabelSetError(
            f"label set {name!r} has later versions; it is kept as it is (choose another name)"
        )
    merged = judged.merge([load_judged(base), added])
    return store_label_set(
        base.dataset,
        name,
        merged,
        source=source,
        description=description,
        metadata={**(metadata or {}), "parent": base.name, "parent_id": base.pk},
        replace=replace,
        parent=base,
    )


def lineage(label_set: LabelSet, label_sets: Sequence[LabelSet]) -> list[LabelSet]:
    """``label_set``'s family among ``label_sets``: its ancestors, itself and every set made
    from any of them, oldest version first (what the leaderboard's version picker lists)."""
    by_id = {s.pk: s for s in label_sets}
    root = label_set
    seen = {root.pk}
    while root.parent_id in by_id and root.parent_id not in seen:
        root = by_id[root.parent_id]
        seen.add(root.pk)
    family, frontier = {root.pk}, [root.pk]
    while frontier:
        children = [s.pk for s in label_sets if s.parent_id in frontier and s.pk not in family]
        family.update(children)
        frontier = children
    return sorted((by_id[pk] for pk in family), key=lambda s: (s.version, s.created_at, s.pk))


def import_label_file(
    dataset: Dataset,
    path: Path | str,
    fmt: str,
    name: str | None = None,
    *,
    replace: bool = False,
    duplicates: str | None = None,
) -> ImportReport:
    """Read a label file of format ``fmt`` and store it as a label set of ``dataset``;
    ``duplicates``: see :func:`retrieval.formats.labels.read_raw_jsonl`. Raises
    :class:`~retrieval.formats.records.FormatError` or :class:`LabelSetError`, writing nothing.
    """
    path = Path(path)
    if fmt not in IMPORT_FORMATS:
        raise LabelSetError(f"unknown format {fmt!r} (choose from {', '.join(IMPORT_FORMATS)})")
    if duplicates is not None and (fmt != "raw" or duplicates not in labels.DUPLICATES):
        raise LabelSetError(
            f"duplicates={duplicates!r} applies to raw files only, as one of "
            f"{', '.join(labels.DUPLICATES)}"
        )
    name = check_name(name or path.stem, "label set")
    videos = KeyIndex.videos(dataset)
    find = _key_finder(path, KeyIndex.captions(dataset), videos)
    report_extra: dict = {}
    if fmt == "qrels":
        pairs, read, report_extra["skipped"] = _from_qrels(path, find)
    elif fmt in ("jsonl", "csv"):
        records = labels.read_jsonl(path) if fmt == "jsonl" else labels.read_csv(path)
        pairs, read = _from_records(path, records, find)
    elif fmt == "raw":
        pairs, read = _from_raw(path, labels.read_raw_jsonl(path, duplicates), find)
    else:
        pairs, read, unmatched = _from_fire_json(path, dataset, videos)
        report_extra.update(unmatched)
    if len(pairs) == 0:
        raise FormatError(path, None, None, "no label in the file matches the dataset")
    label_set = store_label_set(
        dataset,
        name,
        pairs,
        source=fmt,
        description=f"Imported from {path.name}",
        metadata={"file": path.name, "format": fmt, "read": read},
        replace=replace,
    )
    return ImportReport(label_set, read, **report_extra)


Find = Callable[[str, str, int, str], int]
"""``find(what, key, line, field)``: the primary key of the caption or video with ``key``."""


def _key_finder(path: Path, captions: KeyIndex, videos: KeyIndex) -> Find:
    """Caption and video keys to primary keys, with errors that name the file, line and field."""
    index = {"caption": captions.by_key, "video": videos.by_key}

    def find(what: str, key: str, line: int, field_name: str) -> int:
        try:
            return index[what][key]
        except KeyError:
            message = f"no {what} with key {key!r} in the dataset"
            raise FormatError(path, line, field_name, message) from None

    return find


def _build(path: Path, *columns: Sequence) -> Judged:
    try:
        return Judged.build(*columns)
    except ValueError as exc:
        raise FormatError(path, None, None, str(exc)) from None


def _from_qrels(path: Path, find: Find) -> tuple[Judged, int, int]:
    """Positive rel is relevant, 0 judged irrelevant; negative rel (unjudged) is skipped."""
    rows = []
    seen: set[tuple[str, str]] = set()
    for line, qid, docno, rel in trec.iter_qrels(path):
        if (qid, docno) in seen:
            raise FormatError(path, line, "docno", f"{docno!r} is listed twice for qid {qid!r}")
        seen.add((qid, docno))
        caption = find("caption", qid, line, "qid")
        video = find("video", docno, line, "docno")
        if rel >= 0:
            rows.append((caption, video, judged.RELEVANT if rel > 0 else judged.IRRELEVANT))
    if not seen:
        raise FormatError(path, None, None, "no qrels lines (empty, or only blanks and comments)")
    columns = zip(*rows, strict=True) if rows else ((),) * 3
    return _build(path, *columns), len(seen), len(seen) - len(rows)


def _from_records(
    path: Path, records: Iterable[labels.LabelRecord], find: Find
) -> tuple[Judged, int]:
    rows = [
        (
            find("caption", record.caption_key, record.line, "caption_key"),
            find("video", record.video_key, record.line, "video_key"),
            record.label,
            record.votes,
            record.adjudicated,
            np.nan if record.confidence is None else record.confidence,
        )
        for record in records
    ]
    *columns, confidence = zip(*rows, strict=True) if rows else ((),) * 6
    # A file without confidences (any file but a model-based resolution's) stores none.
    known = bool(rows) and not np.isnan(confidence).all()
    return _build(path, *columns, confidence if known else None), len(rows)


def _from_raw(path: Path, records: Iterable[labels.RawLabel], find: Find) -> tuple[Judged, int]:
    """Individual labels, resolved per pair by strict majority (a tie is a disagreement)."""
    rows = [
        (
            find("caption", record.caption_key, record.line, "caption_id"),
            find("video", record.video_key, record.line, "video_id"),
            record.label,
        )
        for record in records
    ]
    if not rows:
        raise FormatError(path, None, None, "no labels in the file")
    labelled = np.array(rows, dtype=np.int64)
    pairs, of = np.unique(labelled[:, :2], axis=0, return_inverse=True)
    total = np.bincount(of.ravel())
    relevant = np.bincount(of.ravel(), weights=labelled[:, 2]).astype(np.int64)
    resolved = label_status.majority(relevant, total)
    return _build(path, pairs[:, 0], pairs[:, 1], resolved, total), len(rows)


def _from_fire_json(
    path: Path, dataset: Dataset, videos: KeyIndex
) -> tuple[Judged, int, dict[str, list[str]]]:
    """FIRE entries keyed by caption text: each labels the query captions with that exact
    text (FIRE judged queries), or failing those every caption with it."""
    document = fire_json.read_fire_json(path)
    entries = [*document.annotations, *document.disagreements]
    texts = list({entry.query: None for entry in entries})
    by_text: dict[str, list[int]] = defaultdict(list)
    query_by_text: dict[str, list[int]] = defaultdict(list)
    captions = Caption.objects.filter(dataset=dataset).values_list("pk", "text", "is_query")
    for pk, text, is_query in rows_in(captions, "text", texts, TEXT_CHUNK):
        by_text[text].append(pk)
        if is_query:
            query_by_text[text].append(pk)
    rows = []
    queries: dict[str, None] = {}  # unmatched, in file order
    video_keys: dict[str, None] = {}
    for entry in entries:
        matches = query_by_text.get(entry.query) or by_text.get(entry.query)
        video = videos.by_key.get(entry.video_id)
        if not matches:
            queries[entry.query] = None
        if video is None:
            video_keys[entry.video_id] = None
        if matches and video is not None:
            label = judged.DISAGREEMENT if entry.label is None else entry.label
            rows += [(caption, video, label, len(entry.annotator_labels)) for caption in matches]
    columns = zip(*rows, strict=True) if rows else ((),) * 4
    unmatched = {"unmatched_queries": list(queries), "unmatched_videos": list(video_keys)}
    return _build(path, *columns), len(entries), unmatched

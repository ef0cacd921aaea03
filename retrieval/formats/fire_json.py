"""The FIRE release layout: one JSON document of ``annotations`` and ``disagreements``.

FIRE (Rodriguez et al., "Fighting FIRE with FIRE: Assessing the Validity of Text-to-Video
Retrieval Benchmarks") re-annotated MSR-VTT and MSVD. Each entry pairs a caption's *text*
(``query``) with a video key, the annotators and their labels, response and queue ids and
the models that retrieved it; only annotations carry the agreed ``label``. Other top-level
keys are metadata. Errors are located as ``annotations[i]`` or ``disagreements[i]``.
"""

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from retrieval.formats.labels import Memo, json_number, json_string
from retrieval.formats.records import (
    FormatError,
    entry_reader,
    json_type,
    parse_key,
    parse_list,
    parse_optional_str,
    parse_probability,
    parse_text,
    read_json_document,
)
from retrieval.label_sets.judged import IRRELEVANT, LABEL_NAMES, RELEVANT

ANNOTATIONS = "annotations"
DISAGREEMENTS = "disagreements"
ARRAYS = (ANNOTATIONS, DISAGREEMENTS)
CHUNK_CHARS = 64 * 1024


@dataclass(frozen=True, slots=True)
class FireEntry:
    """One judged pair: ``label`` is 1 or 0 (None for a disagreement), ``annotator_labels``
    parallel to ``annotator_ids``. Not in FIRE's release, written only when set:
    ``auto_label`` (the proxy rule that labelled it) and ``confidence`` (a model-based
    resolution's probability of relevance, Dawid & Skene 1979). ``index`` locates errors."""

    query: str
    video_id: str
    label: int | None
    annotator_ids: tuple[str, ...] = ()
    annotator_labels: tuple[int, ...] = ()
    response_ids: tuple[str, ...] = ()
    queue_ids: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    dataset: str = ""
    auto_label: str = ""
    confidence: float | None = None
    index: int = field(default=0, compare=False)


@dataclass
class FireDocument:
    """A whole release file: its metadata (every other top-level key) and both arrays."""

    metadata: dict
    annotations: list[FireEntry]
    disagreements: list[FireEntry]


def read_fire_json(path: Path) -> FireDocument:
    """Parse a FIRE release file (both arrays present, not both empty); ids may be strings
    or integers and labels ``relevant``/``irrelevant``, booleans or 1/0, as the release varies."""
    document = read_json_document(path)
    if not isinstance(document, dict):
        raise FormatError(
            path, None, None, f"expected a JSON object with {ANNOTATIONS} and {DISAGREEMENTS}"
        )
    for name in ARRAYS:
        if name not in document:
            raise FormatError(path, None, name, "missing required array")
        if not isinstance(document[name], list):
            raise FormatError(path, None, name, f"expected a list, got {json_type(document[name])}")
    if not document[ANNOTATIONS] and not document[DISAGREEMENTS]:
        raise FormatError(path, None, None, "no annotations: both arrays are empty")
    return FireDocument(
        {key: value for key, value in document.items() if key not in ARRAYS},
        *(
            [_entry(path, name, index, values) for index, values in enumerate(document[name])]
            for name in ARRAYS
        ),
    )


def _entry(path: Path, array: str, index: int, values: object) -> FireEntry:
    """Validate one entry of ``array``; only annotations read a ``label``."""
    where = f"{array}[{{}}]"
    required = ("query", "video_id", "label") if array == ANNOTATIONS else ("query", "video_id")
    parse = entry_reader(path, index, values, required, where=where)
    annotator_ids = parse("annotator_ids", _key_list)
    annotator_labels = parse("annotator_labels", _label_list)
    both = "annotator_ids" in values and "annotator_labels" in values
    if both and len(annotator_ids) != len(annotator_labels):
        message = f"{len(annotator_labels)} labels for {len(annotator_ids)} annotator_ids"
        raise FormatError(path, index, "annotator_labels", message, where=where)
    return FireEntry(
        query=parse("query", parse_text),
        video_id=parse("video_id", parse_key),
        label=parse("label", parse_fire_label) if array == ANNOTATIONS else None,
        annotator_ids=annotator_ids,
        annotator_labels=annotator_labels,
        response_ids=parse("response_ids", _key_list),
        queue_ids=parse("queue_ids", _key_list),
        models=parse("models", _key_list),
        dataset=parse("dataset", parse_optional_str),
        auto_label=parse("auto_label", parse_optional_str),
        confidence=parse("confidence", parse_probability),
        index=index,
    )


def parse_fire_label(value: object) -> int:
    """A relevant/irrelevant label given as its name, a boolean or 1/0."""
    if isinstance(value, bool):
        return RELEVANT if value else IRRELEVANT
    if isinstance(value, int) and value in (RELEVANT, IRRELEVANT):
        return value
    if isinstance(value, str):
        if value.strip().lower() in _CODES:
            return _CODES[value.strip().lower()]
        raise ValueError(f"unknown label {value.strip()!r}; expected 'relevant' or 'irrelevant'")
    raise ValueError(f"expected 'relevant' or 'irrelevant', got {json_type(value)} {value!r}")


_CODES = {LABEL_NAMES[code]: code for code in (RELEVANT, IRRELEVANT)}
_key_list = partial(parse_list, parse=parse_key)
"""A list of ids or names, each a string or an integer; missing means empty."""
_label_list = partial(parse_list, parse=parse_fire_label)


def entry_dict(entry: FireEntry) -> dict:
    """One entry in the release layout; ``label`` is left out for a disagreement."""
    for code in (entry.label, *entry.annotator_labels):
        if code is not None and code not in (RELEVANT, IRRELEVANT):
            raise ValueError(f"entry ({entry.query!r}, {entry.video_id!r}): bad label {code!r}")
    values: dict = {"annotator_ids": list(entry.annotator_ids)}
    if entry.label is not None:
        values["label"] = LABEL_NAMES[entry.label]
    values.update(
        video_id=entry.video_id,
        query=entry.query,
        annotator_labels=[LABEL_NAMES[code] for code in entry.annotator_labels],
        response_ids=list(entry.response_ids),
        queue_ids=list(entry.queue_ids),
        models=list(entry.models),
        dataset=entry.dataset,
    )
    if entry.auto_label:
        values["auto_label"] = entry.auto_label
    if entry.confidence is not None:
        values["confidence"] = entry.confidence
    return values


def fire_json_chunks(
    metadata: Mapping[str, object],
    annotations: Iterable[FireEntry],
    disagreements: Iterable[FireEntry],
) -> Iterator[str]:
    """Stream a release document (metadata keys, then both arrays, an entry a line) in
    chunks of about ``CHUNK_CHARS``, never holding all entries; an annotation without a
    label, or a disagreement with one, raises ValueError."""

    def lines(name: str, entries: Iterable[FireEntry]) -> Iterator[str]:
        for entry in entries:
            _check_array(name, entry.label, entry.query, entry.video_id)
            yield json.dumps(entry_dict(entry), ensure_ascii=False)

    return _document(metadata, lines(ANNOTATIONS, annotations), lines(DISAGREEMENTS, disagreements))


def _check_array(name: str, label: int | None, query: str, video_id: str) -> None:
    """An annotation needs a label and a disagreement has none (ValueError otherwise)."""
    if (label is None) == (name == ANNOTATIONS):
        raise ValueError(
            f"entry ({query!r}, {video_id!r}) in {name}: "
            + ("an annotation needs a label" if name == ANNOTATIONS else "has a label")
        )


def _document(
    metadata: Mapping[str, object], annotations: Iterable[str], disagreements: Iterable[str]
) -> Iterator[str]:
    """The document's text from its metadata and each array's encoded entries, in chunks."""
    for name in ARRAYS:
        if name in metadata:
            raise ValueError(f"metadata may not hold the {name!r} key")
    header = "".join(
        f"{json.dumps(str(key))}: {json.dumps(value, ensure_ascii=False)},\n"
        for key, value in metadata.items()
    )
    pending = ["{" + header]
    size = len(pending[0])
    for name, entries in ((ANNOTATIONS, annotations), (DISAGREEMENTS, disagreements)):
        pending.append(f'"{name}": [')
        separator = "\n"
        for entry in entries:
            line = separator + entry
            separator = ",\n"
            pending.append(line)
            size += len(line)
            if size >= CHUNK_CHARS:
                yield "".join(pending)
                pending.clear()
                size = 0
        pending.append("\n],\n" if name == ANNOTATIONS else "\n]}\n")
    yield "".join(pending)


EntryLine = tuple
"""One entry for :func:`fire_json_row_chunks`: (query, video id, label code or None,
annotator ids, annotator label codes, response ids, queue id, ranks (one per run, 0: not
retrieved), auto label, confidence or None); written as the :class:`FireEntry` with that
queue id, the runs that retrieved it as ``models`` and the given ``dataset``."""


def fire_json_row_chunks(
    metadata: Mapping[str, object],
    annotations: Iterable[EntryLine],
    disagreements: Iterable[EntryLine],
    run_names: Sequence[str],
    dataset: str,
) -> Iterator[str]:
    """:func:`fire_json_chunks` for plain rows (:data:`EntryLine`), byte for byte, each
    distinct string and list encoded once (a ``json.dumps`` per entry cost 2.5 s of a 12 s
    FIRE-scale export): the campaign export's writer."""

    encoded = Memo(json_string)
    names = list(run_names)
    models = Memo(
        lambda ranks: ", ".join(
            encoded[run] for run, rank in zip(names, ranks, strict=True) if rank
        )
    )
    people = Memo(lambda annotators: ", ".join([encoded[a] for a in annotators]))
    verdicts: dict[tuple, str] = {}
    labels = {code: json_string(LABEL_NAMES[code]) for code in (RELEVANT, IRRELEVANT)}
    tail = f'], "dataset": {json_string(dataset)}'

    def lines(name: str, rows: Iterable[EntryLine]) -> Iterator[str]:
        for row in rows:
            query, video_id, label, annotators, codes, responses, queue_id, ranks, auto = row[:9]
            _check_array(name, label, query, video_id)
            if label is None:
                verdict = ""
            elif label in labels:
                verdict = f', "label": {labels[label]}'
            else:
                raise ValueError(f"entry ({query!r}, {video_id!r}): bad label {label!r}")
            said = verdicts.get(codes)
            if said is None:
                for code in codes:
                    if code not in labels:
                        raise ValueError(f"entry ({query!r}, {video_id!r}): bad label {code!r}")
                said = verdicts[codes] = ", ".join([labels[code] for code in codes])
            retrieved = models[ranks]
            # queue ids are the pairs' ids: digits need no escaping
            plain = queue_id.__class__ is str and queue_id.isdigit()
            queue = f'"{queue_id}"' if plain else json_string(queue_id)
            line = (
                f'{{"annotator_ids": [{people[annotators]}]{verdict}, '
                f'"video_id": {encoded[video_id]}, "query": {encoded[query]}, '
                f'"annotator_labels": [{said}], '
                f'"response_ids": [{_json_strings(responses)}], '
                f'"queue_ids": [{queue}], "models": [{retrieved}{tail}'
            )
            if auto:
                line += f', "auto_label": {encoded[auto]}'
            confidence = row[9]
            if confidence is not None:
                line += f', "confidence": {json_number(confidence)}'
            yield line + "}"

    return _document(metadata, lines(ANNOTATIONS, annotations), lines(DISAGREEMENTS, disagreements))


def _json_strings(texts: tuple) -> str:
    """``", ".join(json_string(t) for t in texts)``, checked for escapes all at once: the
    response ids are UUIDs, which never need any, and a :func:`json_string` per id cost
    0.85 s of a 7 s profiled FIRE JSON export at FIRE's 679,000 labels."""
    if not texts:
        return ""
    try:
        joined = "".join(texts)
    except TypeError:  # not all text: each its own way
        joined = None
    if joined is not None and joined.isprintable() and '"' not in joined and "\\" not in joined:
        return '"' + '", "'.join(texts) + '"'
    return ", ".join([json_string(text) for text in texts])

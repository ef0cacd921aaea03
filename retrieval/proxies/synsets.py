"""Synset (class) sets of each caption's verbs and nouns, for the SYN proxy (Wray et al., CVPR 2021,
§4.4 Eq. 8): the dataset's own classes (EPIC-KITCHENS), else a class file (``id,key, instances``),
else WordNet 3.0 with Lesk; an unknown lemma stands for itself."""

from __future__ import annotations

import ast
import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from config.errors import UserError
from retrieval.formats.records import FormatError, check_size

from .captions import PARTS_OF_SPEECH, CaptionTerms

WORDNET_POS = {"verb": "v", "noun": "n"}


class ClassFileError(UserError):
    """A class file that cannot be read; the message names file, line and field."""


@dataclass(frozen=True)
class ClassMap:
    """Word -> class id for one part of speech, read from a class file."""

    path: str
    classes: Mapping[str, str]

    def lookup(self, lemma: str) -> str | None:
        return self.classes.get(lemma)


def read_class_file(path: Path) -> ClassMap:
    """Read an ``id,key,instances`` CSV; every instance (and the key) maps to the id. EPIC's
    ``head:modifier`` instances also map ``modifier head`` and, unless claimed, ``head``. Any
    problem (size included) is a :class:`ClassFileError` naming file, line and field."""
    classes: dict[str, str] = {}
    heads: dict[str, str] = {}
    try:
        check_size(path)
        text = Path(path).read_text(encoding="utf-8-sig")
    except FormatError as exc:
        raise ClassFileError(str(exc)) from None
    except OSError as exc:
        raise ClassFileError(f"{path}: cannot read the class file ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        line = exc.object.count(b"\n", 0, exc.start) + 1
        raise ClassFileError(f"{path}, line {line}: not UTF-8 text") from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise ClassFileError(f"{path}, line {line}: NUL character (a binary or UTF-16 file?)")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        missing = {"id", "key"} - set(reader.fieldnames or ())
        if missing:
            raise ClassFileError(
                f"{path}, line 1: missing column(s) {', '.join(sorted(missing))} "
                "(expected id,key,instances)"
            )
        for row in reader:
            _add_row(path, reader.line_num, row, classes, heads)
    except csv.Error as exc:
        raise ClassFileError(f"{path}, line {reader.line_num}: invalid CSV ({exc})") from None
    for head, class_id in heads.items():
        classes.setdefault(head, class_id)
    return ClassMap(str(path), classes)


def _add_row(
    path: Path, line: int, row: Mapping, classes: dict[str, str], heads: dict[str, str]
) -> None:
    """Map the words of one class-file row to its class id."""
    class_id = _cell(row, "id")
    if not class_id:
        raise ClassFileError(f"{path}, line {line}, field id: empty class id")
    words = [_cell(row, "key")]
    raw = _cell(row, "instances")
    if raw:
        try:  # a cell too long to be a list of words, or one that is no literal, is refused
            parsed = ast.literal_eval(raw) if len(raw) <= 10_000 else None
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            parsed = None
        if not isinstance(parsed, list | tuple | set):
            raise ClassFileError(
                f"{path}, line {line}, field instances: expected a list such as "
                f"['put', 'place'], got {raw[:60]!r}"
            )
        words.extend(str(word).strip() for word in parsed)
    for word in words:
        word = word.lower()
        if not word:
            continue
        classes.setdefault(word, class_id)
        if ":" in word:
            head, *modifiers = word.split(":")
            classes.setdefault(" ".join([*reversed(modifiers), head]), class_id)
            heads.setdefault(head, class_id)


def _cell(row: Mapping, name: str) -> str:
    """A cell's stripped text; DictReader gives None for short rows and lists for extras."""
    value = row.get(name)
    return value.strip() if isinstance(value, str) else ""


class LeskSynsets:
    """WordNet synset of a lemma in its caption by the simplified Lesk of NLTK's ``lesk`` (most
    definition words shared, first on a tie), cached by lemma, part of speech and the context words
    that can matter."""

    def __init__(self) -> None:
        from nltk.corpus import wordnet

        self.wordnet = wordnet
        self._candidates: dict[tuple[str, str], tuple[list[str], list[frozenset[str]]]] = {}
        self._vocabulary: dict[tuple[str, str], frozenset[str]] = {}
        self._senses: dict[tuple[str, str, frozenset[str]], str | None] = {}

    def _candidates_of(self, lemma: str, pos: str) -> tuple[list[str], list[frozenset[str]]]:
        key = (lemma, pos)
        if key not in self._candidates:
            synsets = [s for s in self.wordnet.synsets(lemma) if str(s.pos()) == pos]
            definitions = [frozenset(s.definition().split()) for s in synsets]
            self._candidates[key] = ([s.name() for s in synsets], definitions)
            self._vocabulary[key] = frozenset().union(*definitions)
        return self._candidates[key]

    def sense(self, lemma: str, pos: str, context: Iterable[str]) -> str | None:
        """Name of the chosen synset (e.g. ``put.v.01``), or None when WordNet lacks it."""
        names, definitions = self._candidates_of(lemma, pos)
        if not names:
            return None
        relevant = self._vocabulary[(lemma, pos)].intersection(context)
        key = (lemma, pos, relevant)
        if key not in self._senses:
            overlaps = [len(relevant & words) for words in definitions]
            self._senses[key] = names[overlaps.index(max(overlaps))]
        return self._senses[key]


def caption_synsets(
    terms: Sequence[CaptionTerms],
    *,
    dataset_classes: Sequence[Mapping[str, Sequence]] | None = None,
    class_maps: Mapping[str, ClassMap] | None = None,
) -> dict[str, list[frozenset[str]]]:
    """Per part of speech, each caption's set of synset/class ids: ``dataset_classes`` when given,
    else the part's class file in ``class_maps``, else WordNet with Lesk; ids are prefixed by source
    (``class:``, ``file:``, ``wn:``, ``word:``) so sources never collide."""
    out: dict[str, list[frozenset[str]]] = {}
    lesk: LeskSynsets | None = None
    for part in PARTS_OF_SPEECH:
        if dataset_classes is not None:
            field = f"{part}_classes"
            out[part] = [
                frozenset(f"class:{value}" for value in (meta.get(field) or ()))
                for meta in dataset_classes
            ]
            continue
        class_map = (class_maps or {}).get(part)
        sets: list[frozenset[str]] = []
        for caption in terms:
            ids: set[str] = set()
            for lemma in caption.part(part):
                if class_map is not None:
                    found = class_map.lookup(lemma)
                    ids.add(f"file:{found}" if found is not None else f"word:{lemma}")
                    continue
                if lesk is None:
                    lesk = LeskSynsets()
                sense = lesk.sense(lemma, WORDNET_POS[part], caption.tokens)
                ids.add(f"wn:{sense}" if sense is not None else f"word:{lemma}")
            sets.append(frozenset(ids))
        out[part] = sets
    return out

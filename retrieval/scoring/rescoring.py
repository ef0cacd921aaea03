"""Pure: re-score runs under several positive sets (FIRE §2.1, §4, Tables 1 and 4) as arrays.

Every run is a matrix of ranked item ids per query row (-1 padding), rows shared by all
runs and by the qrels. The positive sets are:

- original: each query caption's own video (how MSR-VTT and MSVD score);
- corrected: the original positives plus every pair a label set judges relevant, with the
  pairs it judges irrelevant kept as judged negatives (for Judged@K and bpref);
- leave-one-run-out: the corrected set minus the judged positives that only that run's
  own pooled pairs contributed (FIRE Table 4 "New": what a new, unpooled model faces);
- true: exhaustive relevance, on synthetic datasets only, to show what pooling misses.

Nothing here touches the database: the file mode of ``rescore`` calls it directly, and
:mod:`retrieval.scoring.rescoring_service` gathers a dataset's arrays for it.
"""

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from retrieval.formats import trec
from retrieval.formats.records import FormatError
from retrieval.ids import PairKeys, contains
from retrieval.scoring import analysis, metrics, score_intervals


@dataclass(frozen=True)
class Qrels:
    """Judgements as arrays: query row, item id, relevance (> 0 relevant, 0 judged not relevant,
    < 0 pooled but unjudged, as trec_eval reads qrels)."""

    rows: np.ndarray
    items: np.ndarray
    rel: np.ndarray

    @classmethod
    def of(cls, rows: Iterable[int], items: Iterable[int], rel: Iterable[int]) -> "Qrels":
        return cls(_ints(rows), _ints(items), _ints(rel))

    def __len__(self) -> int:
        return len(self.rows)

    def union(self, other: "Qrels") -> "Qrels":
        """Both sets of judgements; where both judge a pair, ``other`` wins."""
        rows = np.concatenate([self.rows, other.rows])
        items = np.concatenate([self.items, other.items])
        rel = np.concatenate([self.rel, other.rel])
        order = np.lexsort((np.arange(len(rows)), items, rows))
        rows, items, rel = rows[order], items[order], rel[order]
        last = np.ones(len(rows), bool)
        if len(rows) > 1:
            last[:-1] = (rows[1:] != rows[:-1]) | (items[1:] != items[:-1])
        return Qrels(rows[last], items[last], rel[last])

    def without(self, drop: np.ndarray) -> "Qrels":
        """The judgements whose ``drop`` mask is False."""
        keep = ~np.asarray(drop, bool)
        return Qrels(self.rows[keep], self.items[keep], self.rel[keep])

    def positives_per_row(self, n_rows: int) -> np.ndarray:
        return np.bincount(self.rows[self.rel > 0], minlength=n_rows)


@dataclass
class Scores:
    """Per-query metric arrays and their means, for one run under one positive set."""

    per_query: dict[str, np.ndarray]
    means: dict[str, float]
    judgements: metrics.RankedJudgements


@dataclass
class Rescoring:
    """Every run scored under every positive set that could be built."""

    n_queries: int
    blocks: dict[str, dict[str, Scores]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    kinds: dict[str, dict] = field(default_factory=dict)
    """Run -> metric -> :class:`retrieval.scoring.estimation.Score` when the label set's campaign had
    unjudged pooled pairs: whether each corrected score is exact, bounds or an estimate."""
    interval_source: Callable[[], dict] | None = field(default=None, repr=False)
    """What computes :attr:`intervals` when the labels are not all certain (a label set's
    probabilities, unjudged pooled pairs): :func:`retrieval.scoring.score_intervals.score_intervals`
    with its arguments bound. None: every label certain, each interval the score itself."""
    _intervals: dict | None = field(default=None, init=False, repr=False)

    @property
    def intervals(self) -> dict[str, dict[str, score_intervals.ScoreInterval]]:
        """Run -> metric -> :class:`retrieval.scoring.score_intervals.ScoreInterval` of each corrected
        C@K, AP and nDCG@10, computed on first read: the Monte Carlo behind them costs more
        than the rest of a rescoring where every pair has a probability (Dawid-Skene), and
        most readers (reports, leaderboards) never ask (``bench/score_intervals_bench.py``)."""
        if self._intervals is None:
            if self.interval_source is not None:
                self._intervals = self.interval_source()
            else:
                self._intervals = {
                    run: score_intervals.exact_intervals(scores.means)
                    for run, scores in self.blocks.get("corrected", {}).items()
                }
        return self._intervals

    def means(self, block: str) -> dict[str, dict[str, float]]:
        return {run: scores.means for run, scores in self.blocks.get(block, {}).items()}

    def delta(self) -> dict[str, dict[str, float]]:
        """Corrected minus original, per run and metric (FIRE Table 1's "+ C")."""
        corrected, original = self.means("corrected"), self.means("original")
        return {
            run: {name: value - original[run][name] for name, value in corrected[run].items()}
            for run in corrected
            if run in original
        }

    def as_dict(self) -> dict:
        """JSON layout of ``rescore --format json``: ``runs`` is the corrected block."""
        result: dict = {"queries": self.n_queries, "runs": self.means("corrected")}
        if "original" in self.blocks:
            result["original"] = self.means("original")
            result["delta"] = self.delta()
        for extra in ("leave_one_out", "true"):
            if extra in self.blocks:
                result[extra] = self.means(extra)
        if self.kinds:
            result["kinds"] = {
                run: {metric: score.as_dict() for metric, score in scores.items()}
                for run, scores in self.kinds.items()
            }
        notes = list(self.notes)
        if self.intervals:
            result["intervals"] = {
                run: {metric: interval.as_dict() for metric, interval in intervals.items()}
                for run, intervals in self.intervals.items()
            }
            notes.append(score_intervals.NOTE)
        if notes:
            result["notes"] = notes
        return result


def score(item_ids: np.ndarray, qrels: Qrels, ks: Sequence[int] = metrics.DEFAULT_KS) -> Scores:
    """All metrics of one run (rows aligned with the qrels' rows)."""
    judgements = metrics.judgements_from_arrays(item_ids, qrels.rows, qrels.items, qrels.rel)
    per_query = metrics.evaluate(judgements, ks)
    return Scores(per_query, metrics.mean_scores(per_query, judgements.n_relevant), judgements)


def rescore(
    runs: Mapping[str, np.ndarray],
    corrected: Qrels,
    *,
    original: Qrels | None = None,
    true: Qrels | None = None,
    pooled: Mapping[str, np.ndarray] | None = None,
    pool_depth: int | None = None,
    ks: Sequence[int] = metrics.DEFAULT_KS,
) -> Rescoring:
    """Score ``runs`` under the corrected set and every other set that is given.

    ``pooled`` (the runs a campaign pooled, at ``pool_depth``) enables leave-one-run-out for
    the scored runs that were pooled; ``original`` gives FIRE Table 1's original scores.
    """
    n_queries = _row_count(runs, corrected)
    result = Rescoring(n_queries)
    result.blocks["corrected"] = {name: score(ids, corrected, ks) for name, ids in runs.items()}
    if original is not None:
        result.blocks["original"] = {name: score(ids, original, ks) for name, ids in runs.items()}
    if true is not None:
        result.blocks["true"] = {name: score(ids, true, ks) for name, ids in runs.items()}
    if pooled and pool_depth:
        masks = leave_one_out_qrels(corrected, original, pooled, pool_depth)
        result.blocks["leave_one_out"] = {
            name: score(ids, masks[name], ks) for name, ids in runs.items() if name in masks
        }
    elif pooled is not None:
        result.notes.append("leave-one-run-out needs the pool depth")
    return result


def leave_one_out_qrels(
    corrected: Qrels, original: Qrels | None, pooled: Mapping[str, np.ndarray], depth: int
) -> dict[str, Qrels]:
    """Per pooled run, the corrected qrels without the judged positives only it contributed.

    Original positives always stay (they need no pooling); judged negatives stay too, as
    they do not change any metric but Judged@K, where a run left out of the pool would
    indeed find its own pairs unjudged: so they go with the positives it alone contributed.
    """
    names = list(pooled)
    judged = np.ones(len(corrected), bool)
    if original is not None and len(original):
        judged = ~_contains(original.rows, original.items, corrected.rows, corrected.items)
    contrib = analysis.contributors(
        dict(pooled), depth, corrected.rows[judged], corrected.items[judged]
    )
    keep = analysis.leave_one_out_mask(contrib)
    masks = {}
    for column, name in enumerate(names):
        drop = np.zeros(len(corrected), bool)
        drop[np.flatnonzero(judged)[~keep[:, column]]] = True
        masks[name] = corrected.without(drop)
    return masks


def _contains(
    rows: np.ndarray, items: np.ndarray, query_rows: np.ndarray, query_items: np.ndarray
) -> np.ndarray:
    """Whether each (query_row, query_item) is among the (rows, items) pairs."""
    if len(rows) == 0:
        return np.zeros(len(query_rows), bool)
    n_rows = int(max(rows.max(), query_rows.max(initial=0))) + 1
    keys = PairKeys.fit(n_rows, items)
    return contains(np.sort(keys.pack(rows, items)), keys.encode(query_rows, query_items))


def _ints(values: Iterable[int]) -> np.ndarray:
    return np.asarray(values if isinstance(values, np.ndarray) else list(values), np.int64)


def _row_count(runs: Mapping[str, np.ndarray], qrels: Qrels) -> int:
    counts = {ids.shape[0] for ids in runs.values()}
    if len(counts) > 1:
        raise ValueError("every run must have one row per query, in the same order")
    n = counts.pop() if counts else 0
    if len(qrels) and int(qrels.rows.max()) >= n:
        raise ValueError("qrels name a query row the runs do not have")
    return n


def points(value: float | None, *, signed: bool = False) -> str:
    """A score in [0, 1] as every page shows it: points (percent without the sign) with one
    decimal, ``0.4312`` → ``43.1``; a difference with its sign (``signed``), ``-0.215`` →
    ``-21.5``; missing or NaN → ``–``. The one number format of the model page, the
    leaderboard, the reports and their job results (headers name the unit)."""
    if value is None or value == "" or math.isnan(float(value)):
        return "–"
    return f"{100 * float(value):{'+' if signed else ''}.1f}"


def interval_text(interval: score_intervals.ScoreInterval | None) -> str:
    """A score's interval from the labels (:mod:`retrieval.scoring.score_intervals`: a 95% interval
    over label noise, the bounds unjudged pairs allow, or both; :func:`interval_legend` says
    which) in :func:`points`,
    ``[41.9–44.2]``; empty where the score is exact (its interval holds nothing: no label
    noise, no unjudged pair, no sample) or unknown (NaN), so no page shows ``[x–x]``."""
    if interval is None or not interval.parts or math.isnan(interval.low):
        return ""
    return f"[{points(interval.low)}–{points(interval.high)}]"


def interval_cell(interval: score_intervals.ScoreInterval) -> str:
    """The score with its interval beside it, ``43.1 [41.9–44.2]``; exact: ``43.1``."""
    bracket = interval_text(interval)
    return f"{points(interval.value)} {bracket}" if bracket else points(interval.value)


def interval_legend(intervals: Iterable[score_intervals.ScoreInterval]) -> str:
    """One sentence for a table of ``intervals``: what its brackets hold (the union of their
    ``parts``, each named for what it is: label noise gives a 95% interval, unjudged pairs
    give bounds, which are not one), or that every score is exact."""
    shown = list(intervals)
    parts = {part for interval in shown for part in interval.parts}
    if not parts:
        return (
            "Every corrected score is exact: the label set gives no label a probability and "
            "leaves no pooled pair unjudged, so no interval is shown."
        )
    held = []
    if score_intervals.LABEL_NOISE in parts:
        held.append("label noise: a 95% interval over each judged pair's probability of relevance")
    if score_intervals.UNJUDGED in parts:
        held.append(
            "unjudged pairs: the bounds they allow, the least and the greatest score any "
            "labelling of the pooled pairs not judged yet gives (the range the score stays in "
            "whatever they turn out to be, not a 95% interval"
            + (
                "; where there is label noise too, its interval widened to them)"
                if score_intervals.LABEL_NOISE in parts
                else ")"
            )
        )
    if score_intervals.SAMPLED in parts:
        held.append("a sampled estimate: its own 95% interval, widened by the label noise")
    text = "What the bracket beside a corrected score holds, by what moves it: " + "; ".join(held)
    if any(not interval.parts for interval in shown):
        text += "; a score shown without one is exact"
    return text + "."


def table_cell(corrected: float, original: float | None) -> str:
    """FIRE Table 1's "A (B + C)": corrected, then original plus the gain, in points; a loss
    reads "A (B − C)", never "B + -C"."""
    if original is None:
        return points(corrected)
    gain = points(corrected - original)
    size = gain.lstrip("-")
    sign = "−" if gain.startswith("-") and size.strip("0.") else "+"
    return f"{points(corrected)} ({points(original)} {sign} {size})"


@dataclass
class FileInputs:
    """Runs and qrels read from TREC files, on shared integer ids."""

    runs: dict[str, np.ndarray]
    corrected: Qrels
    original: Qrels | None


def read_trec_inputs(
    qrels_path: Path | str, run_paths: Sequence[Path | str], original_path: Path | str | None
) -> FileInputs:
    """Read qrels and runs; rows are every query of either qrels file, in first-seen order.

    Queries a run answers but no qrels judge are ignored (as ir_measures does); each run's
    rankings are already in trec_eval's order (:func:`retrieval.formats.trec.read_run`).
    Two files with the same run id are an error, since the output is keyed by run id.
    """
    corrected_map = trec.read_qrels(qrels_path)
    original_map = trec.read_qrels(original_path) if original_path else None
    query_keys = list(dict.fromkeys([*corrected_map, *(original_map or {})]))
    row_of = {key: row for row, key in enumerate(query_keys)}
    run_files = [trec.read_run(path) for path in run_paths]
    seen: dict[str, Path | str] = {}
    for path, run in zip(run_paths, run_files, strict=True):
        if run.run_id in seen:
            raise FormatError(
                path, None, "run_id", f"run id {run.run_id!r} is also the id of {seen[run.run_id]}"
            )
        seen[run.run_id] = path
    docnos: dict[str, int] = {}
    for judged in (*corrected_map.values(), *(original_map or {}).values()):
        for docno in judged:
            docnos.setdefault(docno, len(docnos))
    for run in run_files:
        for ranking in run.rankings.values():
            for docno, _ in ranking:
                docnos.setdefault(docno, len(docnos))

    def qrels_of(qrels_map: Mapping[str, Mapping[str, int]]) -> Qrels:
        rows, items, rel = [], [], []
        for qid, judged in qrels_map.items():
            for docno, value in judged.items():
                rows.append(row_of[qid])
                items.append(docnos[docno])
                rel.append(value)
        return Qrels.of(rows, items, rel)

    runs = {}
    for run in run_files:
        depth = max((len(ranking) for ranking in run.rankings.values()), default=1)
        item_ids, _ = trec.to_arrays(run.rankings, query_keys, docnos, max(depth, 1))
        runs[run.run_id] = item_ids
    return FileInputs(
        runs,
        qrels_of(corrected_map),
        qrels_of(original_map) if original_map is not None else None,
    )

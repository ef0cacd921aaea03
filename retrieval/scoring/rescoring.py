"""Pure: re-score runs under several positive sets (FIRE §2.1, §4, Tables 1 and 4) as arrays. Runs
are ranked item ids per query row (-1 padding). Positive sets: original (each caption's own video),
corrected (plus what a label set judges relevant, its negatives kept as judged), leave-one-run-out
(FIRE Table 4 "New") and true (exhaustive, synthetic datasets only).
:mod:`retrieval.scoring.rescoring_service` gathers a dataset's arrays for it."""

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain
from pathlib import Path

import numpy as np

from retrieval.formats import trec
from retrieval.formats.records import FormatError
from retrieval.ids import PairKeys, contains
from retrieval.scoring import analysis, metrics, score_intervals


@dataclass(frozen=True)
class Qrels:
    """Judgements as arrays: query row, item id, relevance (as trec_eval reads qrels)."""

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
    """Run -> metric -> :class:`retrieval.scoring.estimation.Score` (exact, bounds or estimate) when
    the label set's campaign had unjudged pooled pairs."""
    interval_source: Callable[[], dict] | None = field(default=None, repr=False)
    """:func:`retrieval.scoring.score_intervals.score_intervals` with its arguments bound, or None:
    every label certain, each interval the score itself."""

    @cached_property
    def intervals(self) -> dict[str, dict[str, score_intervals.ScoreInterval]]:
        """Run -> metric -> each corrected C@K, AP and nDCG@10's :class:`~.ScoreInterval`, computed
        on first read: its Monte Carlo costs more than the rest of a rescoring
        (``bench/score_intervals_bench.py``) and most readers never ask."""
        if self.interval_source is not None:
            return self.interval_source()
        corrected = self.blocks.get("corrected", {})
        return {run: score_intervals.exact_intervals(s.means) for run, s in corrected.items()}

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
    """Score ``runs`` under the corrected set and every other set given; ``pooled`` (at
    ``pool_depth``) enables leave-one-run-out for the pooled runs."""
    n_queries = analysis.row_count(runs.values())
    if len(corrected) and int(corrected.rows.max()) >= n_queries:
        raise ValueError("qrels name a query row the runs do not have")
    result = Rescoring(n_queries)
    for block, qrels in (("corrected", corrected), ("original", original), ("true", true)):
        if qrels is not None:
            result.blocks[block] = {name: score(ids, qrels, ks) for name, ids in runs.items()}
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
    """Per pooled run, the corrected qrels without the judged pairs only it contributed; original
    positives always stay (they need no pooling)."""
    judged = np.ones(len(corrected), bool)
    if original is not None and len(original):
        n_rows = int(max(original.rows.max(), corrected.rows.max(initial=0))) + 1
        keys = PairKeys.fit(n_rows, original.items)
        originals = np.sort(keys.pack(original.rows, original.items))
        judged = ~contains(originals, keys.encode(corrected.rows, corrected.items))
    contrib = analysis.contributors(
        dict(pooled), depth, corrected.rows[judged], corrected.items[judged]
    )
    drop = np.zeros((len(corrected), len(pooled)), bool)  # judged pairs x pooled runs
    drop[judged] = ~analysis.leave_one_out_mask(contrib)
    return {name: corrected.without(drop[:, column]) for column, name in enumerate(pooled)}


def _ints(values: Iterable[int]) -> np.ndarray:
    return np.asarray(values if isinstance(values, np.ndarray) else list(values), np.int64)


def points(value: float | None, *, signed: bool = False) -> str:
    """A score in [0, 1] as every page shows it: points with one decimal (``0.4312`` → ``43.1``),
    signed with ``signed``; missing or NaN → ``–``."""
    if value is None or value == "" or math.isnan(float(value)):
        return "–"
    return f"{100 * float(value):{'+' if signed else ''}.1f}"


def shown_value(value: float, interval: score_intervals.ScoreInterval | None) -> float:
    """The score a page shows beside ``interval``: an active estimate's own value (its
    interval is around it), else ``value``, the score under the resolved labels."""
    if interval is not None and score_intervals.ACTIVE in interval.parts:
        return interval.value
    return value


def interval_text(interval: score_intervals.ScoreInterval | None) -> str:
    """A score's interval from the labels in :func:`points`, ``[41.9–44.2]``; empty where the score
    is exact or unknown, so no page shows ``[x–x]``."""
    if interval is None or not interval.parts or math.isnan(interval.low):
        return ""
    return f"[{points(interval.low)}–{points(interval.high)}]"


def interval_cell(interval: score_intervals.ScoreInterval) -> str:
    """The score with its interval beside it, ``43.1 [41.9–44.2]``; exact: ``43.1``."""
    bracket = interval_text(interval)
    return f"{points(interval.value)} {bracket}" if bracket else points(interval.value)


def interval_legend(intervals: Iterable[score_intervals.ScoreInterval]) -> str:
    """One sentence for a table of ``intervals``: what its brackets hold, or that all are exact."""
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
    if score_intervals.ACTIVE in parts:
        held.append(
            "an active estimate (the score shown is the estimate): the 95% interval of the "
            "campaign's active stages, queries judged in full with known probabilities and a "
            "relevance predictor for the rest, holding label noise, the predictor's error and "
            "the sampling" + _dominance(shown)
        )
    text = "What the bracket beside a corrected score holds, by what moves it: " + "; ".join(held)
    if any(not interval.parts for interval in shown):
        text += "; a score shown without one is exact"
    return text + "."


def _dominance(shown: list[score_intervals.ScoreInterval]) -> str:
    """Which part holds more of the active intervals' variance, in words: where label noise does,
    more labels on the judged queries narrow them; where the predictor and sampling do, more
    queries judged in full."""
    active = [i for i in shown if score_intervals.ACTIVE in i.parts and i.dominant]
    noisy = sum(i.dominant == score_intervals.LABEL_NOISE for i in active)
    if not active:
        return ""
    if noisy == len(active):
        return " (label noise holds most of every such interval's variance)"
    if not noisy:
        return (
            " (the predictor's error and the sampling hold most of every such interval's variance)"
        )
    return (
        f" (label noise holds most of the variance in {noisy} of these {len(active)} intervals, "
        "the predictor's error and the sampling in the others)"
    )


def table_cell(corrected: float, original: float | None) -> str:
    """FIRE Table 1's "A (B + C)" in points; a loss reads "A (B − C)", never "B + -C"."""
    if original is None:
        return points(corrected)
    gain = points(corrected - original)
    size = gain.lstrip("-")
    sign = "−" if gain.startswith("-") and size.strip("0.") else "+"
    return f"{points(corrected)} ({points(original)} {sign} {size})"


def rescore_trec_files(
    qrels_path: Path | str, run_paths: Sequence[Path | str], original_path: Path | str | None
) -> Rescoring:
    """:func:`rescore` of TREC run files under TREC qrels, on shared integer ids; rows are every
    query of either qrels file, in first-seen order. Queries no qrels judge are ignored (as
    ir_measures does); two files with one run id raise."""
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
    judged_docnos = (
        d for qrels in (corrected_map, original_map or {}) for q in qrels.values() for d in q
    )
    ranked_docnos = (
        d for run in run_files for ranking in run.rankings.values() for d, _ in ranking
    )
    docnos = {d: i for i, d in enumerate(dict.fromkeys(chain(judged_docnos, ranked_docnos)))}

    def qrels_of(qrels_map: Mapping[str, Mapping[str, int]]) -> Qrels:
        rows, items, rel = [], [], []
        for qid, judged in qrels_map.items():
            rows += [row_of[qid]] * len(judged)
            items += [docnos[docno] for docno in judged]
            rel += judged.values()
        return Qrels.of(rows, items, rel)

    runs = {}
    for run in run_files:
        depth = max([1, *map(len, run.rankings.values())])
        runs[run.run_id] = trec.to_arrays(run.rankings, query_keys, docnos, depth)[0]
    original = qrels_of(original_map) if original_map is not None else None
    return rescore(runs, qrels_of(corrected_map), original=original)

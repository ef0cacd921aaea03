"""Pure: a 95% interval around every re-scored C@K, AP and nDCG@10 that includes label noise. Label
noise: Monte Carlo over labellings, each judged pair relevant with its Dawid & Skene (1979)
probability (a parametric bootstrap; Efron & Tibshirani 1993, ch. 6), widened to hold the resolved
score. Unjudged pairs: the envelope of every labelling of them (C@K: all irrelevant / relevant; AP
and nDCG: some top or bottom stretch of the run's unjudged pairs relevant). A sampled estimate
(:mod:`retrieval.scoring.estimation`): its own interval widened by the label noise's half-widths.
Flips (not labels) are drawn in seeded blocks; a query with few busy pairs has every labelling
scored as a polynomial in its flips (Moebius inversion; Rota 1964).
``bench/score_intervals_bench.py`` times it (figures in ``bench/RESULTS.md``)."""

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from retrieval.ids import PairKeys, contains, lookup
from retrieval.scoring import metrics
from retrieval.scoring.intervals import percentile_interval

LABEL_NOISE, UNJUDGED, SAMPLED = "label noise", "unjudged pairs", "sampled estimate"
ACTIVE = "active estimate"
PREDICTION = "predictor and sampling"
"""An active estimate's other variance: the predictor's error on the queries not judged in full,
weighted by how rarely they were drawn (:data:`LABEL_NOISE` is its judged values' noise)."""
ACTIVE_METADATA = "active_estimates"
"""The label set metadata key of a campaign's active-inference estimates (:func:`stored_active`)."""
DEFAULT_DRAWS = 2_000
LEVEL = 0.95
CHUNK_CELLS = 1 << 22
"""Most draws x (1 + labellings) one chunk of queries scores: tens of MB of temporaries."""
_BLOCK = 2_048  # pairs per seeded stream of flips
_DENSE = 1 / 16  # flip probability from which a pair's draws are all drawn, not its gaps
_WHOLE, _BUSY = 4, 0.02  # a query with at most 4 pairs that can flip, 0.02 flips a draw
# or more, has every labelling scored; on the others the draws' labellings are scored
_SMALL = 12  # a query with at most this many pairs that can flip names a labelling by bits
_TOLERANCE = 1e-9  # a drawn mean this close to the value is the value

NOTE = (
    "intervals: a 95% interval around each corrected C@K, AP and nDCG@10; parts says what it "
    "holds: label noise (Monte Carlo over each judged pair's probability of relevance), "
    "unjudged pairs (every labelling of the pooled pairs judging left unjudged), sampled "
    "estimate (the estimate's own interval, widened by the label noise), active estimate (the "
    "active-inference estimate of the campaign's active stages, value and interval: label noise, "
    "the predictor's error and the sampling of the queries judged in full); no parts: the score "
    "is exact; dominant: of an active estimate, which of label noise and predictor and sampling "
    "holds more of its variance"
)


@dataclass(frozen=True)
class ScoreInterval:
    """One run's mean for one metric and its interval; no ``parts``: exact, low == value == high.
    ``dominant``: of an active estimate, the part holding more of its variance (:data:`LABEL_NOISE`
    or :data:`PREDICTION`); None otherwise."""

    metric: str
    value: float
    low: float
    high: float
    parts: tuple[str, ...] = ()
    dominant: str | None = None

    def as_dict(self) -> dict:
        """Every field but the metric (the key it is stored under), ``parts`` as a list."""
        fields = {**asdict(self), "parts": list(self.parts)}
        return {name: value for name, value in fields.items() if name != "metric"}


@dataclass(frozen=True)
class JudgedPairs:
    """Judged pairs: relevance (1, 0, -1 a disagreement) and each one's probability of relevance."""

    rows: np.ndarray
    items: np.ndarray
    relevance: np.ndarray
    p_relevant: np.ndarray

    @classmethod
    def of(cls, rows, items, relevance, p_relevant=None) -> "JudgedPairs":
        """Check the arrays; an unknown (NaN or absent) probability is the relevance's certainty."""
        rows = np.asarray(rows, dtype=np.int64).ravel()
        items = np.asarray(items, dtype=np.int64).ravel()
        relevance = np.asarray(relevance, dtype=np.int64).ravel()
        certain = (relevance == 1).astype(np.float64)
        p = certain if p_relevant is None else np.asarray(p_relevant, np.float64).ravel()
        if not len(rows) == len(items) == len(relevance) == len(p):
            raise ValueError("judged arrays must have the same length")
        if not np.isin(relevance, (1, 0, -1)).all():
            raise ValueError("relevance must be 1, 0 or -1")
        if ((p < 0) | (p > 1)).any():
            raise ValueError("a probability of relevance must lie between 0 and 1")
        return cls(rows, items, relevance, np.where(np.isnan(p), certain, p))


def query_key(caption_ids: np.ndarray) -> str:
    """A short fingerprint of a set of query caption ids: estimates over the campaign's pooled
    queries stand for a rescoring only over the same queries."""
    ids = np.unique(np.asarray(caption_ids, dtype=np.int64))
    return hashlib.sha256(ids.astype("<i8").tobytes()).hexdigest()[:16]


def dominant_part(labels_variance: object, sampling_variance: object) -> str:
    """Which of an active estimate's two variances is larger: :data:`LABEL_NOISE` or
    :data:`PREDICTION`; empty where either is missing or not a number."""
    try:
        labels, sampling = float(labels_variance), float(sampling_variance)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ""
    return LABEL_NOISE if labels > sampling else PREDICTION


def stored_active(stored: object, caption_ids: np.ndarray) -> dict[str, dict[str, ScoreInterval]]:
    """Run -> metric -> the :class:`ScoreInterval` of a label set's stored active estimates
    (``{"key", "estimates": {run: {metric: {"estimate", "low", "high", "labels_variance",
    "sampling_variance"}}}}``), when they are over the same queries as ``caption_ids``; empty
    otherwise or when malformed."""
    if not isinstance(stored, dict) or stored.get("key") != query_key(caption_ids):
        return {}
    found: dict[str, dict[str, ScoreInterval]] = {}
    for run, scores in (stored.get("estimates") or {}).items():
        for metric, value in (scores if isinstance(scores, dict) else {}).items():
            try:
                triple = tuple(float(value[k]) for k in ("estimate", "low", "high"))
            except (KeyError, TypeError, ValueError):
                continue
            dominant = dominant_part(value.get("labels_variance"), value.get("sampling_variance"))
            found.setdefault(str(run), {})[str(metric)] = ScoreInterval(
                str(metric), *triple, (ACTIVE,), dominant or None
            )
    return found


def interval_metrics(ks: Sequence[int] = metrics.DEFAULT_KS, ndcg_k: int = 10) -> tuple[str, ...]:
    """The metrics that get an interval, in :func:`retrieval.scoring.metrics.metric_names` order."""
    return (*(f"C@{k}" for k in ks), "AP", f"nDCG@{ndcg_k}")


def exact_intervals(means: Mapping[str, float]) -> dict[str, ScoreInterval]:
    """Point intervals (every label certain) for each C@K, AP and nDCG of ``means``."""
    names = [name for name in means if name == "AP" or name.startswith(("C@", "nDCG@"))]
    return {name: ScoreInterval(name, means[name], means[name], means[name]) for name in names}


def score_intervals(
    runs: Mapping[str, np.ndarray],
    judged: JudgedPairs,
    positives: tuple[np.ndarray, np.ndarray],
    *,
    unjudged: tuple[np.ndarray, np.ndarray] | None = None,
    estimates: Mapping[str, Mapping[str, tuple[float, float]]] | None = None,
    active: Mapping[str, Mapping[str, ScoreInterval]] | None = None,
    ks: Sequence[int] = metrics.DEFAULT_KS,
    ndcg_k: int = 10,
    draws: int = DEFAULT_DRAWS,
    seed: int = 0,
    level: float = LEVEL,
) -> dict[str, dict[str, ScoreInterval]]:
    """Run -> metric -> :class:`ScoreInterval` for C@K (each of ``ks``), AP and nDCG@``ndcg_k``.
    ``runs``: item ids per query row (queries x depth, -1 padding); ``positives``: (rows, items)
    always relevant; ``unjudged``: (rows, items) of pooled pairs with no label yet; ``estimates``:
    run -> metric -> (low, high) of a sampled estimate; ``active``: run -> metric -> the
    campaign's active stages' interval (:func:`stored_active`), which stands as it is.
    Means are over the queries with a positive; with none the value and ends are NaN."""
    if not runs:
        return {}
    if draws < 1:
        raise ValueError("draws must be at least 1")
    ks = tuple(int(k) for k in ks)
    names = interval_metrics(ks, ndcg_k)
    shapes = {np.shape(items) for items in runs.values()}
    if any(len(shape) != 2 for shape in shapes) or len({shape[0] for shape in shapes}) > 1:
        raise ValueError("every run must be a queries x depth array with the same rows")
    labels = _Labels.build(shapes.pop()[0], judged, positives, unjudged)
    values = {run: _resolved_means(items, labels, ks, ndcg_k, names) for run, items in runs.items()}
    drawn = None
    if len(labels.uncertain) or len(labels.unjudged):
        # Unjudged pairs alone draw nothing: one draw holds their envelope.
        times = draws if len(labels.uncertain) else 1
        drawn = _Engine(list(runs.values()), labels, ks, ndcg_k, times, seed).means()
    estimates, active = estimates or {}, active or {}
    result: dict[str, dict[str, ScoreInterval]] = {}
    for r, run in enumerate(runs):
        result[run] = {}
        for m, name in enumerate(names):
            if name in active.get(run, {}):
                result[run][name] = active[run][name]
                continue
            ends = None if drawn is None else tuple(part[r, m] for part in drawn)
            sampled = estimates.get(run, {}).get(name)
            result[run][name] = _interval(name, values[run][name], ends, sampled, level)
    return result


def _interval(
    name: str,
    value: float,
    drawn: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
    sampled: tuple[float, float] | None,
    level: float,
) -> ScoreInterval:
    """One score's interval from its resolved, least and greatest means (None: all certain),
    widened to hold ``value`` (one possible reading) unless it is a sampled estimate's."""
    parts: list[str] = []
    low = high = value
    if drawn is not None:
        resolved, least, greatest = drawn
        if _moves(resolved, value):
            parts.append(LABEL_NOISE)
            low, high = _ends(resolved, level)
    if sampled is not None:
        below = 0.0 if np.isnan(value) else max(value - low, 0.0)
        above = 0.0 if np.isnan(value) else max(high - value, 0.0)
        low = float(np.clip(sampled[0] - below, 0.0, 1.0))
        high = float(np.clip(sampled[1] + above, 0.0, 1.0))
        return ScoreInterval(name, value, low, high, (*parts, SAMPLED))
    if drawn is not None and (_moves(least, resolved) or _moves(greatest, resolved)):
        low, high = _ends(least, level)[0], _ends(greatest, level)[1]
        parts.append(UNJUDGED)
    if not np.isnan([value, low, high]).any():
        low, high = min(low, value), max(high, value)
    return ScoreInterval(name, value, low, high, tuple(parts))


def _moves(drawn: np.ndarray, reference) -> bool:
    """Whether some drawn mean differs from ``reference`` (a value, or one mean per draw)."""
    return bool((~np.isclose(drawn, reference, rtol=0.0, atol=_TOLERANCE, equal_nan=True)).any())


def _ends(drawn: np.ndarray, level: float) -> tuple[float, float]:
    """The central ``level`` share of the draws that have a mean (NaN, NaN when none has)."""
    finite = drawn[np.isfinite(drawn)]
    if not finite.size:
        return float("nan"), float("nan")
    interval = percentile_interval(float("nan"), finite, level)
    return interval.low, interval.high


@dataclass(frozen=True)
class _Labels:
    """The pairs as sorted int64 keys: resolved positives, pairs that can flip (probability, and
    sign +1 where a flip makes it relevant), and unjudged pairs."""

    n_rows: int
    keys: PairKeys
    resolved: np.ndarray
    uncertain: np.ndarray
    uncertain_rows: np.ndarray
    flip: np.ndarray
    sign: np.ndarray
    unjudged: np.ndarray

    @classmethod
    def build(
        cls,
        n_rows: int,
        judged: JudgedPairs,
        positives: tuple[np.ndarray, np.ndarray],
        unjudged: tuple[np.ndarray, np.ndarray] | None,
    ) -> "_Labels":
        pos_rows, pos_items = (np.asarray(a, dtype=np.int64).ravel() for a in positives)
        none = np.zeros(0, np.int64)
        out_rows, out_items = (np.asarray(a, np.int64).ravel() for a in unjudged or (none, none))
        rows = np.concatenate([judged.rows, pos_rows, out_rows])
        if rows.size and (rows.min() < 0 or rows.max() >= n_rows):
            raise ValueError(f"pair rows must lie in 0..{n_rows - 1}")
        keys = PairKeys.fit(n_rows, np.concatenate([judged.items, pos_items, out_items]))
        original = np.unique(keys.pack(pos_rows, pos_items))
        judged_keys = keys.pack(judged.rows, judged.items)
        order = np.argsort(judged_keys, kind="stable")
        judged_keys = judged_keys[order]
        if (judged_keys[1:] == judged_keys[:-1]).any():
            raise ValueError("a (query, item) pair is judged more than once")
        relevant = judged.relevance[order] == 1
        p = judged.p_relevant[order]
        flip = np.where(relevant, 1.0 - p, p)
        uncertain = ~contains(original, judged_keys) & (flip > 0)  # originals never flip
        out = np.unique(keys.pack(out_rows, out_items))
        out = out[~contains(original, out) & ~contains(judged_keys, out)]
        return cls(
            n_rows,
            keys,
            np.union1d(original, judged_keys[relevant]),
            judged_keys[uncertain],
            keys.unpack(judged_keys[uncertain])[0],
            flip[uncertain],
            np.where(relevant[uncertain], -1, 1).astype(np.int64),
            out,
        )

    def cells(self, items: np.ndarray) -> np.ndarray:
        """The pair key of each ranked item of a run (-1: padding, or an item no pair names)."""
        items = np.asarray(items, dtype=np.int64)
        rows = np.arange(items.shape[0], dtype=np.int64)[:, None]
        return np.where(items >= 0, self.keys.encode(rows, items), -1)

    def per_row(self, sorted_keys: np.ndarray) -> np.ndarray:
        return np.bincount(self.keys.unpack(sorted_keys)[0], minlength=self.n_rows)


def _in(cells: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    return contains(sorted_keys, cells) & (cells >= 0)


def _resolved_means(
    items: np.ndarray, labels: _Labels, ks: tuple[int, ...], ndcg_k: int, names: Sequence[str]
) -> dict[str, float]:
    """The run's means under the resolved labels (equal to the corrected block's)."""
    relevant = _in(labels.cells(items), labels.resolved)
    n_relevant = labels.per_row(labels.resolved)
    judgements = metrics.RankedJudgements(relevant, relevant, n_relevant, np.zeros_like(n_relevant))
    per_query = metrics.evaluate(judgements, ks, ndcg_k=ndcg_k, only=names)
    return metrics.mean_scores({name: per_query[name] for name in names}, n_relevant)


@dataclass(frozen=True)
class _Run:
    """One run's resolved and unjudged cells (queries x depth) and each flippable pair's rank."""

    relevant: np.ndarray
    unjudged: np.ndarray
    rank: np.ndarray

    @classmethod
    def of(cls, items: np.ndarray, labels: _Labels) -> "_Run":
        cells = labels.cells(items)
        at, found = lookup(labels.uncertain, cells)
        found &= cells >= 0
        rank = np.full(len(labels.uncertain), -1, dtype=np.int64)
        rank[at[found]] = np.nonzero(found)[1]
        return cls(_in(cells, labels.resolved), _in(cells, labels.unjudged), rank)


class _Engine:
    """Per draw, run and metric: the mean with unjudged pairs irrelevant, its least and greatest."""

    def __init__(
        self,
        runs: Sequence[np.ndarray],
        labels: _Labels,
        ks: tuple[int, ...],
        ndcg_k: int,
        draws: int,
        seed: int,
    ) -> None:
        self.labels, self.ks, self.ndcg_k, self.draws = labels, ks, ndcg_k, draws
        self.names = interval_metrics(ks, ndcg_k)
        self.runs = [_Run.of(items, labels) for items in runs]
        self.n_relevant = labels.per_row(labels.resolved)
        self.n_unjudged = labels.per_row(labels.unjudged)
        rows = labels.uncertain_rows
        self.n_pairs = np.bincount(rows, minlength=labels.n_rows)
        self.first_pair = np.r_[0, np.cumsum(self.n_pairs)]
        self.slot = np.arange(len(rows)) - self.first_pair[rows]
        self.flips = _Flips(labels.flip, draws, seed)
        self.expected = np.bincount(rows, weights=labels.flip, minlength=labels.n_rows)
        self.whole = (self.n_pairs <= _WHOLE) & (self.expected >= _BUSY)
        # Columns: queries counted, queries that may join, then per run and metric the
        # summed score with the unjudged pairs irrelevant, then what their least and their
        # greatest labelling change in it (0 but on queries with unjudged pairs).
        self.n_columns = 2 + 3 * len(self.runs) * len(self.names)

    def means(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Runs x metrics x draws: resolved, least and greatest means."""
        everyone = np.arange(self.labels.n_rows)
        base = self._totals(everyone, [run.relevant for run in self.runs], self.n_relevant)
        sums = np.tile(base.sum(axis=0), (self.draws, 1))
        for rows in self._chunks():
            self._add_chunk(rows, base, sums)
        counted, optional = sums[:, 0], sums[:, 1]
        shape = (3, len(self.runs), len(self.names), self.draws)
        resolved, lower, higher = sums[:, 2:].T.reshape(shape)
        with np.errstate(invalid="ignore", divide="ignore"):
            least = (resolved + lower) / (counted + optional)
            greatest = (resolved + higher + optional) / (counted + optional)
            return resolved / counted, least, greatest

    def _chunks(self):
        """Stretches of queries with a flippable pair, each within :data:`CHUNK_CELLS`."""
        active = np.flatnonzero(self.n_pairs)
        labellings = np.where(
            self.whole[active], 1 << np.minimum(self.n_pairs[active], _WHOLE), self.expected[active]
        )
        cumulative = np.cumsum((1.0 + labellings) * self.draws)
        start = 0
        while start < len(active):
            done = cumulative[start - 1] if start else 0.0
            end = int(np.searchsorted(cumulative, done + CHUNK_CELLS, side="right"))
            end = max(end, start + 1)
            yield active[start:end]
            start = end

    def _add_chunk(self, rows: np.ndarray, base: np.ndarray, sums: np.ndarray) -> None:
        """Add to each draw what the flips of the chunk's queries change."""
        self.flips.forget_before(self.first_pair[rows[0]])
        whole, n_pairs = self.whole[rows], self.n_pairs[rows]
        if whole.any():
            sizes = np.unique(n_pairs[whole]).tolist()  # 1 to _WHOLE busy pairs
            parts = [self._whole(rows[whole & (n_pairs == n)], n, base) for n in sizes]
            products = np.concatenate([p for p, _ in parts])
            terms = np.concatenate([t for _, t in parts])
            moved = np.flatnonzero(np.abs(terms).max(axis=0) > 0)
            sums[:, moved] += products.T @ terms[:, moved]
        if not whole.all():
            self._add_flipped(rows[~whole], base, sums)

    def _whole(self, rows: np.ndarray, n: int, base: np.ndarray):
        """Queries with ``n`` busy pairs: per nonempty subset its flips' product per draw and its
        Moebius coefficient (monomials x columns)."""
        masks = np.arange(1 << n)
        of_row = np.repeat(np.arange(len(rows)), len(masks))
        of, slot = np.nonzero((np.tile(masks, len(rows))[:, None] >> np.arange(n)) & 1)
        flipped = self.first_pair[rows[of_row[of]]] + slot
        change = self._changes(rows[of_row], flipped, of, base)
        coefficient = change.reshape(len(rows), len(masks), -1)
        for b in range(n):
            holds = (masks >> b) & 1 == 1
            coefficient[:, holds] -= coefficient[:, masks[holds] ^ (1 << b)]
        pairs = (self.first_pair[rows][:, None] + np.arange(n)).ravel()
        flips = self.flips.bits(pairs).reshape(len(rows), n, self.draws)
        products = np.empty((len(rows), len(masks) - 1, self.draws))
        for mask in masks[1:]:
            members = np.flatnonzero((mask >> np.arange(n)) & 1)
            products[:, mask - 1] = np.logical_and.reduce(flips[:, members], axis=1)
        width = coefficient.shape[2]
        return products.reshape(-1, self.draws), coefficient[:, 1:].reshape(-1, width)

    def _add_flipped(self, rows: np.ndarray, base: np.ndarray, sums: np.ndarray) -> None:
        """Other queries: each distinct labelling the draws give is scored once."""
        pairs = _ranges(self.first_pair[rows], self.first_pair[rows + 1])
        pairs, draw = self.flips.events(pairs)
        if not len(pairs):
            return
        labellings = _Labellings.of(
            rows, pairs, draw, self.draws, self.labels.uncertain_rows, self.slot, self.first_pair
        )
        global_rows = rows[labellings.row]
        change = self._changes(global_rows, labellings.flipped, labellings.flip_of, base)
        moved = np.flatnonzero(np.abs(change).max(axis=0) > 0)
        if not len(moved):
            return
        cell_draw, cell_labelling = labellings.cell_draw, labellings.cell_labelling
        if len(labellings.row) * self.draws <= CHUNK_CELLS:
            # Few labellings, many draws: which labelling each draw holds, times the changes.
            held = np.zeros((self.draws, len(labellings.row)))
            held[cell_draw, cell_labelling] = 1.0
            sums[:, moved] += held @ change[:, moved]
        else:
            by_column = np.ascontiguousarray(change[:, moved].T)  # one column at a time, cached
            for column, values in zip(moved, by_column, strict=True):
                weights = values[cell_labelling]
                sums[:, column] += np.bincount(cell_draw, weights=weights, minlength=self.draws)

    def _changes(self, rows, flipped, flip_of, base: np.ndarray) -> np.ndarray:
        """Labellings x columns: what each labelling changes in its query's totals."""
        n = len(rows)
        drawn = np.bincount(flip_of, weights=self.labels.sign[flipped], minlength=n)
        n_relevant = self.n_relevant[rows] + drawn.astype(np.int64)
        relevants = []
        for run in self.runs:
            relevant = run.relevant[rows]
            rank = run.rank[flipped]
            listed = rank >= 0
            relevant[flip_of[listed], rank[listed]] ^= True
            relevants.append(relevant)
        return self._totals(rows, relevants, n_relevant) - base[rows]

    def _totals(self, rows: np.ndarray, relevants: list[np.ndarray], n_relevant) -> np.ndarray:
        """Lists x columns: what each list adds to the counts and sums of :meth:`means`."""
        names = self.names
        out = np.zeros((len(rows), self.n_columns))
        eligible = n_relevant > 0
        open_ = self.n_unjudged[rows] > 0
        out[:, 0] = eligible
        out[:, 1] = ~eligible & open_
        width = len(self.runs) * len(names)
        for r, (run, relevant) in enumerate(zip(self.runs, relevants, strict=True)):
            columns = 2 + r * len(names) + np.arange(len(names))
            resolved = np.where(eligible[:, None], self._scores(relevant, n_relevant), 0.0)
            out[:, columns] = resolved
            if open_.any():
                ends = self._extremes(run, rows[open_], relevant[open_], n_relevant[open_])
                for shift, end in enumerate(ends, 1):  # the least, then the greatest
                    moved = np.where(eligible[open_, None], end, 0.0) - resolved[open_]
                    out[np.ix_(open_, columns + shift * width)] = moved
        return out

    def _scores(self, relevant: np.ndarray, n_relevant: np.ndarray) -> np.ndarray:
        """Lists x metrics, by :func:`retrieval.scoring.metrics.evaluate`."""
        zero = np.zeros_like(n_relevant)
        judged = metrics.RankedJudgements(relevant, relevant, n_relevant, zero)
        per_query = metrics.evaluate(judged, self.ks, ndcg_k=self.ndcg_k, only=self.names)
        return np.column_stack([per_query[name] for name in self.names])

    def _extremes(self, run: _Run, rows, relevant, n_relevant) -> tuple[np.ndarray, np.ndarray]:
        """Per list, the least and greatest score over its unjudged pairs' top/bottom labellings."""
        unjudged = run.unjudged[rows]
        m = unjudged.sum(axis=1)
        count = 2 * (m + 1)
        starts = np.r_[0, np.cumsum(count)[:-1]]
        of = np.repeat(np.arange(len(rows)), count)
        place = np.arange(int(count.sum())) - np.repeat(starts, count)
        listed = m[of]
        bottom = place > listed
        t = np.where(bottom, place - listed - 1, place)
        order = np.cumsum(unjudged, axis=1)[of]  # 1..m down the list at the unjudged ranks
        chosen = np.where(bottom[:, None], order > (listed - t)[:, None], order <= t[:, None])
        unlisted = np.where(bottom, (self.n_unjudged[rows] - m)[of], 0)
        scores = self._scores(relevant[of] | (unjudged[of] & chosen), n_relevant[of] + t + unlisted)
        bounds = np.column_stack([starts, starts + m + 1]).ravel()
        greatest = np.maximum.reduceat(scores, bounds, axis=0)[0::2]
        least = np.minimum.reduceat(scores, bounds, axis=0)[1::2]
        return least, greatest


@dataclass(frozen=True)
class _Labellings:
    """The distinct labellings a chunk's flips give: per labelling its row and flipped pairs; per
    cell (query x draw with a flip) its draw and labelling."""

    row: np.ndarray
    flipped: np.ndarray
    flip_of: np.ndarray
    cell_draw: np.ndarray
    cell_labelling: np.ndarray

    @classmethod
    def of(cls, rows, pairs, draw, draws, pair_rows, slot, first_pair) -> "_Labellings":
        """From the flips: small queries name a labelling by slot bits, large by pair or cell."""
        local = np.searchsorted(rows, pair_rows[pairs])
        key = local * draws + draw  # the cell of each flip
        space = len(rows) * draws
        count = np.bincount(key, minlength=space)
        cells = np.flatnonzero(count)
        cell_row, cell_draw = np.divmod(cells, draws)
        n_pairs = np.diff(first_pair)[rows]
        small = n_pairs <= _SMALL
        labelling = np.empty(len(cells), dtype=np.int64)
        groups: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # rows, flipped, flip_of
        made = 0

        # Small queries: a cell's row and flipped slots (as bits) name its labelling.
        in_small = small[cell_row]
        if in_small.any():
            weights = np.where(small[local], 2.0 ** slot[pairs], 0.0)  # exact below 2**53
            bits = np.bincount(key, weights=weights, minlength=space)[cells[in_small]]
            offset = np.r_[0, np.cumsum(np.where(small, 1 << np.minimum(n_pairs, _SMALL), 0))]
            distinct, labelling[in_small] = _distinct(
                offset[cell_row[in_small]] + bits.astype(np.int64), int(offset[-1])
            )
            row = np.searchsorted(offset, distinct, side="right") - 1
            of, at = np.nonzero(((distinct - offset[row])[:, None] >> np.arange(_SMALL)) & 1)
            groups.append((row, first_pair[rows[row[of]]] + at, of))
            made = len(distinct)

        # Large queries, one flip: its pair names the labelling.
        single = ~in_small & (count[cells] == 1)
        if single.any():
            weights = np.where(small[local], 0.0, (pairs - pairs.min()).astype(np.float64))
            pair = np.bincount(key, weights=weights, minlength=space)[cells[single]]
            distinct, inverse = _distinct(pair.astype(np.int64), int(np.ptp(pairs)) + 1)
            distinct = distinct + pairs.min()
            labelling[single] = made + inverse
            row = np.searchsorted(rows, pair_rows[distinct])
            groups.append((row, distinct, made + np.arange(len(distinct))))
            made += len(distinct)

        # Large queries, several flips: each cell its own labelling.
        several = ~in_small & (count[cells] >= 2)
        if several.any():
            own = cells[several]
            labelling[several] = made + np.arange(len(own))
            chosen = np.flatnonzero(~small[local] & (count[key] >= 2))
            at = np.searchsorted(own, key[chosen])
            groups.append((cell_row[several], pairs[chosen], made + at))
            made += len(own)

        # Labellings are numbered group after group, so the groups' rows line up with them.
        return cls(
            np.concatenate([g[0] for g in groups]),
            np.concatenate([g[1] for g in groups]),
            np.concatenate([g[2] for g in groups]),
            cell_draw,
            labelling,
        )


def _distinct(names: np.ndarray, space: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``names`` (ints below ``space``) ascending and each one's place among them."""
    if space <= max(4 * len(names), 1 << 16):
        present = np.zeros(space, dtype=bool)
        present[names] = True
        return np.flatnonzero(present), np.cumsum(present)[names] - 1
    return np.unique(names, return_inverse=True)


def _ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """``starts[i]..stops[i] - 1`` for every i, one after the other."""
    lengths = stops - starts
    offsets = np.repeat(starts - np.r_[0, np.cumsum(lengths)[:-1]], lengths)
    return np.arange(int(lengths.sum())) + offsets


@dataclass(frozen=True)
class _Block:
    """One block's flips: likely pairs' bits per draw, rare pairs' flips as (pair, draw)."""

    start: int
    likely_row: np.ndarray
    likely: np.ndarray
    rare_pairs: np.ndarray
    rare_draws: np.ndarray


class _Flips:
    """Which pairs flip in which draws, per block of :data:`_BLOCK` pairs seeded (seed, block): a
    uniform per draw from :data:`_DENSE`, geometric gaps between flips below it."""

    def __init__(self, flip: np.ndarray, draws: int, seed: int) -> None:
        self.flip = np.asarray(flip, dtype=np.float64)
        self.draws, self.seed = draws, seed
        self._cached: dict[int, _Block] = {}

    def bits(self, pairs: np.ndarray) -> np.ndarray:
        """Pairs x draws: whether each of ``pairs`` (ascending) flips in each draw."""
        out = np.zeros((len(pairs), self.draws), dtype=bool)
        for likely_at, likely_bits, rare_at, rare_draws in self._found(pairs):
            out[likely_at] = likely_bits
            out[rare_at, rare_draws] = True
        return out

    def events(self, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pair and draw of every flip of ``pairs`` (ascending)."""
        found_pairs, found_draws = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        for likely_at, likely_bits, rare_at, rare_draws in self._found(pairs):
            hit, draw = np.nonzero(likely_bits)
            found_pairs += [pairs[likely_at[hit]], pairs[rare_at]]
            found_draws += [draw, rare_draws]
        return np.concatenate(found_pairs), np.concatenate(found_draws)

    def forget_before(self, pair: int) -> None:
        """Drop the cached blocks wholly before ``pair`` (chunks come in order)."""
        self._cached = {b: c for b, c in self._cached.items() if (b + 1) * _BLOCK > pair}

    def _found(self, pairs: np.ndarray):
        """Per block ``pairs`` (ascending) reach: the places among ``pairs`` of its likely pairs
        with their bits per draw, then the place and draw of each flip of its rare pairs."""
        if not len(pairs):
            return
        blocks, starts = np.unique(pairs // _BLOCK, return_index=True)
        for b, a, z in zip(blocks, starts, np.r_[starts[1:], len(pairs)], strict=True):
            if b not in self._cached:
                self._cached[b] = self._block(int(b))
            block, at = self._cached[b], np.arange(a, z)
            local = pairs[at] - block.start
            row = block.likely_row[local]
            place = np.full(len(block.likely_row), -1, dtype=np.int64)
            place[local] = at
            found = place[block.rare_pairs - block.start]
            rare = found >= 0
            yield at[row >= 0], block.likely[row[row >= 0]], found[rare], block.rare_draws[rare]

    def _block(self, block: int) -> _Block:
        start = block * _BLOCK
        flip = self.flip[start : start + _BLOCK]
        rng = np.random.default_rng([self.seed, block])
        likely = np.flatnonzero(flip >= _DENSE)
        likely_row = np.full(len(flip), -1, dtype=np.int64)
        likely_row[likely] = np.arange(len(likely))
        bits = np.empty((len(likely), self.draws), dtype=bool)
        for at in range(0, len(likely), 256):  # 256 pairs x draws uniforms at a time
            some = likely[at : at + 256]
            uniform = rng.random((len(some), self.draws), dtype=np.float32)
            bits[at : at + 256] = uniform < flip[some, None]
        rare = np.flatnonzero((flip > 0) & (flip < _DENSE))
        position = np.full(len(rare), -1, dtype=np.int64)
        going = np.arange(len(rare))
        pairs, draws = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        while going.size:
            position[going] += rng.geometric(flip[rare[going]])
            going = going[position[going] < self.draws]
            pairs.append(start + rare[going])
            draws.append(position[going])
        return _Block(start, likely_row, bits, np.concatenate(pairs), np.concatenate(draws))

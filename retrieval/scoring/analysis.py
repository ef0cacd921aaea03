"""Analyses of runs and per-query scores behind FIRE §4 and Appendices D-G (pure numpy, no ORM).

Runs are dense matrices of ranked item ids, queries x depth, with negative ids (-1) padding
lists shorter than the depth; the rows of every run given together refer to the same queries
in the same order. Per-query scores are float arrays with one value per query (for example a
metric's per-query values from :mod:`retrieval.scoring.metrics`, which this module never imports).

- Overlap and rank-biased overlap of two runs' top-k (FIRE §4.1, Table 3), per query.
- Contributors of judged pairs and leave-one-run-out positives (FIRE §4.2, Table 4 "New").
- The annotation-budget bootstrap (FIRE §4.3, Fig. 4, Appendix E).
- Paired significance between runs: bootstrap interval, sign-flip randomization test, Holm;
  each run's own bootstrap interval (mean or median) on shared query draws.
- Counts for the descriptive figures: positives per query (Appendix F, Fig. 11), caption length
  against positives (§4.1, Fig. 2), share correct by caption length (Fig. 3) and the ranks of
  original versus judged positives (Appendix G, Fig. 12).

Everything is vectorised over queries; loops run over runs, sizes or rank columns only.
Resampling is seeded (``numpy.random.default_rng``) and reproducible. Bootstrap means and
sign-flip sums depend only on how many times each distinct per-query value is drawn or
flipped, so where few distinct values exist (0/1 metrics) a resample is one multinomial or
binomial draw over those values instead of one draw per query: the same distribution, far
fewer random numbers.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from retrieval.ids import PairKeys, lookup
from retrieval.scoring.intervals import Interval, percentile_interval

#: Elements per chunk of random draws: bounds memory (16 MiB of int64) whatever the sizes.
CHUNK_ELEMENTS = 1 << 21
#: Resample by distinct values (one multinomial/binomial per resample) when their count
#: times this is at most the number of draws; otherwise draw one index or sign per query.
_FEW_VALUES_FACTOR = 16

#: Caption-length bins in words, as lower bounds: 1-5, 6-8, 9-11, 12-15, 16+ (roughly the
#: quintiles of MSR-VTT and MSVD caption lengths, whose medians are 7-9 words; FIRE Table 5).
DEFAULT_LENGTH_BINS = (1, 6, 9, 12, 16)
#: Positives-per-query bins, as lower bounds, widening roughly logarithmically like Fig. 2's
#: log-scale axis: 0, 1, 2, 3, 4-5, 6-10, 11-20, 21-50, 51+.
DEFAULT_POSITIVE_BINS = (0, 1, 2, 3, 4, 6, 11, 21, 51)


# --------------------------------------------------------------------------------------------
# Overlap and rank-biased overlap (FIRE §4.1, Table 3)
# --------------------------------------------------------------------------------------------


def overlap_at_k(a: np.ndarray, b: np.ndarray, k: int = 10) -> np.ndarray:
    """Per query, ``|A_k ∩ B_k| / max(|A_k|, |B_k|)``: FIRE Table 3's simple overlap of top-k.

    ``A_k`` and ``B_k`` are the non-padding ids among each run's first ``k`` ranks. The
    denominator is the size of the longer truncated list, which is ``k`` whenever either run
    has at least ``k`` results (FIRE's case), so identical short lists still score 1 and the
    value never exceeds 1. A query where both lists are empty gets NaN (undefined; the means in
    :func:`pairwise` skip it). Padding never counts as shared; a list that repeats an id, or
    pads before its last result, raises ``ValueError``.
    """
    a, b = _aligned(a, b, k)
    shared = ((_positions(a, b) < a.shape[1]) & (a >= 0)).sum(axis=1)
    longer = np.maximum((a >= 0).sum(axis=1), (b >= 0).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(longer > 0, shared / np.maximum(longer, 1), np.nan)


def rbo(a: np.ndarray, b: np.ndarray, p: float = 0.9, k: int | None = None) -> np.ndarray:
    """Per query, extrapolated rank-biased overlap RBO_ext of two ranked lists, uneven lengths allowed.

    Webber, Moffat & Zobel (2010), "A similarity measure for indefinite rankings", eq. 32
    (§4.2, uneven lengths), as FIRE §4.1 uses for Table 3. For lists S and L of lengths
    ``s <= l`` (after truncation to ``k`` ranks and dropping padding) and ``X_d`` the number of
    items shared by their first ``d`` ranks (for ``d > s``, all of S against L's first ``d``)::

        RBO_ext = (1 - p) / p * ( sum_{d=1..l} X_d / d * p^d
                                  + sum_{d=s+1..l} X_s * (d - s) / (s * d) * p^d )
                  + ( (X_l - X_s) / l + X_s / s ) * p^l

    The second sum assumes S, had it gone on, would keep agreeing with L at its depth-``s``
    rate; the last term extrapolates the agreement seen at depth ``l`` to infinite depth
    (counting L's items beyond ``s`` that S shares at their own rate). So identical lists
    give 1, disjoint lists 0, and a list that is a prefix of the other gives 1.

    ``p`` is the persistence of a user reading down both rankings: each next rank is read with
    probability ``p``, so the expected depth read is ``1 / (1 - p)`` (10 ranks at 0.9, when the
    top 10 carry about 86% of the weight). ``k`` truncates both runs first (None: all their
    columns). A query with both lists empty gets NaN; with one empty, 0. Padding (negative
    ids) is never shared; a repeated id within a list, or padding before a list's last result,
    raises ``ValueError``.

    FIRE does not say which RBO variant, ``p`` or implementation Table 3 used, so figures
    here need not reproduce that table's exactly. Agreement is top-weighted: lists sharing
    items only deep in their top 10 score below their overlap (as all of Table 3's pairs do).
    """
    if not 0.0 < p < 1.0:
        raise ValueError("p must be strictly between 0 and 1")
    a, b = _aligned(a, b, k)
    n_queries, width = a.shape
    # An item of A is shared from depth max(its rank in A, its rank in B) on (1-based).
    columns = np.arange(width, dtype=np.int64)
    pos = _positions(a, b)
    shared_from = np.where((a >= 0) & (pos < width), np.maximum(columns, pos) + 1, width + 1)
    starts = np.bincount(
        (np.arange(n_queries, dtype=np.int64)[:, None] * (width + 2) + shared_from).ravel(),
        minlength=n_queries * (width + 2),
    ).reshape(n_queries, width + 2)
    overlap = np.cumsum(starts, axis=1)[:, 1 : width + 1].astype(np.float64)  # X_d, d=1..width

    len_a, len_b = (a >= 0).sum(axis=1), (b >= 0).sum(axis=1)
    s, l_ = np.minimum(len_a, len_b), np.maximum(len_a, len_b)
    s_safe, l_safe = np.maximum(s, 1), np.maximum(l_, 1)
    depth = np.arange(1, width + 1, dtype=np.float64)[None, :]
    weight = p**depth
    within_l = depth <= l_[:, None]
    x_s = np.where(s > 0, np.take_along_axis(overlap, (s_safe - 1)[:, None], axis=1)[:, 0], 0.0)
    x_l = np.take_along_axis(overlap, (l_safe - 1)[:, None], axis=1)[:, 0]
    seen = (overlap / depth * weight * within_l).sum(axis=1)
    beyond_s = within_l & (depth > s[:, None])
    short_tail = ((depth - s[:, None]) / depth * weight * beyond_s).sum(axis=1) * x_s / s_safe
    extrapolated = ((x_l - x_s) / l_safe + x_s / s_safe) * p ** l_.astype(np.float64)
    value = (1.0 - p) / p * (seen + short_tail) + extrapolated
    value[s == 0] = 0.0
    value[l_ == 0] = np.nan
    return value


def pairwise(
    runs: Mapping[str, np.ndarray],
    fn: Callable[..., np.ndarray] = rbo,
    **kwargs,
) -> dict[tuple[str, str], float]:
    """Mean over queries of ``fn(runs[x], runs[y], **kwargs)`` for every pair of runs (FIRE Table 3).

    Pairs follow the runs' order (``(first, second)``, ...). Queries where ``fn`` is undefined
    (NaN, both lists empty) are left out of the mean; a pair with no defined query gets NaN.
    """
    result = {}
    for x, y in combinations(runs, 2):
        values = np.asarray(fn(runs[x], runs[y], **kwargs), dtype=np.float64)
        defined = values[~np.isnan(values)]
        result[(x, y)] = float(defined.mean()) if defined.size else float("nan")
    return result


def overlap_table(runs: Mapping[str, np.ndarray], k: int = 10, p: float = 0.9) -> list[dict]:
    """FIRE Table 3's rows: mean top-``k`` overlap and RBO_ext (at ``p``) for every pair of runs."""
    overlaps = pairwise(runs, overlap_at_k, k=k)
    rbos = pairwise(runs, rbo, p=p, k=k)
    return [
        {"run_a": x, "run_b": y, "overlap": overlaps[(x, y)], "rbo": rbos[(x, y)]}
        for x, y in overlaps
    ]


# --------------------------------------------------------------------------------------------
# Leave-one-run-out positives (FIRE §4.2, Table 4 "New")
# --------------------------------------------------------------------------------------------


def contributors(
    runs: Mapping[str, np.ndarray], depth: int, rows: np.ndarray, items: np.ndarray
) -> np.ndarray:
    """Which pooled run retrieved each judged pair within ``depth``: bool, pairs x runs.

    ``runs`` maps names to item id matrices (queries x ranks, rows aligned); pair ``i`` is query
    row ``rows[i]`` with item ``items[i]``. Columns follow the runs' order. Pairs and run
    entries are packed into one int64 key each and matched with sorted membership tests.
    """
    if depth < 1:
        raise ValueError("depth must be at least 1")
    rows = np.asarray(rows, dtype=np.int64).ravel()
    items = np.asarray(items, dtype=np.int64).ravel()
    if rows.shape != items.shape:
        raise ValueError("rows and items must have the same length")
    matrices = [_ids(ids)[:, :depth] for ids in runs.values()]
    n_queries = _row_count(matrices)
    if rows.size and (rows.min() < 0 or rows.max() >= n_queries):
        raise ValueError("a pair names a query row the runs do not have")
    if items.size and items.min() < 0:
        raise ValueError("judged item ids must be non-negative")
    entries = []
    for ids in matrices:
        r, c = np.nonzero(ids >= 0)
        entries.append((r, ids[r, c]))
    *run_keys, pair_keys = _pack_pairs(n_queries, [*entries, (rows, items)])
    contrib = np.zeros((rows.size, len(matrices)), dtype=bool)
    for column, keys in enumerate(run_keys):
        contrib[:, column] = np.isin(pair_keys, keys)
    return contrib


def leave_one_out_mask(contrib: np.ndarray) -> np.ndarray:
    """Whether each judged pair stays known when each run is left out of the pool: pairs x runs.

    True where at least one *other* run contributed the pair, and also where no pooled run
    contributed it at all: such a pair was judged for another reason (an earlier campaign, an
    imported label set, a run pooled deeper or not given here), so leaving one pooled run out
    would not have removed it. False only where the run left out is the pair's sole
    contributor: the judged positives a new, unpooled model would find unjudged (FIRE Table 4
    "New"). Pass judged pairs only; the dataset's own positives need no pooling.
    """
    contrib = np.asarray(contrib, dtype=bool)
    if contrib.ndim != 2:
        raise ValueError("contrib must be a pairs x runs matrix")
    count = contrib.sum(axis=1, keepdims=True)
    return ((count - contrib) > 0) | (count == 0)


# --------------------------------------------------------------------------------------------
# Annotation budget (FIRE §4.3, Fig. 4, Appendix E)
# --------------------------------------------------------------------------------------------


def budget_bootstrap(
    per_query: np.ndarray,
    sizes: Sequence[int] = (500, 1000, 3000),
    resamples: int = 10_000,
    seed: int = 0,
) -> dict[int, np.ndarray]:
    """FIRE §4.3's bootstrap: ``|mean of N queries drawn with replacement - full mean|`` per resample.

    For each size ``N`` the result holds ``resamples`` absolute errors (one column per metric
    when ``per_query`` is queries x metrics, e.g. C@1, C@5, C@10 of Fig. 9, all drawn from
    the same resampled queries). Its 95th percentile is the score difference a sample of
    ``N`` annotated queries can tell apart at 95% confidence (Fig. 4; see
    :func:`budget_summary`). Each size has its own stream seeded by ``(seed, N)``, so a size's
    errors do not depend on which other sizes are asked for. Draws are made in chunks of
    about ``CHUNK_ELEMENTS``, keeping memory bounded.
    """
    values = _scores(per_query)
    full = values.mean(axis=0)
    result = {}
    for n in sizes:
        if n < 1:
            raise ValueError("sample sizes must be at least 1")
        rng = np.random.default_rng([seed, int(n)])
        errors = np.abs(_resampled_means(values, int(n), resamples, rng) - full)
        result[int(n)] = errors[:, 0] if np.ndim(per_query) == 1 else errors
    return result


def budget_summary(
    errors: Mapping[int, np.ndarray], quantiles: Sequence[float] = (0.5, 0.95)
) -> dict[int, dict[str, float | np.ndarray]]:
    """Per sample size, the mean and quantiles (keys ``"mean"``, ``"p50"``, ``"p95"``, ...) of the errors.

    ``p95`` is FIRE §4.3's figure: the effect size detectable at 95% confidence with that many
    annotated queries (0.029 C@1 at N = 1,000 on MSVD). Arrays come back per metric column
    for 2-D errors.
    """
    summary = {}
    for n, values in errors.items():
        row: dict[str, float | np.ndarray] = {"mean": _plain(np.mean(values, axis=0))}
        for q in quantiles:
            row[f"p{100 * q:g}"] = _plain(np.quantile(values, q, axis=0))
        summary[n] = row
    return summary


# --------------------------------------------------------------------------------------------
# Significance between runs
# --------------------------------------------------------------------------------------------


def randomization_test(
    a: np.ndarray, b: np.ndarray, permutations: int = 10_000, seed: int = 0
) -> float:
    """Two-sided p-value of the paired sign-flip randomization test on ``mean(a - b)``.

    Under the null hypothesis each query's difference is as likely to have the other sign
    (Fisher's randomization test, as in Smucker, Allan & Carterette 2007). With ``r`` of
    ``permutations`` random sign assignments giving ``|mean|`` at least the observed one, the
    p-value is ``(r + 1) / (permutations + 1)`` (Phipson & Smyth 2010), so never 0; identical
    runs give 1.
    """
    a, b = _paired(a, b)
    if permutations < 1:
        raise ValueError("permutations must be at least 1")
    diff = a - b
    observed = abs(float(diff.sum()))
    flipped = _sign_flip_sums(diff, permutations, np.random.default_rng(seed))
    tolerance = 1e-9 * max(float(np.abs(diff).sum()), 1.0)
    extreme = int(np.count_nonzero(np.abs(flipped) >= observed - tolerance))
    return (extreme + 1) / (permutations + 1)


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm-Bonferroni step-down adjusted p-values (Holm 1979), in the input order.

    The ``i``-th smallest of ``m`` p-values becomes ``max_{j <= i} min(1, (m - j + 1) p_(j))``,
    so adjusted values keep the raw order and never exceed 1; rejecting where the adjusted
    value is at most ``alpha`` controls the family-wise error rate at ``alpha``.
    """
    p = np.asarray(p_values, dtype=np.float64).ravel()
    if p.size and (np.isnan(p).any() or p.min() < 0 or p.max() > 1):
        raise ValueError("p-values must lie in [0, 1]")
    m = p.size
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(np.maximum.accumulate((m - np.arange(m)) * p[order]), 1.0)
    adjusted = np.empty(m)
    adjusted[order] = stepped
    return adjusted


def bootstrap_intervals(
    per_query: Mapping[str, np.ndarray],
    statistic: str = "mean",
    resamples: int = 2_000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, Interval]:
    """Each run's mean (or median) over queries with its percentile bootstrap interval.

    Efron & Tibshirani (1993, ch. 13): queries are drawn with replacement ``resamples`` times
    and the interval is the central ``level`` share of the resampled statistic. Means are
    drawn on the same query draws for every run (:func:`_resampled_means`); medians, for
    rank-like scores such as MedR, on each run's own (:func:`_resampled_medians`). Seeded, so
    the same inputs give the same intervals.
    """
    if statistic not in ("mean", "median"):
        raise ValueError("statistic must be 'mean' or 'median'")
    names = list(per_query)
    if not names:
        return {}
    columns = [np.asarray(per_query[name], dtype=np.float64) for name in names]
    if any(column.ndim != 1 for column in columns) or len({c.size for c in columns}) > 1:
        raise ValueError("every run must have one score per query, in the same order")
    matrix = _scores(np.column_stack(columns))
    rng = np.random.default_rng(seed)
    if statistic == "mean":
        estimates = matrix.mean(axis=0)
        boot = _resampled_means(matrix, matrix.shape[0], resamples, rng)
    else:
        estimates = np.median(matrix, axis=0)
        boot = _resampled_medians(matrix, resamples, rng)
    return {
        name: percentile_interval(float(estimates[c]), boot[:, c], level)
        for c, name in enumerate(names)
    }


def compare_runs(
    per_query: Mapping[str, np.ndarray],
    resamples: int = 10_000,
    permutations: int = 10_000,
    seed: int = 0,
    level: float = 0.95,
    alpha: float = 0.05,
) -> list[dict]:
    """Every pair of runs on one per-query metric: difference, interval, p and Holm-adjusted p.

    One row per pair in the runs' order, with ``run_a``, ``run_b``, ``mean_a``, ``mean_b``,
    ``difference`` (``mean_a - mean_b``), ``ci_low``, ``ci_high`` (percentile bootstrap
    interval at ``level``, Efron & Tibshirani 1993, ch. 13), ``p``
    (:func:`randomization_test`, the same as calling it with ``seed``), ``p_holm``
    (:func:`holm` over all pairs) and ``significant`` (``p_holm <= alpha``). The bootstrap
    resamples queries once for all runs, so every pair's interval comes from the same
    resampled query sets.
    """
    names = list(per_query)
    if len(names) < 2:
        return []
    columns = [np.asarray(per_query[name], dtype=np.float64) for name in names]
    if any(column.ndim != 1 for column in columns):
        raise ValueError("each run's per-query scores must be a vector")
    if len({column.size for column in columns}) > 1:
        raise ValueError("every run must have one score per query, in the same order")
    matrix = _scores(np.column_stack(columns))
    boot = _resampled_means(matrix, matrix.shape[0], resamples, np.random.default_rng(seed))
    means = matrix.mean(axis=0)
    rows = []
    for i, j in combinations(range(len(names)), 2):
        interval = percentile_interval(float(means[i] - means[j]), boot[:, i] - boot[:, j], level)
        rows.append(
            {
                "run_a": names[i],
                "run_b": names[j],
                "mean_a": float(means[i]),
                "mean_b": float(means[j]),
                "difference": interval.estimate,
                "ci_low": interval.low,
                "ci_high": interval.high,
                "p": randomization_test(matrix[:, i], matrix[:, j], permutations, seed),
            }
        )
    for row, adjusted in zip(rows, holm([row["p"] for row in rows]), strict=True):
        row["p_holm"] = float(adjusted)
        row["significant"] = bool(adjusted <= alpha)
    return rows


# --------------------------------------------------------------------------------------------
# Descriptive figures (FIRE Figs. 2, 3, 11, 12): plain numbers, no plotting
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Histogram:
    """Counts per integer bin; bin ``i`` holds ``lower[i] <= x < lower[i + 1]``, the last is open."""

    lower: np.ndarray
    labels: tuple[str, ...]
    counts: np.ndarray


@dataclass(frozen=True)
class Heatmap:
    """2-D counts: rows are caption-length bins, columns positives-per-query bins (Fig. 2)."""

    row_labels: tuple[str, ...]
    column_labels: tuple[str, ...]
    counts: np.ndarray


@dataclass(frozen=True)
class ByLength:
    """Per caption-length bin: query counts, each run's share correct and, for two 0/1 runs,
    the share of queries both, only one, or neither run gets right (Fig. 3's stacked bars).

    Shares are NaN in empty bins.
    """

    labels: tuple[str, ...]
    counts: np.ndarray
    share: dict[str, np.ndarray]
    joint: dict[str, np.ndarray] | None


def bin_labels(lower: Sequence[int]) -> tuple[str, ...]:
    """Labels for integer bins given by lower bounds: ``"1-5"``, ``"9"``, ..., ``"16+"``."""
    bounds = [int(x) for x in lower]
    labels = []
    for i, lo in enumerate(bounds):
        if i + 1 == len(bounds):
            labels.append(f"{lo}+")
        else:
            hi = bounds[i + 1] - 1
            labels.append(str(lo) if hi == lo else f"{lo}-{hi}")
    return tuple(labels)


def bin_index(values: np.ndarray, lower: Sequence[int]) -> np.ndarray:
    """Bin of each value for bins given by strictly increasing lower bounds.

    The last bin is open above; the first also takes values below its bound (an empty caption
    lands in ``"1-5"``), so every value has a bin and counts always add up to the queries.
    """
    bounds = np.asarray(lower, dtype=np.float64)
    if bounds.ndim != 1 or bounds.size == 0 or (np.diff(bounds) <= 0).any():
        raise ValueError("bins must be a non-empty, strictly increasing sequence of lower bounds")
    index = np.searchsorted(bounds, np.asarray(values, dtype=np.float64), side="right") - 1
    return np.maximum(index, 0)


def positives_per_query_histogram(
    n_positive: np.ndarray, bins: Sequence[int] | None = None
) -> Histogram:
    """How many queries have each number of known positives (Appendix F, Fig. 11).

    ``bins`` are lower bounds (e.g. :data:`DEFAULT_POSITIVE_BINS`); None gives one bin per
    count from 0 to the largest, as Fig. 11 plots them.
    """
    n_positive = np.asarray(n_positive, dtype=np.int64).ravel()
    if bins is None:
        bins = range(int(n_positive.max()) + 1 if n_positive.size else 1)
    lower = np.asarray(list(bins), dtype=np.int64)
    counts = np.bincount(bin_index(n_positive, lower), minlength=lower.size)
    return Histogram(lower, bin_labels(lower), counts)


def length_positive_heatmap(
    caption_lengths: np.ndarray,
    n_positive: np.ndarray,
    length_bins: Sequence[int] = DEFAULT_LENGTH_BINS,
    positive_bins: Sequence[int] = DEFAULT_POSITIVE_BINS,
) -> Heatmap:
    """Queries counted by caption-length bin and positives bin (FIRE §4.1, Fig. 2).

    Lengths are in words by default bins (any unit works with matching bins). The margins
    (sums over rows and columns) are Fig. 2's side histograms; the log scale is the plot's
    business.
    """
    lengths = np.asarray(caption_lengths).ravel()
    positives = np.asarray(n_positive).ravel()
    if lengths.shape != positives.shape:
        raise ValueError("caption_lengths and n_positive must have one value per query")
    n_rows, n_cols = len(length_bins), len(positive_bins)
    cell = bin_index(lengths, length_bins) * n_cols + bin_index(positives, positive_bins)
    counts = np.bincount(cell, minlength=n_rows * n_cols).reshape(n_rows, n_cols)
    return Heatmap(bin_labels(length_bins), bin_labels(positive_bins), counts)


def correct_by_length(
    caption_lengths: np.ndarray,
    correct: Mapping[str, np.ndarray],
    bins: Sequence[int] = DEFAULT_LENGTH_BINS,
) -> ByLength:
    """Per caption-length bin, each run's mean of a per-query score such as Correct@K (Fig. 3).

    With exactly two runs whose scores are all 0 or 1, ``joint`` also gives the shares of
    ``"both"``, ``"only <first>"``, ``"only <second>"`` and ``"neither"`` per bin, as Fig. 3
    stacks them for clip4clip and TeachText.
    """
    lengths = np.asarray(caption_lengths).ravel()
    index = bin_index(lengths, bins)
    n_bins = len(bins)
    counts = np.bincount(index, minlength=n_bins)
    scores = {}
    for name, values in correct.items():
        values = np.asarray(values, dtype=np.float64).ravel()
        if values.shape != lengths.shape:
            raise ValueError(f"run {name!r} must have one value per query")
        scores[name] = values
    share = {name: _bin_means(index, values, counts) for name, values in scores.items()}
    joint = None
    if len(scores) == 2 and all(np.isin(v, (0.0, 1.0)).all() for v in scores.values()):
        (first, x), (second, y) = scores.items()
        joint = {
            "both": _bin_means(index, x * y, counts),
            f"only {first}": _bin_means(index, x * (1 - y), counts),
            f"only {second}": _bin_means(index, (1 - x) * y, counts),
            "neither": _bin_means(index, (1 - x) * (1 - y), counts),
        }
    return ByLength(bin_labels(bins), counts, share, joint)


def positive_ranks_by_source(
    relevant_original: np.ndarray, relevant_judged: np.ndarray
) -> dict[str, np.ndarray]:
    """How many positives sit at each rank 1..depth, by source (Appendix G, Fig. 12).

    Inputs are bool queries x depth matrices for one run: whether the item at each rank is an
    original positive (the dataset's own) and whether it is judged relevant. A rank holding
    both counts as original; ``"judged"`` counts the judged-only positives FIRE adds. Returns
    ``"ranks"`` (1..depth), ``"original"`` and ``"judged"`` (counts per rank).
    """
    original = np.asarray(relevant_original, dtype=bool)
    judged = np.asarray(relevant_judged, dtype=bool)
    if original.ndim != 2 or original.shape != judged.shape:
        raise ValueError("both matrices must be queries x depth with the same shape")
    return {
        "ranks": np.arange(1, original.shape[1] + 1),
        "original": original.sum(axis=0),
        "judged": (judged & ~original).sum(axis=0),
    }


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _ids(ids: np.ndarray) -> np.ndarray:
    """A run's item ids as int64 queries x ranks, checked: padding only at the end, no repeats."""
    ids = np.asarray(ids)
    if ids.ndim != 2:
        raise ValueError("a run must be a queries x ranks matrix of item ids")
    ids = ids.astype(np.int64, copy=False)
    valid = ids >= 0
    if ids.shape[1] > 1:
        if (valid[:, 1:] & ~valid[:, :-1]).any():
            raise ValueError("padding (negative ids) must come after a list's last result")
        ordered = np.sort(ids, axis=1)
        if ((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)).any():
            raise ValueError("a ranked list repeats an item id")
    return ids


def _aligned(a: np.ndarray, b: np.ndarray, k: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Both runs checked, cut to ``k`` ranks and padded to the same width."""
    if k is not None and k < 1:
        raise ValueError("k must be at least 1")
    a, b = _ids(a)[:, :k], _ids(b)[:, :k]
    if a.shape[0] != b.shape[0]:
        raise ValueError("both runs must have one row per query, in the same order")
    width = max(a.shape[1], b.shape[1])
    return _padded(a, width), _padded(b, width)


def _padded(ids: np.ndarray, width: int) -> np.ndarray:
    if ids.shape[1] == width:
        return ids
    extra = np.full((ids.shape[0], width - ids.shape[1]), -1, dtype=np.int64)
    return np.hstack([ids, extra])


def _row_count(matrices: Sequence[np.ndarray]) -> int:
    counts = {m.shape[0] for m in matrices}
    if len(counts) > 1:
        raise ValueError("every run must have one row per query, in the same order")
    return counts.pop() if counts else 0


def _pack_pairs(n_rows: int, pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
    """(row, item) pairs as one int64 key each, the same :class:`~retrieval.ids.PairKeys` for
    every group given."""
    items = [np.asarray(i, dtype=np.int64) for _, i in pairs]
    keys = PairKeys.fit(n_rows, np.concatenate([np.zeros(0, np.int64), *items]))
    return [keys.pack(r, i) for (r, _), i in zip(pairs, items, strict=True)]


def _positions(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """0-based rank in ``b``'s row of each id of ``a`` (same-shape runs); the width where absent."""
    n_rows, width = a.shape
    pos = np.full(a.shape, width, dtype=np.int64)
    rows_b, cols_b = np.nonzero(b >= 0)
    rows_a, cols_a = np.nonzero(a >= 0)
    if rows_a.size == 0 or rows_b.size == 0:
        return pos
    keys_b, keys_a = _pack_pairs(n_rows, [(rows_b, b[rows_b, cols_b]), (rows_a, a[rows_a, cols_a])])
    order = np.argsort(keys_b)
    at, hit = lookup(keys_b[order], keys_a)
    pos[rows_a[hit], cols_a[hit]] = cols_b[order[at[hit]]]
    return pos


def _scores(per_query: np.ndarray) -> np.ndarray:
    """Per-query scores as float64 queries x columns, checked finite and non-empty."""
    values = np.asarray(per_query, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    if values.ndim != 2 or values.shape[0] == 0:
        raise ValueError("per-query scores must be a non-empty vector or queries x metrics matrix")
    if not np.isfinite(values).all():
        raise ValueError("per-query scores must be finite")
    return values


def _paired(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = _scores(a), _scores(b)
    if a.shape != b.shape or a.shape[1] != 1:
        raise ValueError("paired scores must be two vectors with one value per query")
    return a[:, 0], b[:, 0]


def _resampled_means(
    values: np.ndarray, n: int, resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Means (resamples x columns) of ``n`` rows of ``values`` drawn with replacement.

    With few distinct rows, a resample is one multinomial draw of how often each distinct row
    is picked (the same distribution as drawing row indices); otherwise row indices are drawn
    in chunks and each column gathered.
    """
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    n_rows, n_cols = values.shape
    distinct, counts = np.unique(values, axis=0, return_counts=True)
    means = np.empty((resamples, n_cols))
    if distinct.shape[0] * _FEW_VALUES_FACTOR <= n:
        share = counts / n_rows
        step = max(1, CHUNK_ELEMENTS // distinct.shape[0])
        for start in range(0, resamples, step):
            stop = min(start + step, resamples)
            picked = rng.multinomial(n, share, size=stop - start)
            means[start:stop] = picked @ distinct / n
        return means
    columns = [np.ascontiguousarray(values[:, c]) for c in range(n_cols)]
    step = max(1, CHUNK_ELEMENTS // n)
    for start in range(0, resamples, step):
        stop = min(start + step, resamples)
        index = rng.integers(0, n_rows, size=(stop - start, n))
        for c, column in enumerate(columns):
            means[start:stop, c] = column.take(index).sum(axis=1) / n
    return means


def _resampled_medians(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Medians (resamples x columns) of as many rows of ``values`` as it has, drawn with
    replacement, each column on its own draws.

    A column with few distinct values (ranks cut at a run's depth) is resampled as one
    multinomial draw of how often each value is picked, as in :func:`_resampled_means`, and
    its median read off the cumulative counts of the sorted values (the mean of the two
    middle ones for an even count); otherwise row indices are drawn in chunks.
    """
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    n_rows, n_cols = values.shape
    lower, upper = (n_rows + 1) // 2, n_rows // 2 + 1  # the 1-based middle positions
    medians = np.empty((resamples, n_cols))
    for c in range(n_cols):
        column = np.ascontiguousarray(values[:, c])
        levels, counts = np.unique(column, return_counts=True)
        few = levels.size * _FEW_VALUES_FACTOR <= n_rows
        step = max(1, CHUNK_ELEMENTS // (levels.size if few else n_rows))
        for start in range(0, resamples, step):
            stop = min(start + step, resamples)
            if few:
                below = np.cumsum(rng.multinomial(n_rows, counts / n_rows, stop - start), axis=1)
                low = levels[(below < lower).sum(axis=1)]
                high = levels[(below < upper).sum(axis=1)]
                medians[start:stop, c] = (low + high) / 2
            else:
                index = rng.integers(0, n_rows, size=(stop - start, n_rows))
                medians[start:stop, c] = np.median(column.take(index), axis=1)
    return medians


def _sign_flip_sums(diff: np.ndarray, permutations: int, rng: np.random.Generator) -> np.ndarray:
    """``sum(sign * diff)`` for ``permutations`` independent fair random signs per query.

    With few distinct non-zero differences, the number flipped among the queries sharing a
    value is one binomial draw. Otherwise signs come as random bytes, one per 8 queries, and
    a table of each byte's flipped sum per 8-query group turns a permutation into
    ``queries / 8`` lookups.
    """
    nonzero = diff[diff != 0]
    total = float(nonzero.sum())
    if nonzero.size == 0:
        return np.zeros(permutations)
    distinct, counts = np.unique(nonzero, return_counts=True)
    sums = np.empty(permutations)
    if distinct.size * _FEW_VALUES_FACTOR <= nonzero.size:
        step = max(1, CHUNK_ELEMENTS // distinct.size)
        for start in range(0, permutations, step):
            stop = min(start + step, permutations)
            flipped = rng.binomial(counts, 0.5, size=(stop - start, distinct.size))
            sums[start:stop] = total - 2.0 * (flipped @ distinct)
        return sums
    groups = -(-nonzero.size // 8)
    padded = np.zeros(groups * 8)
    padded[: nonzero.size] = nonzero
    bits = (np.arange(256)[:, None] >> np.arange(8)[None, :]) & 1  # byte x bit
    table = (padded.reshape(groups, 8) @ bits.T).ravel()  # group * 256 + byte
    offsets = np.arange(groups, dtype=np.intp) * 256
    step = max(1, CHUNK_ELEMENTS // groups)
    for start in range(0, permutations, step):
        stop = min(start + step, permutations)
        draws = rng.integers(0, 256, size=(stop - start, groups), dtype=np.uint8)
        sums[start:stop] = total - 2.0 * table.take(draws + offsets).sum(axis=1)
    return sums


def _bin_means(index: np.ndarray, values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    sums = np.bincount(index, weights=values, minlength=counts.size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def _plain(value: np.ndarray) -> float | np.ndarray:
    return float(value) if np.ndim(value) == 0 else np.asarray(value)

"""Analyses of runs and per-query scores behind FIRE §4 and Appendices D-G (pure numpy, no ORM).
Runs are queries x depth matrices of item ids (-1 padding); per-query scores are float vectors.
Overlap and RBO (§4.1, Table 3), leave-one-run-out positives (§4.2, Table 4), the budget bootstrap
(§4.3, Fig. 4), paired significance, and counts for Figs. 2, 3, 11 and 12. Resampling is seeded;
with few distinct values a resample is one multinomial or binomial draw over them (the same
distribution, far fewer random numbers)."""

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from retrieval.ids import PairKeys, lookup
from retrieval.scoring.intervals import Interval, percentile_interval

#: Elements per chunk of random draws: bounds memory (16 MiB of int64) whatever the sizes.
CHUNK_ELEMENTS = 1 << 21
#: Resample by distinct values when their count times this is at most the number of draws.
_FEW_VALUES_FACTOR = 16

#: Caption-length bins in words (lower bounds): roughly MSR-VTT/MSVD quintiles (FIRE Table 5).
DEFAULT_LENGTH_BINS = (1, 6, 9, 12, 16)
#: Positives-per-query bins (lower bounds), widening roughly logarithmically like Fig. 2's axis.
DEFAULT_POSITIVE_BINS = (0, 1, 2, 3, 4, 6, 11, 21, 51)


def overlap_at_k(a: np.ndarray, b: np.ndarray, k: int = 10) -> np.ndarray:
    """Per query, ``|A_k ∩ B_k| / max(|A_k|, |B_k|)``: FIRE Table 3's simple overlap of top-k.
    Padding never counts; both lists empty gives NaN; a repeated id, or padding before a list's last
    result, raises ``ValueError``."""
    a, b = _aligned(a, b, k)
    shared = ((_positions(a, b) < a.shape[1]) & (a >= 0)).sum(axis=1)
    longer = np.maximum((a >= 0).sum(axis=1), (b >= 0).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(longer > 0, shared / np.maximum(longer, 1), np.nan)


def rbo(a: np.ndarray, b: np.ndarray, p: float = 0.9, k: int | None = None) -> np.ndarray:
    """Per query, extrapolated rank-biased overlap RBO_ext, uneven lengths allowed. Webber, Moffat &
    Zobel (2010), "A similarity measure for indefinite rankings", eq. 32 (§4.2), as FIRE §4.1 uses
    for Table 3 (whose variant and ``p`` FIRE does not give). ``p`` is the persistence (expected
    depth ``1 / (1 - p)``); ``k`` truncates both runs first (None: all columns). Both lists empty
    gives NaN, one empty 0; bad lists raise as in :func:`overlap_at_k`."""
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
    """Per pair of runs, the mean of ``fn(runs[x], runs[y], **kwargs)`` over non-NaN queries."""
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


def contributors(
    runs: Mapping[str, np.ndarray], depth: int, rows: np.ndarray, items: np.ndarray
) -> np.ndarray:
    """Which pooled run retrieved each judged pair (``rows[i]``, ``items[i]``) within ``depth``:
    bool, pairs x runs in the runs' order."""
    if depth < 1:
        raise ValueError("depth must be at least 1")
    rows = np.asarray(rows, dtype=np.int64).ravel()
    items = np.asarray(items, dtype=np.int64).ravel()
    if rows.shape != items.shape:
        raise ValueError("rows and items must have the same length")
    matrices = [_ids(ids)[:, :depth] for ids in runs.values()]
    n_queries = row_count(matrices)
    if rows.size and (rows.min() < 0 or rows.max() >= n_queries):
        raise ValueError("a pair names a query row the runs do not have")
    if items.size and items.min() < 0:
        raise ValueError("judged item ids must be non-negative")
    entries = [(np.nonzero(ids >= 0)[0], ids[ids >= 0]) for ids in matrices]
    *run_keys, pair_keys = _pack_pairs(n_queries, [*entries, (rows, items)])
    contrib = np.zeros((rows.size, len(matrices)), dtype=bool)
    for column, keys in enumerate(run_keys):
        contrib[:, column] = np.isin(pair_keys, keys)
    return contrib


def leave_one_out_mask(contrib: np.ndarray) -> np.ndarray:
    """Whether each judged pair stays known when each run is left out of the pool: pairs x runs.
    False only where the run left out is the pair's sole contributor (FIRE Table 4 "New"); a pair no
    pooled run contributed was judged for another reason and stays. Pass judged pairs only."""
    contrib = np.asarray(contrib, dtype=bool)
    if contrib.ndim != 2:
        raise ValueError("contrib must be a pairs x runs matrix")
    count = contrib.sum(axis=1, keepdims=True)
    return ((count - contrib) > 0) | (count == 0)


def budget_bootstrap(
    per_query: np.ndarray,
    sizes: Sequence[int] = (500, 1000, 3000),
    resamples: int = 10_000,
    seed: int = 0,
) -> dict[int, np.ndarray]:
    """FIRE §4.3's bootstrap: ``|mean of N queries drawn with replacement - full mean|`` per
    resample. Per size ``N``, ``resamples`` errors (a column per metric for a queries x metrics
    input), each size on its own stream seeded by ``(seed, N)``; drawn in chunks of
    :data:`CHUNK_ELEMENTS`."""
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
    """Per sample size, the mean and quantiles (``"mean"``, ``"p50"``, ``"p95"``, ...) of the
    errors. ``p95`` is FIRE §4.3's effect size detectable at 95% confidence (per metric for 2-D
    errors)."""
    summary = {}
    for n, values in errors.items():
        row: dict[str, float | np.ndarray] = {"mean": _plain(np.mean(values, axis=0))}
        for q in quantiles:
            row[f"p{100 * q:g}"] = _plain(np.quantile(values, q, axis=0))
        summary[n] = row
    return summary


def randomization_test(
    a: np.ndarray, b: np.ndarray, permutations: int = 10_000, seed: int = 0
) -> float:
    """Two-sided p-value of the paired sign-flip randomization test on ``mean(a - b)``. Fisher's
    test as in Smucker, Allan & Carterette (2007); ``(r + 1) / (permutations + 1)`` (Phipson & Smyth
    2010), so never 0; identical runs give 1."""
    a, b = _scores(a), _scores(b)
    if a.shape != b.shape or a.shape[1] != 1:
        raise ValueError("paired scores must be two vectors with one value per query")
    if permutations < 1:
        raise ValueError("permutations must be at least 1")
    diff = a[:, 0] - b[:, 0]
    observed = abs(float(diff.sum()))
    flipped = _sign_flip_sums(diff, permutations, np.random.default_rng(seed))
    tolerance = 1e-9 * max(float(np.abs(diff).sum()), 1.0)
    extreme = int(np.count_nonzero(np.abs(flipped) >= observed - tolerance))
    return (extreme + 1) / (permutations + 1)


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm-Bonferroni step-down adjusted p-values (Holm 1979), in the input order, at most 1."""
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
    """Each run's mean (or median) over queries with its percentile bootstrap interval. Efron &
    Tibshirani (1993, ch. 13); means share query draws across runs, medians (rank-like scores such
    as MedR) use each run's own. Seeded."""
    if statistic not in ("mean", "median"):
        raise ValueError("statistic must be 'mean' or 'median'")
    names = list(per_query)
    if not names:
        return {}
    matrix = _run_matrix(per_query, "every run must have one score per query, in the same order")
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
    """Every pair of runs on one per-query metric: difference, interval, p and Holm-adjusted p. Rows
    (runs' order) hold ``run_a``, ``run_b``, ``mean_a``, ``mean_b``, ``difference``, ``ci_low``,
    ``ci_high`` (percentile bootstrap, Efron & Tibshirani 1993, ch. 13, on shared query draws),
    ``p`` (:func:`randomization_test`), ``p_holm`` and ``significant`` (``p_holm <= alpha``)."""
    names = list(per_query)
    if len(names) < 2:
        return []
    matrix = _run_matrix(per_query, "each run's per-query scores must be a vector")
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


@dataclass(frozen=True)
class Histogram:
    """Counts per integer bin ``lower[i] <= x < lower[i + 1]``, the last open above."""

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
    """Per caption-length bin: query counts, each run's share correct and, for two 0/1 runs, the
    both/only/neither shares (Fig. 3's stacked bars); NaN in empty bins."""

    labels: tuple[str, ...]
    counts: np.ndarray
    share: dict[str, np.ndarray]
    joint: dict[str, np.ndarray] | None


def bin_labels(lower: Sequence[int]) -> tuple[str, ...]:
    """Labels for integer bins given by lower bounds: ``"1-5"``, ``"9"``, ..., ``"16+"``."""
    bounds = [int(x) for x in lower]
    ups = zip(bounds, bounds[1:], strict=False)
    closed = [str(lo) if lo == up - 1 else f"{lo}-{up - 1}" for lo, up in ups]
    return (*closed, f"{bounds[-1]}+") if bounds else ()


def bin_index(values: np.ndarray, lower: Sequence[int]) -> np.ndarray:
    """Bin of each value for increasing lower bounds; values below the first bin join it."""
    bounds = np.asarray(lower, dtype=np.float64)
    if bounds.ndim != 1 or bounds.size == 0 or (np.diff(bounds) <= 0).any():
        raise ValueError("bins must be a non-empty, strictly increasing sequence of lower bounds")
    index = np.searchsorted(bounds, np.asarray(values, dtype=np.float64), side="right") - 1
    return np.maximum(index, 0)


def positives_per_query_histogram(
    n_positive: np.ndarray, bins: Sequence[int] | None = None
) -> Histogram:
    """How many queries have each number of known positives (Appendix F, Fig. 11); ``bins``: lower
    bounds, None one bin per count."""
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
    """Queries counted by caption-length bin and positives bin (FIRE §4.1, Fig. 2)."""
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
    """Per caption-length bin, each run's mean of a per-query score such as Correct@K (Fig. 3);
    ``joint`` for exactly two 0/1 runs."""
    lengths = np.asarray(caption_lengths).ravel()
    index = bin_index(lengths, bins)
    counts = np.bincount(index, minlength=len(bins))
    scores = {name: np.asarray(v, dtype=np.float64).ravel() for name, v in correct.items()}
    for name, values in scores.items():
        if values.shape != lengths.shape:
            raise ValueError(f"run {name!r} must have one value per query")
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
    """How many positives sit at each rank 1..depth, by source (Appendix G, Fig. 12). Inputs: bool
    queries x depth matrices (original positive, judged relevant) of one run; a rank holding both
    counts as original. Returns ``"ranks"``, ``"original"`` and ``"judged"``."""
    original = np.asarray(relevant_original, dtype=bool)
    judged = np.asarray(relevant_judged, dtype=bool)
    if original.ndim != 2 or original.shape != judged.shape:
        raise ValueError("both matrices must be queries x depth with the same shape")
    return {
        "ranks": np.arange(1, original.shape[1] + 1),
        "original": original.sum(axis=0),
        "judged": (judged & ~original).sum(axis=0),
    }


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
    a, b = (np.pad(ids, ((0, 0), (0, width - ids.shape[1])), constant_values=-1) for ids in (a, b))
    return a, b


def row_count(matrices: Iterable[np.ndarray]) -> int:
    """The query rows every run has (0 for none); ValueError when they differ."""
    counts = {m.shape[0] for m in matrices}
    if len(counts) > 1:
        raise ValueError("every run must have one row per query, in the same order")
    return counts.pop() if counts else 0


def _pack_pairs(n_rows: int, pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
    """(row, item) pairs as int64 keys, one :class:`~retrieval.ids.PairKeys` for every group."""
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


def _run_matrix(per_query: Mapping[str, np.ndarray], not_vector: str) -> np.ndarray:
    """Runs' per-query score vectors as a checked queries x runs matrix (:func:`_scores`);
    ``not_vector`` is the error for a run whose scores are not a vector."""
    columns = [np.asarray(scores, dtype=np.float64) for scores in per_query.values()]
    if any(column.ndim != 1 for column in columns):
        raise ValueError(not_vector)
    if len({column.size for column in columns}) > 1:
        raise ValueError("every run must have one score per query, in the same order")
    return _scores(np.column_stack(columns))


def _resampled_means(
    values: np.ndarray, n: int, resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Means (resamples x columns) of ``n`` rows of ``values`` drawn with replacement."""
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    n_rows, n_cols = values.shape
    distinct, counts = np.unique(values, axis=0, return_counts=True)
    means = np.empty((resamples, n_cols))
    if distinct.shape[0] * _FEW_VALUES_FACTOR <= n:
        share = counts / n_rows
        step = max(1, CHUNK_ELEMENTS // distinct.shape[0])
        for start, stop in _spans(resamples, step):
            picked = rng.multinomial(n, share, size=stop - start)
            means[start:stop] = picked @ distinct / n
        return means
    columns = [np.ascontiguousarray(values[:, c]) for c in range(n_cols)]
    step = max(1, CHUNK_ELEMENTS // n)
    for start, stop in _spans(resamples, step):
        index = rng.integers(0, n_rows, size=(stop - start, n))
        for c, column in enumerate(columns):
            means[start:stop, c] = column.take(index).sum(axis=1) / n
    return means


def _resampled_medians(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Medians (resamples x columns) of ``len(values)`` rows drawn with replacement, per column; a
    column with few values is one multinomial draw, its median read off cumulative counts."""
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
        for start, stop in _spans(resamples, step):
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
    """``sum(sign * diff)`` for ``permutations`` fair random signs per query: a binomial per
    distinct value when few, else random bytes looked up in a per-8-query table."""
    nonzero = diff[diff != 0]
    total = float(nonzero.sum())
    if nonzero.size == 0:
        return np.zeros(permutations)
    distinct, counts = np.unique(nonzero, return_counts=True)
    sums = np.empty(permutations)
    if distinct.size * _FEW_VALUES_FACTOR <= nonzero.size:
        step = max(1, CHUNK_ELEMENTS // distinct.size)
        for start, stop in _spans(permutations, step):
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
    for start, stop in _spans(permutations, step):
        draws = rng.integers(0, 256, size=(stop - start, groups), dtype=np.uint8)
        sums[start:stop] = total - 2.0 * table.take(draws + offsets).sum(axis=1)
    return sums


def _spans(total: int, step: int):
    """``(start, stop)`` of consecutive spans of at most ``step`` in ``range(total)``."""
    for start in range(0, total, step):
        yield start, min(start + step, total)


def _bin_means(index: np.ndarray, values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    sums = np.bincount(index, weights=values, minlength=counts.size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def _plain(value: np.ndarray) -> float | np.ndarray:
    return float(value) if np.ndim(value) == 0 else np.asarray(value)

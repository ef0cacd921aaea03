"""Pure: each pooled pair's probability of relevance, cross-fitted over queries.

The queries are split into seeded folds from their ids alone; each fold's pairs are predicted by
a model fitted on the labelled pairs of the other folds, so no query's prediction depends on its
own labels, nor on whether it was sampled for judging: what keeps prediction-powered and active
estimates unbiased whatever the predictor (cross-prediction, Zrnic & Candès, PNAS 2024; active
inference, Zrnic & Candès, ICML 2024; Angelopoulos et al., Science 2023). The model is
scikit-learn's ``HistGradientBoostingClassifier`` (NaN features routed natively); a soft target p
(a resolved posterior) enters as the pair twice, relevant with weight p and irrelevant with
weight 1 - p. Features are binned before the fit (:func:`_bin_edges`: at 16,700 pairs a
cross-fit fell from 4-12 s to under 1 s); one cross-fit of 550,000 pairs x 20 features with a
quarter labelled takes about 33 s on one quiet core, 155 s on a busy one
(``bench/predictor_bench.py``).

Calibration is on by default (isotonic): on the 1,500-video demo world
(``bench/predictor_world_bench.py``, 16,008 pairs, a tenth of the queries labelled) the trees
alone were overconfident, Brier score 0.204 while their mean p(1 - p) claimed 0.066, and with
the features shuffled 0.279 against the base rate's 0.233; isotonic calibration gave 0.171
(mean p(1 - p) 0.152) and 0.236. On the synthetic pool of ``bench/predictor_bench.py``
(logistic truth) the trees alone were already calibrated (expected calibration error 0.012
against 0.007 at 83,000 pairs) and calibration cost 1.2 to 1.7 times the time.
``calibration=None`` leaves it out; ``"sigmoid"`` is Platt's (``CalibratedClassifierCV`` on query-grouped inner splits of the training folds).

A fold whose training data has fewer than ``min_labelled`` labelled pairs or only one class
predicts its training labels' mean (the base rate; 0.5 with no labels at all) and is listed in
``Predictions.fallback``."""

from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from retrieval.prediction.features import PairFeatures

CALIBRATIONS = ("isotonic", "sigmoid")
MAX_TRAIN_PAIRS = 200_000
"""The most labelled pairs one fold trains on (a seeded subsample beyond that)."""
MIN_LABELLED = 20
"""Below this many labelled training pairs a fold predicts the base rate."""
MAX_ITER = 100
THREADS = 1
"""OpenMP threads per fit by default: on the two shared cores of the development machine one
thread fitted 550,000 pairs in 33 s and two in 46 s (``bench/RESULTS.md``); more threads than free
cores make the trees' parallel loops wait on each other."""
INNER_SPLITS = 3
CALIBRATE_FROM = 1_000
"""Labelled training pairs from which a fold is calibrated: isotonic steps fitted on fewer
flatten a small campaign's ranking into ties."""
MAX_BINS = 255
"""The trees' bins per column (scikit-learn's most, NaN apart)."""
_CLIP = 1e-15


@dataclass(frozen=True)
class Quality:
    """How the out-of-fold predictions of the labelled pairs fare against their targets p:
    cross-entropy ``log_loss``, ``brier`` (mean squared error) and ``auc`` against the hard labels
    p >= 0.5 (None unless both occur), beside what each fold's base rate would score."""

    labelled: int
    log_loss: float
    brier: float
    auc: float | None
    base_log_loss: float
    base_brier: float


@dataclass(frozen=True)
class Predictions:
    """Per pair the cross-fitted ``probability`` of relevance and the ``fold`` that predicted it;
    ``fitted``: folds predicted by a model (the others, ``fallback``, by their base rate);
    ``calibrated``: fitted folds that were calibrated; ``method``: what predicted them."""

    probability: np.ndarray
    fold: np.ndarray
    fitted: int
    calibrated: int
    fallback: tuple[int, ...]
    method: str
    quality: Quality | None


def cross_fit(
    features: PairFeatures | np.ndarray,
    groups: np.ndarray,
    targets: np.ndarray,
    *,
    folds: int = 5,
    seed: int = 0,
    calibration: str | None = "isotonic",
    max_iter: int = MAX_ITER,
    max_train_pairs: int = MAX_TRAIN_PAIRS,
    min_labelled: int = MIN_LABELLED,
    threads: int | None = THREADS,
) -> Predictions:
    """Cross-fitted probabilities of relevance for every pair. ``groups``: each pair's query
    (caption) id; ``targets``: the resolved probability of relevance in [0, 1] of each labelled
    pair, NaN where unlabelled. Deterministic for a ``seed``. ``threads`` caps the OpenMP threads
    the trees use (None: the library's default, every core)."""
    matrix = features.matrix if isinstance(features, PairFeatures) else np.asarray(features)
    if matrix.ndim != 2:
        raise ValueError("features must be a 2-D pairs x features matrix")
    matrix = matrix.astype(np.float32, copy=False)
    pairs = matrix.shape[0]
    groups = np.asarray(groups)
    targets = np.asarray(targets, dtype=np.float64)
    if groups.shape != (pairs,) or targets.shape != (pairs,):
        raise ValueError(f"groups and targets must hold one value per pair ({pairs})")
    labelled = ~np.isnan(targets)
    if ((targets[labelled] < 0) | (targets[labelled] > 1)).any():
        raise ValueError("targets must be probabilities in [0, 1] (NaN: unlabelled)")
    if folds < 2:
        raise ValueError("cross-fitting needs at least 2 folds")
    if calibration is not None and calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {CALIBRATIONS} or None")
    if min(max_iter, max_train_pairs, min_labelled, 1 if threads is None else threads) < 1:
        raise ValueError("max_iter, max_train_pairs, min_labelled and threads must be positive")
    fold = query_folds(groups, folds, seed)
    probability = np.empty(pairs)
    base = np.empty(pairs)
    fallback: list[int] = []
    calibrated = 0
    rng = np.random.default_rng(seed)
    count = int(fold.max(initial=-1)) + 1
    for f in range(count):
        here = fold == f
        train = np.flatnonzero(labelled & ~here)
        if train.size > max_train_pairs:
            train = np.sort(rng.choice(train, size=max_train_pairs, replace=False))
        p = targets[train]
        rate = float(p.mean()) if p.size else 0.5
        base[here] = probability[here] = rate  # a fitted model's predictions replace the latter
        if train.size < min_labelled or p.sum() <= 0 or (1 - p).sum() <= 0:
            fallback.append(f)
            continue
        with threadpool_limits(limits=threads, user_api="openmp"):
            model, was_calibrated = _fit(
                matrix[train], p, groups[train], calibration, max_iter=max_iter, seed=seed
            )
            probability[here] = model.predict_proba(matrix[here])[:, 1]
        calibrated += was_calibrated
    fitted = count - len(fallback)
    method = "base rate"
    if fitted:
        method = f"hist-gradient-boosting, {count}-fold cross-fit over queries"
        if calibrated:
            method += f", {calibration} calibration in {calibrated} of {fitted} folds"
        if fallback:
            method += f", base rate in {len(fallback)}"
    quality = _quality(targets[labelled], probability[labelled], base[labelled])
    return Predictions(probability, fold, fitted, calibrated, tuple(fallback), method, quality)


def query_folds(groups: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """Each pair's fold: the distinct query ids in a seeded random order dealt round-robin into
    ``folds`` (fewer when there are fewer queries), from the ids alone so that a query's fold
    never depends on labels or on which queries were sampled."""
    queries, query = np.unique(np.asarray(groups), return_inverse=True)
    order = np.random.default_rng(seed).permutation(queries.size)
    of_query = np.empty(queries.size, dtype=np.int64)
    of_query[order] = np.arange(queries.size) % max(min(folds, queries.size), 1)
    return of_query[query.ravel()]


def _fit(
    matrix: np.ndarray,
    p: np.ndarray,
    groups: np.ndarray,
    calibration: str | None,
    *,
    max_iter: int,
    seed: int,
) -> tuple["_Binned", bool]:
    """A classifier of the pairs ``matrix`` with soft targets ``p``: each pair once as relevant
    with weight p and once as irrelevant with weight 1 - p (zero weights dropped); calibrated
    on query-grouped inner splits when asked, from :data:`CALIBRATE_FROM` labelled pairs on,
    and every split holds both classes."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    n = p.size
    weight = np.concatenate([p, 1.0 - p])
    keep = weight > 0  # each pair as relevant (weight p), then as irrelevant (1 - p)
    rows, label, weight = np.tile(np.arange(n), 2)[keep], np.repeat([1, 0], n)[keep], weight[keep]
    edges = _bin_edges(matrix)
    x, group = _binned(matrix, edges)[rows], groups[rows]
    model = HistGradientBoostingClassifier(
        max_iter=max_iter, early_stopping=False, random_state=seed
    )
    enough = calibration is not None and n >= CALIBRATE_FROM
    splits = _inner_splits(group, label, weight) if enough else None
    if splits is None:
        return _Binned(model.fit(x, label, sample_weight=weight), edges), False
    from sklearn.calibration import CalibratedClassifierCV

    wrapped = CalibratedClassifierCV(model, method=calibration, cv=splits)
    return _Binned(wrapped.fit(x, label, sample_weight=weight), edges), True


@dataclass(frozen=True)
class _Binned:
    """A fitted classifier that reads features through the training bins (:func:`_bin_edges`)."""

    model: object
    edges: tuple[np.ndarray, ...]

    def predict_proba(self, matrix: np.ndarray) -> np.ndarray:
        return self.model.predict_proba(_binned(matrix, self.edges))


def _bin_edges(matrix: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per column, at most ``MAX_BINS`` - 1 increasing edges from the training pairs' finite
    values: their distinct values when few, else quantiles, as the trees' own binning chooses
    them. Binning before the fit gives each column few distinct values, so the trees skip their
    weighted-quantile search (a Python loop per bin that the duplicated soft-target rows' weights
    would otherwise start; each pair's two weights sum to one, so the pairs' plain quantiles are
    the rows' weighted ones)."""
    edges = []
    levels = np.linspace(0, 100, MAX_BINS + 1)[1:-1]
    for column in matrix.T:
        values = np.unique(column[np.isfinite(column)])
        if values.size > MAX_BINS:
            values = np.unique(
                np.percentile(column[np.isfinite(column)], levels, method="averaged_inverted_cdf")
            )
        edges.append(values)
    return tuple(edges)


def _binned(matrix: np.ndarray, edges: tuple[np.ndarray, ...]) -> np.ndarray:
    """Each value as the index of its bin (value <= edge), NaN kept: the same order of values
    to the trees, in at most ``MAX_BINS`` distinct values per column. A column the training
    pairs never filled (no edges: a proxy not cached, an assessor silent on those queries) is
    constant 0, which the trees never split on (scikit-learn cannot bin an all-NaN column)."""
    out = np.empty(matrix.shape, dtype=np.float32)
    for j, column in enumerate(matrix.T):
        code = np.searchsorted(edges[j], column, side="left").astype(np.float32)  # 0 if no edges
        out[:, j] = np.where(np.isnan(column) & (edges[j].size > 0), np.nan, code)
    return out


def _inner_splits(
    group: np.ndarray, label: np.ndarray, weight: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """Query-grouped (train, test) index splits of the training rows, or None when there are
    too few queries or a split lacks a class."""
    queries, of = np.unique(group, return_inverse=True)
    splits = min(INNER_SPLITS, queries.size)
    if splits < 2:
        return None
    part = (np.arange(queries.size) % splits)[of.ravel()]
    out = [(np.flatnonzero(part != s), np.flatnonzero(part == s)) for s in range(splits)]
    if any(np.unique(label[rows][weight[rows] > 0]).size < 2 for split in out for rows in split):
        return None
    return out


def _quality(p: np.ndarray, q: np.ndarray, base: np.ndarray) -> Quality | None:
    """Out-of-fold log loss, Brier score and AUC of the predictions ``q`` for targets ``p``."""
    if not p.size:
        return None
    hard = p >= 0.5
    auc = None
    if hard.any() and not hard.all():
        from sklearn.metrics import roc_auc_score

        auc = float(roc_auc_score(hard, q))
    return Quality(
        labelled=int(p.size),
        log_loss=_log_loss(p, q),
        brier=float(np.mean((q - p) ** 2)),
        auc=auc,
        base_log_loss=_log_loss(p, base),
        base_brier=float(np.mean((base - p) ** 2)),
    )


def _log_loss(p: np.ndarray, q: np.ndarray) -> float:
    q = np.clip(q, _CLIP, 1 - _CLIP)
    return float(-np.mean(p * np.log(q) + (1 - p) * np.log1p(-q)))

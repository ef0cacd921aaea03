"""Pure: means estimated from a few human values and a predictor for the rest, unbiased however
poor the predictor. :func:`ppi_mean` is the power-tuned prediction-powered mean of a
superpopulation (PPI, Angelopoulos et al. 2023; PPI++, Angelopoulos, Duchi & Zrnic 2023);
:func:`active_means` the mean over a finite set of units (a benchmark's queries) labelled under
Poisson sampling with known probabilities (active inference, Zrnic & Candès 2024), whose design
:func:`inclusion_probabilities` chooses. Intervals are normal (central limit) intervals."""

from collections.abc import Iterator
from dataclasses import asdict, dataclass

import numpy as np
from scipy.special import ndtri

LABELS, SAMPLING = "labels", "sampling"


@dataclass(frozen=True)
class ActiveEstimate:
    """A mean with its ``level`` normal interval ``[low, high]``; ``lam`` the power-tuning weight
    of the predictions used, ``labelled`` how many units had human values, and the estimated
    variance of the estimate split into ``variances["labels"]`` (noise of the human values) and
    ``variances["sampling"]`` (the predictor's error on what was not labelled, weighted by how
    rarely units were sampled); ``dominant`` names the larger."""

    estimate: float
    low: float
    high: float
    lam: float
    labelled: int
    variances: dict[str, float]
    level: float = 0.95

    @property
    def dominant(self) -> str:
        return LABELS if self.variances[LABELS] > self.variances[SAMPLING] else SAMPLING

    def as_dict(self) -> dict:
        return {**asdict(self), "dominant": self.dominant}


@dataclass(frozen=True)
class ActiveEstimates:
    """:class:`ActiveEstimate` for many columns sharing one sample, as arrays of one entry per
    column; ``estimates[j]`` is column ``j``'s."""

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    lam: np.ndarray
    labels_variance: np.ndarray
    sampling_variance: np.ndarray
    labelled: int
    level: float

    def __len__(self) -> int:
        return len(self.estimate)

    def __getitem__(self, column: int) -> ActiveEstimate:
        values = [float(a[column]) for a in (self.estimate, self.low, self.high, self.lam)]
        noise, sampling = float(self.labels_variance[column]), float(self.sampling_variance[column])
        variances = {LABELS: noise, SAMPLING: sampling}
        return ActiveEstimate(*values, self.labelled, variances, self.level)

    def __iter__(self) -> Iterator[ActiveEstimate]:
        return (self[column] for column in range(len(self)))


def _z(level: float) -> float:
    """The standard normal quantile of a two-sided ``level`` interval."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie strictly between 0 and 1, not {level!r}")
    return float(ndtri(0.5 + level / 2))


def _check_lam(lam: float | None) -> float | None:
    if lam is not None and not np.isfinite(lam):
        raise ValueError(f"lam must be a finite number or None, not {lam!r}")
    return None if lam is None else float(lam)


def _finite(name: str, values: np.ndarray) -> np.ndarray:
    if not np.isfinite(values).all():
        raise ValueError(f"{name} must be finite numbers")
    return values


def ppi_mean(
    y: np.ndarray,
    yhat: np.ndarray,
    yhat_unlabelled: np.ndarray,
    *,
    level: float = 0.95,
    lam: float | None = None,
) -> ActiveEstimate:
    """The prediction-powered mean of i.i.d. units: ``lam * mean(yhat_unlabelled) + mean(y - lam *
    yhat)``, with the variances of both terms (plug-in, 1/n) added. ``lam=1`` is PPI
    (Angelopoulos et al. 2023), ``lam=0`` the classical mean; None takes the PPI++ weight that
    minimises the variance, Cov(y, yhat) / ((1 + n/N) Var(yhat)), clipped to [0, 1] (Angelopoulos,
    Duchi & Zrnic 2023, power tuning for a mean; the covariance over the labelled pairs, the
    variance over all n + N predictions). There is no label noise term here (``labels`` is 0)."""
    z = _z(level)
    lam = _check_lam(lam)
    y, yhat, unlabelled = (
        _finite(name, np.asarray(a, dtype=np.float64))
        for name, a in (("y", y), ("yhat", yhat), ("yhat_unlabelled", yhat_unlabelled))
    )
    if y.ndim != 1 or yhat.shape != y.shape or unlabelled.ndim != 1:
        raise ValueError("y and yhat must be equal-length 1-D arrays, yhat_unlabelled 1-D")
    n, big_n = len(y), len(unlabelled)
    if n < 2 or big_n < 2:
        raise ValueError("ppi_mean needs at least two labelled and two unlabelled units")
    if lam is None:
        covariance = np.mean((y - y.mean()) * (yhat - yhat.mean()))
        spread = np.var(np.concatenate([yhat, unlabelled]), ddof=1)
        lam = float(np.clip(covariance / ((1 + n / big_n) * spread), 0, 1)) if spread > 0 else 1.0
    rectifier = y - lam * yhat
    estimate = lam * unlabelled.mean() + rectifier.mean()
    variance = lam**2 * unlabelled.var() / big_n + rectifier.var() / n
    half = z * np.sqrt(variance)
    low, high = float(estimate - half), float(estimate + half)
    variances = {LABELS: 0.0, SAMPLING: float(variance)}
    return ActiveEstimate(float(estimate), low, high, lam, n, variances, level)


def _check_design(labelled: np.ndarray, probabilities: np.ndarray) -> tuple[np.ndarray, ...]:
    labelled = np.asarray(labelled)
    if labelled.dtype != bool or labelled.ndim != 1:
        raise ValueError("labelled must be a 1-D bool mask, one entry per unit")
    pi = np.asarray(probabilities, dtype=np.float64)
    if pi.shape != labelled.shape:
        raise ValueError("probabilities must hold one probability per unit, as labelled does")
    if len(pi) == 0:
        raise ValueError("there must be at least one unit")
    bad = np.flatnonzero(~((pi > 0) & (pi <= 1)))  # NaN too
    if len(bad):
        at = bad[0]
        reason = " (a labelled unit had probability 0)" if labelled[at] and pi[at] == 0 else ""
        raise ValueError(
            f"inclusion probabilities must lie in (0, 1]; unit {at} has {pi[at]!r}{reason}"
        )
    return labelled, pi


def active_means(
    values: np.ndarray,
    predictions: np.ndarray,
    labelled: np.ndarray,
    probabilities: np.ndarray,
    *,
    noise_variance: np.ndarray | None = None,
    level: float = 0.95,
    lam: float | None = None,
) -> ActiveEstimates:
    """The mean over all N units of each of M columns (``values`` and ``predictions`` N x M) from
    one Poisson sample: unit i was labelled (``labelled[i]``) independently with known
    ``probabilities[i]`` in (0, 1] (Zrnic & Candès 2024, active inference with the
    Horvitz-Thompson correction). Per column,
    ``theta = (1/N) sum_i [lam f_i + xi_i / pi_i (y_i - lam f_i)]``
    is unbiased for mean(y) over the N units for any fixed ``lam`` and any predictor whose
    value for a unit does not depend on that unit's label (cross-fit upstream). Its design
    variance ``(1/N^2) sum_i (1 - pi_i)/pi_i (y_i - lam f_i)^2`` is estimated unbiasedly from
    the labelled units by ``(1/N^2) sum (1 - pi_i)/pi_i^2 (y_i - lam f_i)^2`` (units with pi = 1
    add nothing); ``noise_variance`` (N x M, the variance of each human value under its label
    posterior) adds ``(1/N^2) sum noise_i / pi_i^2`` over the labelled units, unbiased for the
    extra variance from label noise. ``values`` are read only where labelled. ``lam=None`` takes,
    per column, the weight minimising the estimated design variance: the weighted least squares
    slope of y on f over the labelled units with weights (1 - pi)/pi^2, clipped to [0, 1] (1 when
    every weight or prediction is 0, where lam changes nothing estimated); a weight read from the
    sample is no longer fixed, so the estimate is then unbiased only up to a term that vanishes
    as the sample grows, as with PPI++'s tuning."""
    z = _z(level)
    lam = _check_lam(lam)
    labelled, pi = _check_design(labelled, probabilities)
    f = _finite("predictions", np.asarray(predictions, dtype=np.float64))
    y = np.asarray(values, dtype=np.float64)
    if f.ndim != 2 or f.shape[0] != len(pi) or y.shape != f.shape:
        raise ValueError("values and predictions must be equal-shaped units x columns arrays")
    y = _finite("values where labelled", y[labelled])
    f_seen, pi_seen = f[labelled], pi[labelled][:, None]
    n_units = len(pi)
    weights = (1 - pi_seen) / pi_seen**2  # each labelled unit's share of the design variance
    if lam is None:
        slope_num = (weights * y * f_seen).sum(axis=0)
        slope_den = (weights * f_seen**2).sum(axis=0)
        safe = np.where(slope_den > 0, slope_den, 1.0)
        lams = np.where(slope_den > 0, np.clip(slope_num / safe, 0, 1), 1.0)
    else:
        lams = np.full(f.shape[1], lam)
    residual = y - lams * f_seen
    estimate = (lams * f.sum(axis=0) + (residual / pi_seen).sum(axis=0)) / n_units
    sampling = (weights * residual**2).sum(axis=0) / n_units**2
    labels = np.zeros_like(sampling)
    if noise_variance is not None:
        noise = np.asarray(noise_variance, dtype=np.float64)
        if noise.shape != f.shape:
            raise ValueError("noise_variance must have the shape of values (units x columns)")
        noise = _finite("noise_variance where labelled", noise[labelled])
        if (noise < 0).any():
            raise ValueError("noise_variance must not be negative")
        labels = (noise / pi_seen**2).sum(axis=0) / n_units**2
    half = z * np.sqrt(sampling + labels)
    ends = (estimate - half, estimate + half)
    return ActiveEstimates(estimate, *ends, lams, labels, sampling, int(labelled.sum()), level)


def active_mean(
    values: np.ndarray,
    predictions: np.ndarray,
    labelled: np.ndarray,
    probabilities: np.ndarray,
    *,
    noise_variance: np.ndarray | None = None,
    level: float = 0.95,
    lam: float | None = None,
) -> ActiveEstimate:
    """:func:`active_means` for one column: ``values``, ``predictions`` (and ``noise_variance``)
    one entry per unit."""
    y, f = (np.asarray(a, dtype=np.float64) for a in (values, predictions))
    if y.ndim != 1 or f.ndim != 1:
        raise ValueError("values and predictions must be 1-D, one entry per unit")
    if noise_variance is not None and np.ndim(noise_variance) != 1:
        raise ValueError("noise_variance must be 1-D, one entry per unit")
    noise = None if noise_variance is None else np.asarray(noise_variance, np.float64)[:, None]
    return active_means(
        y[:, None], f[:, None], labelled, probabilities, noise_variance=noise, level=level, lam=lam
    )[0]


def inclusion_probabilities(
    expected_error: np.ndarray,
    cost: np.ndarray,
    budget: float,
    *,
    random_share: float = 0.1,
) -> np.ndarray:
    """Each unit's probability of being labelled, spending ``budget`` in expectation:
    ``sum(pi * cost) == budget`` (all ones when the budget covers every unit).

    The design variance of :func:`active_means` is ``(1/N^2) sum e_i (1 - pi_i)/pi_i``, with e_i
    the expected squared error of the prediction for unit i (Zrnic & Candès 2024: the optimal
    probability grows as the square root of that error). Minimising ``sum e_i / pi_i`` subject to
    ``sum pi_i c_i = B`` (Lagrange: ``e_i / pi_i^2 = mu c_i``) gives ``pi_i = sqrt(e_i / (mu c_i))``,
    i.e. ``pi_opt = B sqrt(e_i / c_i) / sum_j sqrt(e_j c_j)``. It is mixed with the uniform design
    ``B / sum(c)``: ``pi = (1 - s) pi_opt + s B / sum(c)``, so every unit keeps at least
    ``s B / sum(c) > 0`` and estimates stay unbiased with bounded weights when the predicted
    errors are wrong. Probabilities above 1 are capped and the excess spread over the others in
    proportion (water-filling: ``pi_i = min(1, t q_i)`` with t solving the budget, which under
    the caps is also what the Lagrange conditions give). Zero expected error everywhere is the
    uniform design; a unit that costs nothing gets probability 1."""
    e = np.asarray(expected_error, dtype=np.float64)
    c = np.asarray(cost, dtype=np.float64)
    if e.ndim != 1 or c.shape != e.shape or len(e) == 0:
        raise ValueError("expected_error and cost must be equal-length non-empty 1-D arrays")
    if not (np.isfinite(e).all() and np.isfinite(c).all()) or (e < 0).any() or (c < 0).any():
        raise ValueError("expected_error and cost must be finite and non-negative")
    if not np.isfinite(budget) or budget <= 0:
        raise ValueError(f"budget must be a positive number, not {budget!r}")
    if not 0 < random_share <= 1:
        raise ValueError(f"random_share must lie in (0, 1], not {random_share!r}")
    pi = np.ones_like(c)
    paid = c > 0
    if budget >= c.sum():
        return pi
    e, c = e[paid], c[paid]
    uniform = np.full_like(c, budget / c.sum())
    total_root = np.sqrt(e * c).sum()
    optimal = budget * np.sqrt(e / c) / total_root if total_root > 0 else uniform
    shape = (1 - random_share) * optimal + random_share * uniform  # spends the budget exactly
    pi[paid] = _water_fill(shape, c, budget)
    return pi


def _water_fill(shape: np.ndarray, cost: np.ndarray, budget: float) -> np.ndarray:
    """``min(1, t * shape)`` with t such that ``sum(cost * min(1, t * shape)) == budget``, for a
    positive ``shape`` and ``budget < sum(cost)``. Units reach 1 in order of ``1 / shape``; with
    the first k capped the spend is ``C_k + t S_k`` (C_k their cost, S_k the others' cost-weighted
    shape), so k is the number of caps whose threshold spend stays within the budget."""
    order = np.argsort(-shape, kind="stable")  # the first to reach 1 first
    s, c = shape[order], cost[order]
    capped_cost = np.concatenate([[0.0], np.cumsum(c)[:-1]])
    rest = np.cumsum((c * s)[::-1])[::-1]
    spend_at_cap = capped_cost + rest / s  # the spend when unit k just reaches 1
    k = int(np.count_nonzero(spend_at_cap <= budget))
    if k == len(s):  # rounding: the budget covers every unit after all
        return np.ones_like(shape)
    t = (budget - capped_cost[k]) / rest[k]
    filled = np.minimum(1.0, t * s)
    filled[:k] = 1.0
    pi = np.empty_like(shape)
    pi[order] = filled
    return pi


def poisson_draw(probabilities: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A Poisson sample: each unit labelled independently with its probability (a bool mask)."""
    pi = np.asarray(probabilities, dtype=np.float64)
    if np.isnan(pi).any() or (pi < 0).any() or (pi > 1).any():
        raise ValueError("probabilities must lie in [0, 1]")
    return rng.random(pi.shape) < pi

"""Pure: a bootstrap percentile interval around an estimate, for run comparisons
(:mod:`retrieval.scoring.analysis`) and agreement (:mod:`annotation.campaign_read.agreement`)."""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Interval:
    """An estimate with its ``level`` (e.g. 0.95) percentile bootstrap interval ``[low, high]``."""

    estimate: float
    low: float
    high: float
    level: float


def percentile_interval(estimate: float, resampled: np.ndarray, level: float) -> Interval:
    """The central ``level`` share of the ``resampled`` values around ``estimate``. Efron &
    Tibshirani (1993, ch. 13), percentile method, with numpy's linear interpolation."""
    if not 0.0 < level < 1.0:
        raise ValueError("level must be strictly between 0 and 1")
    low, high = np.quantile(resampled, [(1 - level) / 2, 1 - (1 - level) / 2])
    return Interval(float(estimate), float(low), float(high), float(level))

"""The one bootstrap interval: percentiles of the resampled values around the estimate."""

import numpy as np
import pytest

from retrieval.scoring.intervals import percentile_interval


def test_percentile_interval():
    interval = percentile_interval(2.0, np.arange(101, dtype=np.float64), 0.9)
    assert interval.estimate == 2.0 and interval.level == 0.9
    assert (interval.low, interval.high) == pytest.approx((5.0, 95.0))
    with pytest.raises(ValueError, match="level"):
        percentile_interval(0.0, np.ones(3), 1.0)

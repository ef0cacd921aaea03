"""Prediction-powered and active means: against ppi_py, unbiased over every possible sample,
honest intervals by simulation, and the sampling design."""

import numpy as np
import ppi_py
import pytest

from retrieval.scoring.active_inference import (
    ActiveEstimate,
    active_mean,
    active_means,
    inclusion_probabilities,
    poisson_draw,
    ppi_mean,
)


def ppi_data(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n, big_n = 150 + 50 * seed, 3000
    skill = rng.uniform(0.2, 1.5)
    truth = rng.normal(0.4, 1.0, n + big_n)
    yhat = skill * truth + rng.normal(0.1, 0.6, n + big_n)
    y = truth[:n] + rng.normal(0, 0.3, n)
    return y, yhat[:n], yhat[n:]


@pytest.mark.parametrize("lam", [None, 0.0, 0.5, 1.0])
@pytest.mark.parametrize("seed", range(4))
def test_ppi_mean_agrees_with_ppi_py(seed, lam):
    y, yhat, unlabelled = ppi_data(seed)
    ours = ppi_mean(y, yhat, unlabelled, level=0.9, lam=lam)
    estimate = ppi_py.ppi_mean_pointestimate(y, yhat, unlabelled, lam=lam)
    low, high = ppi_py.ppi_mean_ci(y, yhat, unlabelled, alpha=0.1, lam=lam)
    estimate, low, high = (float(np.ravel(v)[0]) for v in (estimate, low, high))
    assert ours.estimate == pytest.approx(estimate, rel=1e-9)
    width, reference = ours.high - ours.low, high - low
    assert abs(width / reference - 1) < 1e-9, width / reference - 1  # same plug-in variances
    assert ours.low == pytest.approx(low, rel=1e-9)
    if lam is not None:
        assert ours.lam == lam
    assert 0 <= ours.lam <= 1
    assert ours.variances["labels"] == 0 and ours.dominant == "sampling"
    assert ours.labelled == len(y)


def masks_of(n: int) -> np.ndarray:
    """Every subset of ``n`` units as rows of a bool mask."""
    return (np.arange(2**n)[:, None] >> np.arange(n)[None, :] & 1).astype(bool)


@pytest.mark.parametrize("lam", [1.0, 0.4])
def test_active_mean_and_its_variance_are_unbiased_over_every_sample(lam):
    rng = np.random.default_rng(11)
    n = 10
    values = rng.random(n)
    predictions = np.clip(values + rng.normal(0, 0.3, n), 0, 1)
    pi = rng.uniform(0.1, 0.9, n)
    pi[[2, 7]] = 1.0  # always labelled
    noise = rng.uniform(0, 0.05, n)
    masks = masks_of(n)
    chance = np.prod(np.where(masks, pi, 1 - pi), axis=1)
    possible = chance > 0
    masks, chance = masks[possible], chance[possible]
    assert chance.sum() == pytest.approx(1.0, abs=1e-12)
    hidden = np.where(masks, values, np.nan)  # values are only read where labelled
    results = [
        active_mean(h, predictions, m, pi, lam=lam, noise_variance=noise)
        for h, m in zip(hidden, masks, strict=True)
    ]
    theta = np.array([r.estimate for r in results])
    sampling = np.array([r.variances["sampling"] for r in results])
    labels = np.array([r.variances["labels"] for r in results])
    truth = values.mean()
    assert chance @ theta == pytest.approx(truth, abs=1e-12)
    true_variance = chance @ (theta - truth) ** 2
    assert chance @ sampling == pytest.approx(true_variance, abs=1e-12)
    # label noise: E[sum over labelled of v / pi^2] / N^2 = sum v / pi / N^2
    assert chance @ labels == pytest.approx((noise / pi).sum() / n**2, abs=1e-12)
    assert all(r.lam == lam for r in results)


def test_everything_labelled_with_certainty_is_exact():
    values = np.array([0.2, 0.9, 0.4])
    result = active_mean(values, np.zeros(3), np.ones(3, bool), np.ones(3))
    assert result.estimate == pytest.approx(values.mean(), abs=1e-15)
    assert result.low == result.high == result.estimate
    assert result.variances == {"labels": 0.0, "sampling": 0.0}


def test_many_columns_equal_one_column_at_a_time():
    rng = np.random.default_rng(5)
    n, m = 300, 4
    values = rng.random((n, m))
    predictions = np.clip(values + rng.normal(0, 0.2, (n, m)), 0, 1)
    predictions[:, 3] = 0.0  # a predictor that says nothing: lam stays 1, harmless
    pi = inclusion_probabilities(rng.random(n), rng.integers(1, 10, n), 400.0)
    labelled = poisson_draw(pi, rng)
    noise = rng.uniform(0, 0.01, (n, m))
    together = active_means(values, predictions, labelled, pi, noise_variance=noise, level=0.9)
    assert len(together) == m
    for column, estimate in enumerate(together):
        alone = active_mean(
            values[:, column],
            predictions[:, column],
            labelled,
            pi,
            noise_variance=noise[:, column],
            level=0.9,
        )
        assert isinstance(alone, ActiveEstimate)
        mine, theirs = alone.as_dict(), estimate.as_dict()
        assert mine.pop("variances") == pytest.approx(theirs.pop("variances"), rel=1e-12)
        assert mine.pop("dominant") == theirs.pop("dominant")
        assert mine == pytest.approx(theirs, rel=1e-12)
        assert 0 <= alone.lam <= 1
    assert together[3].lam == 1.0


def coverage(values, predictions, pi, draws: int, seed: int) -> tuple[float, float]:
    """Share of ``draws`` Poisson samples whose 95% interval (tuned lam) holds the true mean,
    and the mean interval width."""
    rng = np.random.default_rng(seed)
    truth = values.mean()
    held, widths = 0, []
    for _ in range(draws):
        labelled = poisson_draw(pi, rng)
        result = active_mean(np.where(labelled, values, np.nan), predictions, labelled, pi)
        held += result.low <= truth <= result.high
        widths.append(result.high - result.low)
    return held / draws, float(np.mean(widths))


def test_intervals_cover_with_a_good_and_a_useless_predictor():
    rng = np.random.default_rng(2024)
    n = 2000
    chance = rng.beta(0.7, 0.7, n)  # each query's chance of a hit: the predictor's target
    values = (rng.random(n) < chance).astype(float)  # a 0/1 per-query metric such as C@1
    cost = rng.integers(1, 30, n).astype(float)
    budget = 0.15 * cost.sum()
    useless = rng.permutation(chance)
    widths = {}
    for name, predictions in (("good", chance), ("useless", useless)):
        pi = inclusion_probabilities(predictions * (1 - predictions), cost, budget)
        share, widths[name] = coverage(values, predictions, pi, 400, seed=len(name))
        print(f"{name} predictor: coverage {share:.3f}, mean width {widths[name]:.4f}")
        assert share >= 0.9
    assert widths["good"] < widths["useless"]


def test_inclusion_probabilities_meet_the_budget_with_caps_and_a_floor():
    rng = np.random.default_rng(9)
    n = 500
    error = rng.gamma(0.5, 1.0, n)
    error[:40] = 0.0
    error[40:45] = 1e4  # would want more than certainty
    cost = rng.integers(1, 20, n).astype(float)
    budget, share = 0.2 * cost.sum(), 0.1
    pi = inclusion_probabilities(error, cost, budget, random_share=share)
    assert pi @ cost == pytest.approx(budget, rel=1e-12)
    assert (pi <= 1).all() and (pi[40:45] == 1).all()
    floor = share * budget / cost.sum()
    assert pi.min() >= floor * (1 - 1e-12)
    assert (pi[:40] == pi[0]).all()  # no expected error: the floor, scaled with the rest
    # Uncapped units keep pi proportional to (1 - s) sqrt(e / c) * u + s * v for one scale.
    free = pi < 1
    mixed = (1 - share) * np.sqrt(error / cost) / np.sqrt(error * cost).sum() + share / cost.sum()
    ratio = pi[free] / mixed[free]
    assert ratio == pytest.approx(np.full(free.sum(), ratio[0]), rel=1e-12)


def test_inclusion_probabilities_uniform_and_monotone():
    cost = np.full(6, 3.0)
    assert inclusion_probabilities(np.full(6, 0.7), cost, 9.0) == pytest.approx(np.full(6, 0.5))
    assert inclusion_probabilities(np.zeros(6), cost, 9.0) == pytest.approx(np.full(6, 0.5))
    assert (inclusion_probabilities(np.ones(6), cost, 18.0) == 1).all()
    assert (inclusion_probabilities(np.ones(6), cost, 50.0) == 1).all()
    error = np.array([0.0, 0.01, 0.1, 0.2, 0.5, 300.0])
    pi = inclusion_probabilities(error, cost, 6.0)
    assert (np.diff(pi) >= 0).all() and pi[-1] == 1.0 and pi[0] > 0
    assert pi @ cost == pytest.approx(6.0, rel=1e-12)
    # a unit that costs nothing is labelled outright, without touching the budget
    free = inclusion_probabilities(np.ones(3), np.array([0.0, 2.0, 2.0]), 2.0)
    assert free == pytest.approx([1.0, 0.5, 0.5])


def test_poisson_draw_labels_each_unit_with_its_probability():
    rng = np.random.default_rng(1)
    pi = np.array([0.0, 0.25, 1.0])
    draws = np.array([poisson_draw(pi, rng) for _ in range(4000)])
    assert not draws[:, 0].any() and draws[:, 2].all()
    assert draws[:, 1].mean() == pytest.approx(0.25, abs=0.03)


GOOD = {
    "values": np.array([0.1, 0.5, 0.9]),
    "predictions": np.array([0.2, 0.5, 0.7]),
    "labelled": np.array([True, False, True]),
    "probabilities": np.array([0.5, 0.5, 1.0]),
}


@pytest.mark.parametrize(
    ("change", "options"),
    [
        ({"probabilities": np.array([0.5, 0.5, 0.0])}, {}),  # a labelled unit with pi = 0
        ({"probabilities": np.array([0.5, 0.0, 1.0])}, {}),
        ({"probabilities": np.array([0.5, 0.5, 1.5])}, {}),
        ({"probabilities": np.array([0.5, np.nan, 1.0])}, {}),
        ({"probabilities": np.array([0.5, 0.5])}, {}),
        ({"labelled": np.array([1, 0, 1])}, {}),
        ({"predictions": np.array([0.2, 0.5])}, {}),
        ({"predictions": np.array([0.2, np.nan, 0.7])}, {}),
        ({"values": np.array([np.nan, 0.5, 0.9])}, {}),  # missing where labelled
        ({}, {"level": 1.0}),
        ({}, {"lam": np.inf}),
        ({}, {"noise_variance": np.array([0.1, 0.1])}),
        ({}, {"noise_variance": np.array([-0.1, 0.1, 0.1])}),
    ],
)
def test_active_mean_rejects_bad_inputs(change, options):
    with pytest.raises(ValueError):
        active_mean(**{**GOOD, **change}, **options)


def test_active_mean_reads_values_only_where_labelled():
    hidden = np.array([0.1, np.nan, 0.9])
    assert active_mean(**{**GOOD, "values": hidden}) == active_mean(**GOOD)


@pytest.mark.parametrize(
    ("args", "options"),
    [
        ((np.ones(3), np.ones(2), 1.0), {}),
        ((np.array([-1.0, 1.0]), np.ones(2), 1.0), {}),
        ((np.ones(2), np.array([1.0, -1.0]), 1.0), {}),
        ((np.ones(2), np.ones(2), 0.0), {}),
        ((np.ones(2), np.ones(2), 1.0), {"random_share": 0.0}),
        ((np.ones(2), np.ones(2), 1.0), {"random_share": 1.5}),
    ],
)
def test_inclusion_probabilities_reject_bad_inputs(args, options):
    with pytest.raises(ValueError):
        inclusion_probabilities(*args, **options)


def test_ppi_mean_rejects_bad_inputs():
    with pytest.raises(ValueError):
        ppi_mean(np.ones(3), np.ones(2), np.ones(5))
    with pytest.raises(ValueError):
        ppi_mean(np.ones(1), np.ones(1), np.ones(5))
    with pytest.raises(ValueError):
        ppi_mean(np.ones(3), np.ones(3), np.ones(5), level=0.0)
    with pytest.raises(ValueError):
        poisson_draw(np.array([1.2]), np.random.default_rng(0))

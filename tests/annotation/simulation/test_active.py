"""The active policy offline: per-query metrics against the world's own scorer and score
intervals, the estimates recomputed by hand from what the policy recorded, a perfect crowd
judging everything giving the truth, the crowd spec, and the simulated assessor's kappa."""

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from annotation.campaigns.pooling import Pool
from annotation.simulation import active, campaign, estimates, offline
from annotation.simulation.model import Outcome, World
from retrieval.prediction.features import pair_features
from retrieval.prediction.synthetic import flip_rate_for_kappa, simulated_assessor
from retrieval.scoring.active_inference import inclusion_probabilities
from tests.annotation.policy.test_label_value import synthetic_pool


def small_world(queries=40, seed=0, depth=6) -> World:
    """:func:`synthetic_pool`'s world of two runs, each caption's own video a positive outside
    the pool that the stronger run lists at rank ``depth`` on even queries (its pooled pair
    there dropped from that run's list)."""
    world = synthetic_pool(queries, candidates=14, strengths=(2.0, 1.0), depth=depth, seed=seed)
    pool = world.pool
    ranks = pool.ranks.copy()
    ranks[(pool.caption_ids % 2 == 0) & (ranks[:, 0] == depth), 0] = 0
    keep = ranks.any(axis=1)
    known = np.zeros(world.known_positive.shape, bool)
    known[::2, 0, depth - 1] = True
    pool = Pool(pool.caption_ids[keep], pool.video_ids[keep], ranks[keep])
    return World(
        pool, world.labels[keep], world.run_names, depth, known, np.ones(queries, np.int64)
    )


def features_of(world: World):
    return pair_features(world.pool.caption_ids, world.pool.ranks, run_names=world.run_names)


def test_query_metrics_are_the_worlds_scores_and_the_score_intervals_values():
    world = small_world()
    values = estimates.true_scores(world)
    scored = world.scores()
    n, labels = len(world.pool), world.labels
    truth = Outcome(np.arange(n), np.zeros(n, np.int64), labels, labels * 1.0, labels * 1)
    intervals = estimates.world_intervals(world, truth)
    for run in world.run_names:
        for metric in ("C@1", "C@5", "C@10", "AP"):
            assert values[run][metric] == pytest.approx(scored[run][metric], abs=1e-12)
        for metric in estimates.METRICS:
            assert values[run][metric] == pytest.approx(intervals[run][metric].value, abs=1e-12)


def test_the_expected_metrics_of_certain_probabilities_and_of_draws():
    world = small_world(queries=6)
    rng = np.random.default_rng(3)
    posterior = np.where(rng.random(len(world.pool)) < 0.5, 1.0, 0.0)
    # certain posteriors: no label noise at all
    noise = estimates.noise_variance(world, posterior, np.arange(6), rng, draws=8)
    assert all(np.allclose(values, 0, rtol=0, atol=1e-24) for values in noise.values())
    # one unsure pair: C@1 of the run ranking it first varies as a Bernoulli(0.5)
    first = int(np.flatnonzero((world.pool.ranks[:, 1] == 1) & (world.pool.caption_ids == 1))[0])
    posterior[world.layout.query_of == 1] = 0.0
    posterior[first] = 0.5
    noise = estimates.noise_variance(world, posterior, np.array([1]), rng, draws=4000)
    assert noise["C@1"][0, 1] == pytest.approx(0.25, abs=0.02)


def test_the_estimates_are_the_active_inference_formula_on_what_was_recorded():
    world = small_world(seed=1)
    crowd = offline.SimulatedCrowd.of([(1.0, 1.0, 1.0)], 6)
    settings = active.ActiveSettings(half_width=20, stages=1, value_first=True)
    result = active.simulate_active(world, crowd, features_of(world), settings=settings, seed=4)
    pi, judged = result.probability, result.judged
    assert 0 < judged.sum() < judged.size  # some queries drawn, not all
    assert np.all(pi[judged] > 0) and np.all((pi > 0) & (pi <= 1))
    resolved = result.outcome.posterior > 0.5
    # a perfect crowd: every judged query's pairs resolved to their truth
    in_judged = judged[world.layout.query_of]
    np.testing.assert_array_equal(resolved[in_judged], world.labels[in_judged])
    truth = estimates.query_metrics(world, world.labels.astype(float))
    for metric in estimates.METRICS:
        f, y = result.predicted[metric], truth[metric]
        got = result.estimates[metric]
        for r in range(world.pool.run_count):
            lam = got.lam[r]
            by_hand = np.mean(lam * f[:, r] + judged / pi * (y[:, r] - lam * f[:, r]))
            assert got.estimate[r] == pytest.approx(by_hand, abs=1e-9)
            weights = (1 - pi[judged]) / pi[judged] ** 2
            residual = y[judged, r] - lam * f[judged, r]
            design = (weights * residual**2).sum() / len(pi) ** 2
            assert got.sampling_variance[r] == pytest.approx(design, abs=1e-12)


def test_a_perfect_crowd_judging_every_query_gives_the_truth_and_only_label_noise():
    world = small_world(seed=2)
    crowd = offline.SimulatedCrowd.of([(1.0, 1.0, 1.0)], 6)
    settings = active.ActiveSettings(value_first=False, pilot=1.0, stages=1)
    result = active.simulate_active(world, crowd, features_of(world), settings=settings, seed=0)
    assert result.judged.all()
    truth = estimates.true_scores(world)
    for metric, got in result.estimates.items():
        for r, run in enumerate(world.run_names):
            assert got.estimate[r] == pytest.approx(truth[run][metric], abs=1e-9)
            assert got.sampling_variance[r] == 0  # every query judged, with probability 1
            assert got.low[r] <= got.estimate[r] <= got.high[r]


def test_drawn_queries_are_judged_to_the_live_in_full_confidence_or_the_cap():
    """As live (``tests/annotation/active``): a drawn query's every pair is asked until its
    posterior is 99.5% sure or it has the cap's labels, not just the campaign's 95%."""
    from annotation.policy.rules import DEFAULT_ADAPTIVE_CAP, IN_FULL_CONFIDENCE

    world = small_world(queries=60, seed=3)
    crowd = offline.SimulatedCrowd.of([(0.7, 0.9, 0.9), (0.3, 0.75, 0.75)], 12)
    settings = active.ActiveSettings(half_width=2, stages=2, value_first=True)
    result = active.simulate_active(world, crowd, features_of(world), settings=settings, seed=1)
    outcome = result.outcome
    counts = np.bincount(outcome.pair, minlength=len(world.pool))
    p = outcome.posterior
    in_judged = result.judged[world.layout.query_of]
    sure = np.maximum(p, 1 - p) >= IN_FULL_CONFIDENCE
    assert in_judged.any() and (sure | (counts >= DEFAULT_ADAPTIVE_CAP))[in_judged].all()
    # the value order alone stops at the campaign's confidence: some pairs outside stay below
    outside = ~in_judged & (counts > 0)
    assert (~sure[outside] & (counts[outside] < DEFAULT_ADAPTIVE_CAP)).any()


def test_the_plan_meets_its_variance_with_the_smallest_budget():
    rng = np.random.default_rng(0)
    spread = rng.random((50, 2, 3)) * 0.1
    cost = rng.integers(1, 10, 50).astype(float)
    cost[:5] = 0  # judged already
    variance = 2e-4
    pi = active.plan(spread, cost, variance, 0.1)
    error = spread.reshape(50, -1)
    design = (((1 - pi) / pi)[:, None] * error).sum(axis=0).max() / 50**2
    assert design <= variance * (1 + 1e-6)
    assert np.all(pi[:5] == 1)
    spend = float((pi * cost).sum())
    cheaper = inclusion_probabilities(error.sum(axis=1), cost, 0.97 * spend, random_share=0.1)
    assert (((1 - cheaper) / cheaper)[:, None] * error).sum(axis=0).max() / 50**2 > variance
    capped = active.plan(spread, cost, 1e-9, 0.1, budget=0.3 * cost.sum())
    assert (capped * cost).sum() == pytest.approx(0.3 * cost.sum())


def test_fire_and_adaptive_report_their_resolved_scores_beside_fire():
    world = small_world(seed=3)
    crowd = offline.SimulatedCrowd.parse(offline.QUALITY_BENCH_CROWD, 12)
    result = campaign.simulate_seed(world, crowd, "adaptive", 1)
    fire = offline.simulate(world, crowd, policy_name="fire", seed=1)
    assert result.fire == fire.spent
    assert set(result.spent) == {"qualification", "gold", "campaign"}
    for value, low, high in result.scores.values():
        assert low <= value <= high
    out = campaign.summary(world, "adaptive", [result])
    assert out["labels"]["fire"] == sum(fire.spent.values())
    assert {"run", "metric", "true", "estimate", "low", "high"} <= set(out["scores"][0])


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("0.5:0.1", "add up to 0.5"),
        ("0.5:0.1,0.5:maybe", "KIND must be"),
        ("half:0.1", "SHARE:KIND"),
        ("1:1.5", "KIND must be"),
    ],
)
def test_a_bad_crowd_spec_names_the_part(spec, message):
    with pytest.raises(ValueError, match=message):
        offline.SimulatedCrowd.parse(spec, 10)


def test_the_crowd_spec_reads_every_kind():
    crowd = offline.SimulatedCrowd.parse("0.5:0.1, 0.2:0.9/0.8, 0.1:random,0.1:no,0.1:YES", 10)
    assert crowd.sensitivity.tolist() == [0.9] * 5 + [0.9] * 2 + [0.5, 0.0, 1.0]
    assert crowd.specificity.tolist() == [0.9] * 5 + [0.8] * 2 + [0.5, 1.0, 0.0]


@pytest.mark.parametrize("kappa", [0.3, 0.6, 0.9])
def test_the_simulated_assessor_agrees_at_its_kappa(kappa):
    truth = np.random.default_rng(0).random(200_000) < 0.36
    said = simulated_assessor(truth, kappa, np.random.default_rng(1))
    assert cohen_kappa_score(truth, said) == pytest.approx(kappa, abs=0.01)
    assert flip_rate_for_kappa(0.36, 1.0) == pytest.approx(0, abs=1e-12)


def test_later_plans_scale_the_spread_by_the_drawn_queries_real_errors():
    misjudged = active.Misjudged(runs=2, metrics=1)
    assert misjudged.ratio().tolist() == [[[1.0], [1.0]]]  # nothing drawn yet
    drawn = np.array([True, True, False])
    pi = np.array([0.5, 1.0, 0.2])
    values = {"AP": np.array([[1.0, 0.5], [0.0, 0.5], [0.3, 0.3]])}
    predicted = {"AP": np.array([[0.5, 0.5], [0.5, 0.5], [0.0, 0.0]])}
    spread = np.array([[[0.05], [0.1]], [[0.05], [0.1]], [[1.0], [1.0]]])
    misjudged.add(values, predicted, spread, drawn, pi, ("AP",))
    # run 0: (0.25 / 0.5 + 0.25 / 1) / (0.05 / 0.5 + 0.05 / 1) = 0.75 / 0.15 = 5;
    # run 1: no error at all, so never below 1
    np.testing.assert_allclose(misjudged.ratio(), [[[5.0], [1.0]]])


def test_a_stage_the_budget_starves_is_not_drawn_and_the_last_estimates_stand():
    world = small_world(seed=5)
    crowd = offline.SimulatedCrowd.of([(1.0, 0.95, 0.95)], 6)
    pilot_only = active.ActiveSettings(value_first=False, pilot=0.3, stages=1)
    first = active.simulate_active(world, crowd, features_of(world), settings=pilot_only, seed=2)
    spent = int(first.outcome.spent["campaign"])  # the pilot's labels, and 5 more to spend:
    starved = active.ActiveSettings(value_first=False, pilot=0.3, stages=4, max_labels=spent + 5)
    result = active.simulate_active(world, crowd, features_of(world), settings=starved, seed=2)
    assert len(result.stages) == 1  # the next stage could not narrow anything: not drawn
    np.testing.assert_array_equal(result.judged, first.judged)
    assert np.all(result.probability == 0.3)
    for metric in estimates.METRICS:
        np.testing.assert_array_equal(
            result.estimates[metric].estimate, first.estimates[metric].estimate
        )


def test_the_label_noise_floor_is_what_any_later_stage_keeps_of_the_judged_queries():
    """:attr:`StageDesign.floor` is each settled score's label-noise variance from the judged
    queries at weight 1, the same Monte Carlo the estimates use; and whichever further queries
    a later design draws, with whatever probabilities, the estimate's label-noise variance
    never falls below it."""
    from retrieval.scoring.active_inference import active_means

    world = small_world(queries=30, seed=6)
    queries, runs = world.layout.pair_of.shape[0], world.pool.run_count
    rng = np.random.default_rng(0)
    posterior = rng.uniform(0.6, 1.0, len(world.pool)) * world.labels + rng.uniform(0, 0.3)
    posterior = np.clip(posterior, 0, 1)
    judged = np.zeros(queries, bool)
    judged[rng.choice(queries, 12, replace=False)] = True
    settle = ("C@1", "AP")
    design = active.stage_design(
        world, posterior, np.ones(len(world.pool), bool), 100, judged, posterior, settle,
        1e-4, 0.1, None, np.random.default_rng(7),
    )  # fmt: skip
    again = np.random.default_rng(7)  # the design's own draws, replayed: spread, then noise
    estimates.noise_variance(world, posterior, np.arange(queries), again)
    noise = estimates.noise_variance(world, posterior, np.flatnonzero(judged), again)
    assert design.floor.shape == (runs, len(settle))
    for j, metric in enumerate(settle):
        spread = np.zeros((queries, runs))
        spread[judged] = noise[metric]
        values = rng.random((queries, runs))
        for trial in range(20):
            pi = np.where(judged, 1.0, rng.uniform(0.05, 1.0, queries))
            drawn = judged | ((rng.random(queries) < pi) if trial else np.zeros(queries, bool))
            new = (drawn & ~judged)[:, None]  # a newly drawn query brings noise of its own
            brought = np.where(new, rng.random((queries, runs)) * 0.05, spread)
            got = active_means(values, values * 0.9, drawn, pi, noise_variance=brought)
            if trial == 0:  # nothing new drawn: the floor itself
                np.testing.assert_allclose(got.labels_variance, design.floor[:, j], rtol=1e-12)
            assert np.all(got.labels_variance >= design.floor[:, j] * (1 - 1e-12))


def test_only_noise_left_needs_every_open_score_at_its_floor():
    variance = 1.0
    current = np.array([[0.5, 2.0], [3.0, 0.9]])  # two scores open: (0, 1) and (1, 0)
    assert active.only_noise_left(np.array([[0.0, 1.5], [1.0, 0.0]]), current, variance)
    assert not active.only_noise_left(np.array([[0.0, 1.5], [0.9, 0.0]]), current, variance)
    assert not active.only_noise_left(np.ones((2, 2)) * 5, np.full((2, 2), 0.5), variance)


def test_no_stage_is_drawn_when_label_noise_alone_keeps_the_open_scores_wide():
    """A noisy crowd at ±1 on a small world: after the value-driven labels and one stage the
    widest interval is label noise the judged queries carry at any later weight, so the replay
    stops there rather than spend labels on new queries that cannot narrow it (without the
    rule this replay drew a second stage and widened the interval from 9.97 to 10.16)."""
    world = small_world(queries=60, seed=1)
    crowd = offline.SimulatedCrowd.of([(1.0, 0.7, 0.7)], 8)
    settings = active.ActiveSettings(half_width=1.0, stages=6, value_first=True)
    result = active.simulate_active(world, crowd, features_of(world), settings=settings, seed=1)
    assert len(result.stages) == 1 and not result.judged.all() and not result.settled
    variance = (settings.half_width / 100 / 1.959963984540054) ** 2
    current = active.score_variances(result.estimates, settings.settle)
    labels = np.stack([result.estimates[m].labels_variance for m in settings.settle], axis=1)
    assert (current > variance).any() and (labels[current > variance] >= variance).all()

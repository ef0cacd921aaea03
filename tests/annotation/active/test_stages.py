"""The active policy live: a stage's probabilities and predictions are stored before its queries
are served, the drawn queries are served first and judged in full, and the stage's estimates
are the active-inference means, checked here by hand from the labels the annotators gave."""

import json
import uuid
from dataclasses import replace
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command

from annotation.active import live as live_reads
from annotation.active import reading, stages
from annotation.campaigns.provenance import provenance
from annotation.judging import queue, submit
from annotation.models import ActiveStage, Campaign, Pair
from annotation.ordering.settle_width import ESTIMATE
from annotation.policy.rules import IN_FULL_CONFIDENCE
from tests.factories import make_campaign, make_user

Z95 = 1.959963984540054


def _rank(pair) -> int:
    return int(provenance(pair.campaign).ranks[pair.pool_row, 0])


def _truth(pair) -> bool:
    """Relevant at the run's top 1, 2 or 3 ranks, by query."""
    return _rank(pair) <= 1 + pair.caption_id % 3


def _answer(pair) -> str:
    return "relevant" if _truth(pair) else "irrelevant"


def _judge(campaign, annotator, count=None) -> list[Pair]:
    """Judge what the queue serves, ``count`` tasks (all when None); the pairs served."""
    served = []
    while count is None or len(served) < count:
        current = queue.assign(campaign, annotator).current
        if current is None:
            break
        served.append(current.pair)
        submit.submit(annotator, current.pair.pk, _answer(current.pair), uuid.uuid4())
    return served


def _by_hand(campaign, arrays: stages.StageArrays) -> dict[str, float]:
    """Each metric's active estimate and half-width, from the labels and the stored design."""
    pairs = list(Pair.objects.filter(campaign=campaign).order_by("caption_id", "pool_row"))
    depth = campaign.depth
    values = {metric: [] for metric in ("C@1", "C@5", "C@10", "AP", "nDCG@10")}
    for caption in arrays.caption_ids:
        own = [p for p in pairs if p.caption_id == caption]
        rel = np.zeros(depth)
        for pair in own:
            rel[_rank(pair) - 1] = pair.status == Pair.Status.RELEVANT
        total = rel.sum() + 1  # the caption's own video, never retrieved by the run
        hits = np.cumsum(rel)
        discount = 1 / np.log2(np.arange(2, depth + 2))
        ideal = (1 / np.log2(np.arange(2, int(min(total, 10)) + 2))).sum()
        values["C@1"].append(float(rel[:1].any()))
        values["C@5"].append(float(rel[:5].any()))
        values["C@10"].append(float(rel[:10].any()))
        values["AP"].append(float((rel * hits / np.arange(1, depth + 1)).sum() / total))
        values["nDCG@10"].append(float((rel * discount).sum() / ideal))
    result = {}
    pi, judged = arrays.probability, arrays.judged
    for m, (metric, y) in enumerate(values.items()):
        y, f = np.array(y), arrays.predicted[:, 0, m]
        n = y.size
        estimate = (f.sum() + ((y - f) / pi)[judged].sum()) / n
        variance = (((1 - pi) / pi**2) * (y - f) ** 2)[judged].sum() / n**2
        result[metric] = (estimate, Z95 * np.sqrt(variance))
    return result


@pytest.mark.django_db
def test_a_stage_is_stored_served_first_judged_in_full_and_estimated(django_user_model):
    campaign = make_campaign(n_queries=30, depth=4)
    annotator = django_user_model.objects.create_user("a", password="pw-active-1")
    _judge(campaign, annotator, 20)  # some labels before the first stage
    summary = stages.draw_stage(campaign, seed=5)
    stage = ActiveStage.objects.get(campaign=campaign)
    arrays = stages.StageArrays.of(stage)
    assert (summary.stage, stage.number, stage.seed, summary.queries) == (1, 1, 5, 30)
    assert stage.drawn == summary.drawn == int(arrays.judged.sum()) > 0
    assert arrays.predicted.shape == (30, 1, 5) and stage.run_names == ["m"]
    assert ((arrays.probability > 0) & (arrays.probability <= 1)).all()
    drawn = set(arrays.caption_ids[arrays.judged].tolist())
    campaign = Campaign.objects.get(pk=campaign.pk)
    assert set(campaign.settings.active_captions) == drawn
    # a second draw waits for this one
    with pytest.raises(live_reads.ActiveError, match="still being judged"):
        stages.draw_stage(campaign)
    # its queries come first (after the task already leased to the annotator), judged in full
    live = live_reads.live_campaign(campaign)
    waiting = int(np.isin(live.world.pool.caption_ids, list(drawn))[live.unfinished].sum())
    served = _judge(campaign, annotator, None)
    assert waiting > 1 and {pair.caption_id for pair in served[1 : waiting + 1]} <= drawn
    assert stages.unfinished_queries(arrays, live_reads.live_campaign(campaign)) == 0
    stage = stages.estimate_stage(campaign)
    assert stage.estimates is not None
    expected = _by_hand(campaign, arrays)
    for metric, (estimate, half) in expected.items():
        got = stage.estimates["m"][metric]
        assert got["estimate"] == pytest.approx(estimate, abs=1e-9), metric
        assert (got["high"] - got["low"]) / 2 == pytest.approx(half, abs=1e-9), metric
        # FIRE's policy: every resolved label is certain
        assert got["labels_variance"] == pytest.approx(0, abs=1e-12)
    spreads = reading.active_spreads(campaign)
    assert spreads["m"]["AP"].kind == ESTIMATE


@pytest.mark.django_db
def test_the_command_estimates_draws_and_stops_when_settled(django_user_model, client):
    campaign = make_campaign(n_queries=8, depth=3, half_width=50)
    out = StringIO()
    call_command("active_stage", campaign=campaign.name, draw=True, format="json", stdout=out)
    first = json.loads(out.getvalue())
    assert first["drawn"]["stage"] == 1 and first["estimates"] is None
    annotator = django_user_model.objects.create_user("a", password="pw-active-1")
    _judge(campaign, annotator)
    out = StringIO()
    call_command("active_stage", campaign=campaign.name, draw=True, format="json", stdout=out)
    second = json.loads(out.getvalue())
    assert second["estimated_stage"] == 1 and second["settled"] is True
    assert second["drawn"] is None and "nothing to draw" in second["not_drawn"]
    assert ActiveStage.objects.filter(campaign=campaign).count() == 1
    # the refusal replaces any earlier one on the stage; a settled campaign's page says
    # "judging can stop" instead of it
    assert ActiveStage.objects.get(campaign=campaign).stopped == second["not_drawn"]
    client.force_login(make_user("boss", "admin"))
    page = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert "judging can stop" in page and "No further stage is drawn" not in page
    out = StringIO()
    call_command("active_stage", campaign=campaign.name, stdout=out)
    assert "estimates of stage 1" in out.getvalue() and "settled" in out.getvalue()


@pytest.mark.django_db
def test_a_finished_stage_gives_every_rescored_score_its_active_interval(
    django_user_model, admin_client
):
    from annotation.campaign_read.resolution import resolve_campaign
    from retrieval.scoring.rescoring_service import rescore_dataset
    from retrieval.scoring.score_intervals import ACTIVE, LABEL_NOISE, PREDICTION

    campaign = make_campaign(n_queries=40, depth=4, judging_order="metric-first", budget=400)
    annotator = django_user_model.objects.create_user("a", password="pw-active-1")
    _judge(campaign, annotator, 30)
    stages.draw_stage(campaign, seed=2)
    stage = ActiveStage.objects.get(campaign=campaign)
    # the drawn queries are judged in full, served first; others stay partly unjudged
    arrays = stages.StageArrays.of(stage)
    while stages.unfinished_queries(arrays, live_reads.live_campaign(campaign)):
        assert _judge(campaign, annotator, 1)
    stage = stages.estimate_stage(campaign)
    assert stage.estimates is not None and Pair.objects.filter(label_count=0).exists()
    label_set = resolve_campaign(campaign, "active-labels")
    stored = label_set.metadata["active_estimates"]
    assert stored["stage"] == 1 and stored["queries"] == 40
    assert stored["estimates"] == stage.estimates  # the labels have not changed since
    intervals = rescore_dataset(campaign.dataset, label_set).result.intervals["m"]
    for metric in ("C@1", "C@5", "C@10", "AP", "nDCG@10"):
        value = stage.estimates["m"][metric]
        assert intervals[metric].parts == (ACTIVE,)
        # the interval names the part holding most of its variance
        noisy = value["labels_variance"] > value["sampling_variance"]
        assert intervals[metric].dominant == (LABEL_NOISE if noisy else PREDICTION)
        assert (intervals[metric].value, intervals[metric].low, intervals[metric].high) == (
            pytest.approx(value["estimate"]),
            pytest.approx(value["low"]),
            pytest.approx(value["high"]),
        )
    out = StringIO()
    call_command(
        "rescore", dataset=campaign.dataset.name, labels="active-labels", format="json", stdout=out
    )
    data = json.loads(out.getvalue())
    assert data["intervals"]["m"]["AP"]["parts"] == [ACTIVE]
    assert data["intervals"]["m"]["AP"]["dominant"] == intervals["AP"].dominant
    # the campaign page names it beside every score not yet within the half-width
    html = " ".join(admin_client.get(f"/campaigns/{campaign.pk}/").content.decode().split())
    unsettled = [
        intervals[m].dominant
        for m in campaign.settings.settle
        if (intervals[m].high - intervals[m].low) * 50 > campaign.settings.half_width
    ]
    assert unsettled and all(
        f'<span class="muted">mostly {part}</span>' in html for part in unsettled
    )


IMMEDIATE = {
    "default": {
        "BACKEND": "django_tasks.backends.immediate.ImmediateBackend",
        "QUEUES": ["default", "gpu", "media", "live"],
    }
}


def test_the_campaign_page_draws_a_stage_and_shows_its_state(
    people, client, settings, django_capture_on_commit_callbacks
):
    settings.TASKS = IMMEDIATE
    campaign = make_campaign(n_queries=10, depth=3, settle="c@1,ap,ndcg@10", half_width=50)
    client.force_login(people["admin"])
    html = " ".join(client.get(f"/campaigns/{campaign.pk}/").content.decode().split())
    # before any stage every score has its bounds (nothing judged: each anywhere in [0, 1])
    assert "Draw the first active stage" in html and "no interval yet" not in html
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post("/jobs/start/active-stage/", {"campaign": campaign.name, "draw": "on"})
    assert answer.status_code == 302
    assert ActiveStage.objects.filter(campaign=campaign).count() == 1
    html = " ".join(client.get(f"/campaigns/{campaign.pk}/").content.decode().split())
    assert "Active stage 1" in html and "still have pairs to label" in html
    assert "Estimate the last stage and draw the next" in html
    _judge(campaign, people["annotator"])
    # a page view computes nothing: the estimates wait for the job
    html = " ".join(client.get(f"/campaigns/{campaign.pk}/").content.decode().split())
    assert "No stage is judged in full yet" in html
    assert ActiveStage.objects.get(campaign=campaign).estimates is None
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/jobs/start/active-stage/", {"campaign": campaign.name})
    html = " ".join(client.get(f"/campaigns/{campaign.pk}/").content.decode().split())
    assert "The intervals above are stage 1's" in html and "judging can stop" in html
    assert "no interval yet" not in html and "3 of 3 scores settled to ±50.0 points" in html
    # annotators see no stage controls
    client.force_login(people["annotator"])
    assert "active-stage-form" not in client.get(f"/campaigns/{campaign.pk}/").content.decode()


@pytest.mark.django_db
def test_the_predictor_fit_stores_a_finished_stages_estimates(django_user_model):
    from annotation.prediction.jobs import run_fit_predictor
    from jobs.progress import Reporter

    campaign = make_campaign(n_queries=6, depth=3)
    stages.draw_stage(campaign, seed=1)
    run_fit_predictor(Reporter(None), campaign.name)  # still being judged: nothing to store
    assert ActiveStage.objects.get(campaign=campaign).estimates is None
    _judge(campaign, django_user_model.objects.create_user("a", password="pw-active-1"))
    summary = run_fit_predictor(Reporter(None), campaign.name)
    assert summary["active_stage"]["number"] == 1 and summary["active_stage"]["estimated"]
    assert ActiveStage.objects.get(campaign=campaign, number=1).estimates is not None
    # every query is judged now, so every score is exact: the stages stop, and say why
    assert "nothing to draw" in summary["active_stage"]["not_drawn"]


@pytest.mark.django_db
def test_the_predictor_fit_draws_the_next_stage_once_the_last_is_judged(django_user_model):
    from annotation.prediction.jobs import run_fit_predictor
    from jobs.progress import Reporter

    campaign = make_campaign(n_queries=60, depth=4, judging_order="metric-first")
    annotator = django_user_model.objects.create_user("a", password="pw-active-1")
    _judge(campaign, annotator, 40)
    first = stages.draw_stage(campaign, seed=1)
    arrays = stages.StageArrays.of(ActiveStage.objects.get(campaign=campaign, number=1))
    while stages.unfinished_queries(arrays, live_reads.live_campaign(campaign)):
        assert _judge(campaign, annotator, 1)
    summary = run_fit_predictor(Reporter(None), campaign.name)["active_stage"]
    assert summary["estimated"] and ("drawn" in summary or "not_drawn" in summary)
    if "drawn" in summary:  # drawn with the new predictions, after the first's queries
        assert summary["drawn"]["stage"] == 2 and summary["drawn"]["judged"] == first.drawn
        assert ActiveStage.objects.filter(campaign=campaign).count() == 2
    else:  # the budget left cannot narrow the interval: nothing new
        assert "cannot narrow" in summary["not_drawn"] or "settled" in summary["not_drawn"]


@pytest.mark.django_db
def test_under_the_adaptive_policy_drawn_queries_are_judged_in_full_with_label_noise(
    django_user_model, client
):
    campaign = make_campaign(
        n_queries=16, depth=4, policy="adaptive", judging_order="metric-first", seed=3,
        half_width=20,
    )  # fmt: skip
    people = [django_user_model.objects.create_user(n, password="pw-active-1") for n in "abcdef"]
    for annotator in people:
        _judge(campaign, annotator, 10)
    assert Pair.objects.filter(campaign=campaign, label_count=0).exists()  # value-first parks
    stages.draw_stage(campaign, seed=1)
    stage = ActiveStage.objects.get(campaign=campaign)
    arrays = stages.StageArrays.of(stage)
    drawn = arrays.caption_ids[arrays.judged]
    rounds = 0
    while stages.unfinished_queries(arrays, live_reads.live_campaign(campaign)) and rounds < 50:
        for annotator in people:  # the metric-aware order never parks a drawn query's pairs
            _judge(campaign, annotator, 5)
        rounds += 1
    assert not Pair.objects.filter(campaign=campaign, caption_id__in=drawn, label_count=0).exists()
    stage = stages.estimate_stage(campaign)
    values = stage.estimates["m"]
    assert all(v["low"] <= v["estimate"] <= v["high"] for v in values.values())
    assert any(v["labels_variance"] > 0 for v in values.values())  # posteriors, not certainty
    # a drawn query's pairs were asked to the higher confidence, up to the label cap
    live = live_reads.live_campaign(campaign)
    in_drawn = np.isin(live.world.pool.caption_ids, drawn)
    certainty = np.maximum(live.posterior, 1 - live.posterior)[in_drawn]
    labels = live.label_counts[in_drawn]
    assert ((certainty >= IN_FULL_CONFIDENCE) | (labels >= campaign.max_labels)).all()
    assert (labels > 1).any()  # more than the campaign's 0.95 asked for somewhere
    # while a second stage is judged, a label set carries the first's estimates
    campaign = Campaign.objects.get(pk=campaign.pk)
    # at ±0.05 points the judged queries' label noise alone is wider: no new queries drawn
    campaign.set_settings(replace(campaign.settings, half_width=0.05))
    with pytest.raises(live_reads.ActiveError, match="label noise alone") as refused:
        stages.draw_stage(campaign, seed=2)
    assert ActiveStage.objects.filter(campaign=campaign).count() == 1
    # the refusal is kept on the last stage for the campaign page and the API to say
    assert reading.stored_report(campaign)["stopped"] == str(refused.value)
    client.force_login(make_user("boss", "admin"))
    page = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert "No further stage is drawn: every open score&#x27;s label noise alone" in page
    campaign.set_settings(replace(campaign.settings, half_width=2))  # C@1 and AP still open
    stages.draw_stage(campaign, seed=2)
    assert reading.stored_report(campaign)["stopped"] == ""  # a stage followed after all
    assert stages.export_estimates(campaign)["stage"] == 1


@pytest.mark.django_db
def test_the_api_reads_the_stored_stages_and_changes_nothing(people, client, django_user_model):
    campaign = make_campaign(n_queries=6, depth=3)
    client.force_login(people["researcher"])
    empty = client.get(f"/api/campaigns/{campaign.pk}/active-stages/").json()
    assert (empty["stages"], empty["estimates"], empty["settled"]) == ([], None, False)
    stages.draw_stage(campaign, seed=1)
    _judge(campaign, django_user_model.objects.create_user("a", password="pw-active-1"))
    read = client.get(f"/api/campaigns/{campaign.pk}/active-stages/").json()
    assert read["stages"][0]["number"] == 1 and read["stages"][0]["estimated"] is False
    assert read["unfinished"] == 0 and read["estimates"] is None  # a GET computes nothing
    assert ActiveStage.objects.get(campaign=campaign).estimates is None
    stages.estimate_stage(campaign)
    read = client.get(f"/api/campaigns/{campaign.pk}/active-stages/").json()
    assert read["estimated_stage"] == 1 and set(read["estimates"]["m"]) == {
        "C@1", "C@5", "C@10", "AP", "nDCG@10"
    }  # fmt: skip


@pytest.mark.django_db
def test_a_stages_estimate_is_unbiased_over_every_draw_it_could_have_made(django_user_model):
    """Every subset of queries a stage could draw, weighted by its probability under the
    stored design: the mean estimate is every query's true mean, whatever the predictions."""
    import itertools

    campaign = make_campaign(n_queries=5, depth=3)
    annotator = django_user_model.objects.create_user("a", password="pw-active-1")
    _judge(campaign, annotator)  # every pair labelled: each query's value is known
    live = live_reads.live_campaign(campaign)
    metrics = list(stages.METRICS)
    rng = np.random.default_rng(4)
    pi = rng.uniform(0.2, 0.9, 5)
    predicted = rng.uniform(0, 1, (5, 1, len(metrics)))  # a poor predictor on purpose
    truth = stages.query_metrics(live.world, live.resolved)
    expected = np.zeros(len(metrics))
    for drawn in itertools.product([False, True], repeat=5):
        judged = np.array(drawn)
        weight = np.prod(np.where(judged, pi, 1 - pi))
        arrays = stages.StageArrays(live.queries, pi, judged, predicted)
        found = stages.stage_estimates(live, arrays, metrics, seed=0)
        expected += weight * np.array([found[m].estimate[0] for m in metrics])
    np.testing.assert_allclose(expected, [truth[m][:, 0].mean() for m in metrics], atol=1e-12)


@pytest.mark.django_db
def test_a_fully_judged_campaign_estimates_exactly_what_rescoring_computes(django_user_model):
    """Runs ranking every video, pooled at depth 3: a pair one run ranks 8th and another
    pooled counts in the first's AP, as the rescoring counts it."""
    from annotation.campaign_read.resolution import resolve_campaign
    from annotation.campaigns.service import CampaignSpec, create_campaign
    from retrieval.scoring.rescoring_service import rescore_dataset
    from tests.factories import query_dataset, random_run

    dataset, _, _ = query_dataset("active-deep", n=10)
    runs = [random_run(dataset, name, seed) for name, seed in (("r1", 1), ("r2", 2), ("r3", 3))]
    campaign = create_campaign(
        dataset, runs, CampaignSpec(name="deep", depth=3, second_label_rate=0.0)
    )
    annotator = django_user_model.objects.create_user("a", password="pw-active-1")
    while (current := queue.assign(campaign, annotator).current) is not None:
        relevant = (current.pair.caption_id + current.pair.video_id) % 3 == 0
        label = "relevant" if relevant else "irrelevant"
        submit.submit(annotator, current.pair.pk, label, uuid.uuid4())
    stages.draw_stage(campaign, seed=1)  # every query is judged: probability 1
    stage = stages.estimate_stage(campaign)
    scored = rescore_dataset(dataset, resolve_campaign(campaign, "deep-labels"))
    means = scored.result.means("corrected")
    for run in ("r1", "r2", "r3"):
        for metric in ("C@1", "C@5", "C@10", "AP", "nDCG@10"):
            found = stage.estimates[run][metric]
            assert found["estimate"] == pytest.approx(means[run][metric], abs=1e-12), metric
            assert found["low"] == pytest.approx(found["high"], abs=1e-12)


@pytest.mark.django_db
def test_later_stages_scale_their_spread_by_the_drawn_queries_real_errors(django_user_model):
    """As offline: a stage stores the spread that planned it, and the next plan scales it by
    the drawn queries' Horvitz-Thompson weighted real squared errors over it (never below 1)."""
    from annotation.simulation.estimates import METRICS, query_metrics

    campaign = make_campaign(n_queries=40, depth=4, judging_order="metric-first")
    annotator = django_user_model.objects.create_user("a", password="pw-active-1")
    _judge(campaign, annotator, 30)
    live = live_reads.live_campaign(campaign)
    assert np.all(stages._misjudged([], live) == 1.0)
    stages.draw_stage(campaign, seed=3)
    stage = ActiveStage.objects.get(campaign=campaign)
    arrays = stages.StageArrays.of(stage)
    assert arrays.spread.shape == arrays.predicted.shape == (40, 1, len(METRICS))
    # a plan far surer than the labels turn out: its spread a thousandth of what it stored
    arrays = replace(arrays, spread=arrays.spread / 1000)
    ActiveStage.objects.filter(pk=stage.pk).update(arrays=arrays.to_bytes())
    stage.refresh_from_db()
    while stages.unfinished_queries(arrays, live_reads.live_campaign(campaign)):
        assert _judge(campaign, annotator, 1)
    live = live_reads.live_campaign(campaign)
    drawn = arrays.judged
    rows = np.flatnonzero(drawn)
    values = query_metrics(live.world, live.resolved, rows)
    weight = 1 / arrays.probability[drawn]
    scaled = 0
    for m, metric in enumerate(METRICS):
        error = (weight * (values[metric][:, 0] - arrays.predicted[drawn, 0, m]) ** 2).sum()
        spread = (weight * arrays.spread[drawn, 0, m]).sum()
        expected = max(error / spread, 1.0) if spread > 0 else 1.0
        assert stages._misjudged([stage], live)[0, 0, m] == pytest.approx(expected)
        scaled += expected > 1
    assert scaled  # the labels moved some value further than the plan allowed

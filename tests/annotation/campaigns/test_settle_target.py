"""The scores a campaign must settle and their target half-width: typed settings and their
checks, the same values stored and refused through the form, the edit page, ``create_campaign``,
the pool job and read by the API, and the campaign page's "N of M scores settled" line."""

import io
import itertools
import json
import math

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import TestCase
from rest_framework.test import APIClient

from annotation.campaigns.forms import CampaignSettingsForm
from annotation.campaigns.settings import (
    DEFAULT_HALF_WIDTH,
    DEFAULT_SETTLE,
    CampaignSettings,
    SettingsError,
    settle_metrics,
)
from annotation.campaigns.spec import CampaignSpec
from annotation.models import Campaign
from annotation.ordering import settle_width, settled
from annotation.ordering.settled import RunExactness
from jobs import runner
from jobs.models import Job
from jobs.runner import JobError
from retrieval.scoring import metrics
from tests.factories import make_campaign, make_user, query_dataset, random_run, serve_all

IMMEDIATE = {
    "default": {
        "BACKEND": "django_tasks.backends.immediate.ImmediateBackend",
        "QUEUES": ["default", "gpu"],
    }
}

BAD = [
    # (form field, posted value, words the error must hold)
    ("settle", "c@2", "unknown metric"),
    ("settle", "c@1,C@1", "C@1 named twice"),
    ("settle", ",", "at least one"),
    ("settle", "recall", "unknown metric"),
    ("half_width", "0", "above 0"),
    ("half_width", "-1", "above 0"),
    ("half_width", "50.01", "at most 50"),
    ("half_width", "1e308", "at most 50"),
    ("half_width", "1e400", "number"),
    ("half_width", "nan", "number"),
    ("half_width", "inf", "number"),
    ("half_width", "one", "number"),
]


# --- settings (pure) -------------------------------------------------------------------------


def test_defaults_are_fire_scores_to_one_point_and_old_campaigns_read_them():
    assert DEFAULT_SETTLE == ("C@1", "C@5", "C@10", "AP")
    assert DEFAULT_HALF_WIDTH == 1.0
    old = CampaignSettings.from_options({"budget": 5})  # stored before these settings existed
    assert (old.settle, old.half_width) == (DEFAULT_SETTLE, 1.0)
    assert CampaignSettings().to_options() == {}
    spec = CampaignSpec.from_values({"name": "plain", "settle": "", "half_width": None})
    assert (spec.settings.settle, spec.settings.half_width) == (DEFAULT_SETTLE, 1.0)


def test_metrics_are_read_in_any_case_and_stored_in_canonical_order():
    assert settle_metrics("settle", "ndcg@10, ap,c@10,C@1") == ("C@1", "C@10", "AP", "nDCG@10")
    assert settle_metrics("settle", ["AP", "c@5"]) == ("C@5", "AP")
    chosen = CampaignSettings(settle=("C@5", "nDCG@10"), half_width=2.5)
    stored = chosen.to_options()
    assert stored == {"settle": ["C@5", "nDCG@10"], "half_width": 2.5}
    assert CampaignSettings.from_options(json.loads(json.dumps(stored))) == chosen
    assert CampaignSettings.from_options({"settle": ["ap", "C@1"]}).settle == ("C@1", "AP")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"settle": []}, "settle: must name at least one metric"),
        ({"settle": "AP"}, "settle: must be a list of metric names"),
        ({"settle": ["AP", "ap"]}, "settle: AP named twice"),
        ({"settle": ["P@5"]}, "settle: unknown metric 'P@5'"),
        ({"settle": [1]}, "settle: must be a list of metric names"),
        ({"half_width": 0}, "half_width: must be above 0 and at most 50"),
        ({"half_width": 50.5}, "half_width: must be above 0 and at most 50"),
        ({"half_width": "1"}, "half_width: must be a number"),
        ({"half_width": True}, "half_width: must be a number"),
        ({"half_width": float("nan")}, "half_width: must be above 0 and at most 50"),
        ({"half_width": float("inf")}, "half_width: must be above 0 and at most 50"),
        ({"half_width": 1e308}, "half_width: must be above 0 and at most 50"),
    ],
)
def test_bad_stored_values_are_refused_naming_the_field(options, message):
    with pytest.raises(SettingsError, match=message.replace("(", r"\(")):
        CampaignSettings.from_options(options)


def test_settings_built_directly_are_checked_too():
    with pytest.raises(SettingsError, match="settle: must be a tuple"):
        CampaignSettings(settle=("AP", "C@1"))  # not canonical
    with pytest.raises(SettingsError, match="half_width"):
        CampaignSettings(half_width=-0.5)


# --- settled to width (pure) -----------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_correct_at_bounds_are_half_the_range_every_labelling_leaves(seed):
    rng = np.random.default_rng(seed)
    queries = int(rng.integers(1, 9))
    exact = rng.random(queries) < 0.5
    values = rng.integers(0, 2, queries)
    means = [  # brute force: every 0/1 value of each query judging may still change
        np.where(exact, values, np.array(free)).mean()
        for free in itertools.product((0, 1), repeat=queries)
    ]
    spread = settle_width.correct_at_spreads([(5, float(exact.mean()))])["C@5"]
    assert spread.half_width == pytest.approx((max(means) - min(means)) / 2 * 100)
    assert spread.kind == (settle_width.EXACT if exact.all() else settle_width.BOUNDS)


def test_each_score_is_settled_against_the_target_and_counted():
    spreads = {
        "a": {
            "C@1": settle_width.Spread(settle_width.EXACT, 0.0),
            "C@5": settle_width.Spread.of_interval(settle_width.BOUNDS, 0.40, 0.46),
            "AP": settle_width.Spread.of_interval(settle_width.ESTIMATE, 0.30, 0.32),
        },
        "b": {"C@1": settle_width.Spread(settle_width.BOUNDS, 1.0)},
    }
    report = settle_width.settled_to_width(spreads, ("C@1", "C@5", "AP", "nDCG@10"), 1.0)
    cells = {(run.run, s.metric): s for run in report.runs for s in run.scores}
    assert cells["a", "C@1"].settled and cells["b", "C@1"].settled  # 1.0 is within ±1.0
    assert cells["a", "C@5"].spread.half_width == pytest.approx(3.0)
    assert not cells["a", "C@5"].settled and cells["a", "C@5"].now == "3.0"
    assert cells["a", "AP"].settled  # an estimate's interval ±1.0
    assert cells["a", "nDCG@10"].spread is None and not cells["a", "nDCG@10"].settled
    assert cells["b", "C@5"].spread is None  # no interval: never settled
    assert (report.settled, report.total, report.target_text) == (3, 8, "1.0")
    near = settle_width.ScoreWidth("C@1", settle_width.Spread("bounds", 1.04), False)
    assert near.now == "1.1"  # rounded up: not written as the target it misses
    widths = [
        settle_width.ScoreWidth("AP", settle_width.Spread("bounds", h), False)
        for h in (18.25, 7.5, 0.012)
    ]
    assert [width.now for width in widths] == ["18.3", "7.5", "0.02"]
    unknown = settle_width.ScoreWidth("AP", settle_width.Spread("estimate", math.nan), False)
    assert unknown.now == "nan"  # said as it is, never an error on the page
    assert settle_width.points(0.25) == "0.25" and settle_width.points(2) == "2.0"


def test_the_judging_status_gives_c_at_k_and_whole_query_bounds_for_ap_and_ndcg():
    runs = [RunExactness("m", ((1, 1.0), (5, 0.5), (10, 0.25)))]
    metrics = ("C@1", "C@5", "C@10", "AP", "nDCG@10")
    report = settle_width.from_exactness(runs, metrics, 25.0, decided_share=0.6)
    (run,) = report.runs
    widths = [s.spread.half_width for s in run.scores]
    assert widths == pytest.approx([0.0, 25.0, 37.5, 20.0, 20.0])
    assert [s.settled for s in run.scores] == [True, True, False, True, True]
    assert run.scores[3].spread.kind == settle_width.BOUNDS
    # an active stage's narrower interval wins; a wider one does not
    narrow = {"m": {"AP": settle_width.Spread(settle_width.ESTIMATE, 0.8)}}
    wide = {"m": {"AP": settle_width.Spread(settle_width.ESTIMATE, 30.0)}}
    for estimated, width in ((narrow, 0.8), (wide, 20.0)):
        report = settle_width.from_exactness(runs, ("AP",), 1.0, estimated, decided_share=0.6)
        assert report.runs[0].scores[0].spread.half_width == pytest.approx(width)
    every = settle_width.from_exactness(runs, ("AP",), 1.0, decided_share=1.0)
    assert every.runs[0].scores[0].spread == settle_width.Spread(settle_width.EXACT, 0.0)


@pytest.mark.parametrize("seed", range(8))
def test_whole_query_bounds_hold_ap_and_ndcg_under_every_labelling(seed):
    """Brute force: every labelling of the undecided pooled pairs (listed or not) gives mean AP
    and nDCG@10 within the bounds the decided queries leave; all decided, the scores are exact."""
    rng = np.random.default_rng(seed)
    queries, depth = int(rng.integers(1, 4)), 10
    listed = rng.random((queries, depth)) < 0.6  # pooled pairs this run lists
    relevant = listed & (rng.random((queries, depth)) < 0.4)
    own_rank = rng.integers(0, depth + 3, queries)  # the caption's own video (beyond: unlisted)
    undecided = listed & (rng.random((queries, depth)) < 0.3)
    unlisted_undecided = rng.integers(0, 2, queries) * (rng.random(queries) < 0.5)
    while undecided.sum() + unlisted_undecided.sum() > 10:  # keep the enumeration small
        undecided[np.argwhere(undecided)[0][0], np.argwhere(undecided)[0][1]] = False
        unlisted_undecided[:] = 0
    decided = (undecided.sum(axis=1) + unlisted_undecided) == 0
    cells = np.argwhere(undecided)
    extra = [q for q in range(queries) for _ in range(int(unlisted_undecided[q]))]
    means = {"AP": [], "nDCG@10": []}
    for bits in itertools.product((False, True), repeat=len(cells) + len(extra)):
        rel = relevant & ~undecided
        rel[tuple(cells.T)] = np.array(bits[: len(cells)], bool)
        own = own_rank < depth
        rel[np.flatnonzero(own), own_rank[own]] = True
        n_relevant = (
            rel.sum(axis=1)
            + (~own)
            + np.bincount(
                np.array(extra, np.int64)[np.array(bits[len(cells) :], bool)], minlength=queries
            )
        )
        judged = metrics.RankedJudgements(rel, rel, n_relevant, np.zeros(queries, np.int64))
        per_query = metrics.evaluate(judged, (1,), only=("AP", "nDCG@10"))
        for name in means:
            means[name].append(per_query[name].mean())
    spread = settle_width.whole_query_spread(float(decided.mean()))
    for name, found in means.items():
        assert (max(found) - min(found)) / 2 * 100 <= spread.half_width + 1e-9, name
    assert (spread.kind == settle_width.EXACT) == bool(decided.all())


@pytest.mark.django_db
def test_a_pair_waiting_for_its_second_label_keeps_every_score_open(people):
    """Every pair labelled once but asked twice (FIRE's double sample at rate 1): the live
    label may still be outvoted, so no query is decided, no C@K is exact and AP and nDCG keep
    full bounds."""
    campaign = make_campaign(rate=1.0, settle="ap,ndcg@10", half_width=50.0)
    assert serve_all(campaign, people["annotator"])
    status = settled.judging_status(campaign)
    assert status.labels_spent > 0 and status.decided_share == 0.0
    # nor is any C@K exact: each query's top pair may yet be outvoted
    assert [share for _, share in status.runs[0].shares] == [0.0] * len(status.ks)
    report = settle_width.from_exactness(
        status.runs, ("AP", "nDCG@10"), 1.0, decided_share=status.decided_share
    )
    assert [s.spread.half_width for s in report.runs[0].scores] == [50.0, 50.0]
    second = make_user("second", "annotator")
    serve_all(campaign, second)  # the second labels: every pair resolved
    status = settled.judging_status(campaign)
    assert status.decided_share == 1.0
    assert [share for _, share in status.runs[0].shares] == [1.0] * len(status.ks)


@pytest.mark.django_db
def test_under_the_adaptive_policy_a_pair_still_asked_for_labels_keeps_its_query_open(people):
    """Its status is already the posterior's guess, but more labels are coming: no score of
    its query is exact until the policy needs nothing more of any of its pairs."""
    campaign = make_campaign(n_queries=4, policy="adaptive", settle="c@1,ap")
    assert serve_all(campaign, people["annotator"], answer=lambda pair: "relevant")
    rows = list(campaign.pairs.values_list("caption_id", "status", "needed"))
    assert any(needed > 0 and status != "pending" for _, status, needed in rows)
    still_asked = {caption for caption, status, needed in rows if needed > 0 or status == "pending"}
    queries = {caption for caption, _, _ in rows}
    status = settled.judging_status(campaign)
    assert status.decided_share == pytest.approx(1 - len(still_asked) / len(queries))
    assert status.decided_share < 1.0


# --- the doors: form, command, job, API --------------------------------------------------------


def test_the_form_offers_boxes_and_a_number_and_builds_the_settings():
    form = CampaignSettingsForm()
    html = str(form["settle"]) + str(form["half_width"])
    assert html.count('type="checkbox"') == 5 and 'type="number"' in html
    assert "comma-separated" in form.fields["settle"].help_text
    assert "points" in form.fields["half_width"].help_text
    posted = CampaignSettingsForm(
        {"name": "f", "depth": "3", "settle": ["AP", "c@1"], "half_width": "2.5"}
    )
    assert posted.is_valid(), posted.errors
    assert (posted.spec().settings.settle, posted.spec().settings.half_width) == (
        ("C@1", "AP"),
        2.5,
    )
    text = CampaignSettingsForm({"name": "f", "depth": "3", "settle": "c@1,c@5,ap,ndcg@10"})
    assert text.is_valid(), text.errors
    assert text.spec().settings.settle == ("C@1", "C@5", "AP", "nDCG@10")


@pytest.mark.parametrize(("name", "value", "words"), BAD)
def test_the_form_refuses_bad_values_on_their_field(name, value, words):
    form = CampaignSettingsForm({"name": "f", "depth": "3", name: value})
    assert not form.is_valid()
    assert words in " ".join(form.errors.get(name, [])), form.errors


@pytest.fixture
def pooled(db, settings, tmp_path):
    settings.TASKS = IMMEDIATE
    settings.FIREPOOL_JOB_OUTPUT_DIR = tmp_path
    dataset, _, _ = query_dataset("settle-doors", n=6)
    random_run(dataset, "r", seed=1)
    return dataset


def _command(dataset, *extra) -> Campaign:
    args = ["--dataset", dataset.name, "--runs", "r", "--name", "by-command", "--depth", "2"]
    out = io.StringIO()
    call_command("create_campaign", *args, *extra, "--format", "json", stdout=out)
    assert json.loads(out.getvalue())["settle"] == list(Campaign.objects.get().settings.settle)
    return Campaign.objects.get(name="by-command")


def _job(dataset, **values) -> Campaign:
    with TestCase.captureOnCommitCallbacks(execute=True):
        job = runner.submit(
            "pool",
            {
                "dataset": dataset.name,
                "runs": "r",
                "name": "by-job",
                "depth": "2",
                "show_roles": "yes",
                **values,
            },
        )
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.error
    return Campaign.objects.get(name="by-job")


def test_command_and_job_store_the_same_settings(pooled):
    by_command = _command(pooled, "--settle", "ap,C@1,ndcg@10", "--half-width", "2.5")
    chosen = by_command.settings
    assert (chosen.settle, chosen.half_width) == (("C@1", "AP", "nDCG@10"), 2.5)
    by_command.delete()
    by_job = _job(pooled, settle="ap,C@1,ndcg@10", half_width="2.5")
    assert by_job.settings == chosen
    by_job.delete()
    plain = _command(pooled)
    assert (plain.settings.settle, plain.settings.half_width) == (DEFAULT_SETTLE, 1.0)
    assert "settle" not in plain.options and "half_width" not in plain.options


def test_the_command_help_names_both_options(capsys):
    with pytest.raises(SystemExit):
        call_command("create_campaign", "--help")
    text = " ".join(capsys.readouterr().out.split())
    assert "--settle SETTLE" in text and "--half-width HALF_WIDTH" in text
    assert "c@1,c@5,ap,ndcg@10" in text and "in points" in text


@pytest.mark.parametrize(("name", "value", "words"), BAD)
def test_command_and_job_refuse_bad_values_naming_the_field(pooled, name, value, words):
    option = "--" + name.replace("_", "-")
    with pytest.raises(CommandError, match=f"{option}: .*{words}"):
        _command(pooled, option, value)
    with pytest.raises(JobError, match=f"{name}: .*{words}"):
        _job(pooled, **{name: value})
    assert not Campaign.objects.exists() and not Job.objects.exists()


def test_the_api_reads_the_settings(people):
    campaign = make_campaign(settle="ndcg@10,c@5", half_width=0.5)
    client = APIClient()
    client.force_authenticate(people["admin"])
    (read,) = client.get("/api/campaigns/").json()
    assert read["id"] == campaign.pk
    assert (read["settle"], read["half_width"]) == (["C@5", "nDCG@10"], 0.5)
    plain = make_campaign()
    read = client.get(f"/api/campaigns/{plain.pk}/").json()
    assert (read["settle"], read["half_width"]) == (list(DEFAULT_SETTLE), 1.0)


# --- edit page and campaign page ---------------------------------------------------------------


def test_the_edit_page_changes_them_and_refuses_bad_values(people, client):
    campaign = make_campaign()
    client.force_login(people["admin"])
    page = client.get(f"/campaigns/{campaign.pk}/edit/")
    html = page.content.decode()
    assert 'name="settle" value="nDCG@10"' in html and 'name="half_width"' in html
    values = {k: v for k, v in page.context["form"].initial.items() if v is not None}
    assert values["settle"] == list(DEFAULT_SETTLE) and values["half_width"] == 1.0
    for name, value, words in BAD:
        answer = client.post(f"/campaigns/{campaign.pk}/edit/", {**values, name: value})
        assert answer.status_code == 400 and words in answer.content.decode()
    campaign.refresh_from_db()
    assert campaign.options == {}  # nothing changed
    values.update(settle=["AP", "C@10"], half_width="3")
    answer = client.post(f"/campaigns/{campaign.pk}/edit/", values)
    assert answer.status_code == 302, answer.content.decode()[:2000]
    campaign.refresh_from_db()
    assert (campaign.settings.settle, campaign.settings.half_width) == (("C@10", "AP"), 3.0)


def test_the_campaign_page_says_which_scores_are_settled_to_the_width(people, client):
    campaign = make_campaign(settle="c@1,ap,ndcg@10", half_width=1.0)
    client.force_login(people["admin"])
    html = " ".join(client.get(f"/campaigns/{campaign.pk}/").content.decode().split())
    assert "0 of 3 scores settled to ±1.0 points" in html
    assert "against the target of ±1.0 points" in html and "no interval yet" not in html
    assert '<td class="num">±50.0</td>' in html
    assert "C@1, AP, nDCG@10, each to a 95% interval of ±1.0 points" in html
    serve_all(campaign, people["annotator"])
    html = " ".join(client.get(f"/campaigns/{campaign.pk}/").content.decode().split())
    # every pair judged: C@1, AP and nDCG@10 exact
    assert "3 of 3 scores settled to ±1.0 points" in html
    assert html.count("<strong>settled</strong> (exact)") == 3


def test_the_new_page_pools_with_them_and_refuses_bad_values(pooled, people, client):
    client.force_login(people["admin"])
    html = client.get("/campaigns/new/", {"dataset": pooled.name}).content.decode()
    assert 'name="settle" value="AP"' in html and "Target half-width (points)" in html
    values = {"dataset": pooled.name, "runs": ["r"], "name": "by-page", "depth": "2"}
    for name, value, words in BAD:
        answer = client.post("/campaigns/new/", {**values, name: value})
        assert answer.status_code == 400 and words in answer.content.decode()
    assert not Job.objects.exists() and not Campaign.objects.exists()
    with TestCase.captureOnCommitCallbacks(execute=True):
        answer = client.post(
            "/campaigns/new/", {**values, "settle": ["nDCG@10", "C@5"], "half_width": "0.5"}
        )
    assert answer.status_code == 302, answer.content.decode()[:2000]
    chosen = Campaign.objects.get(name="by-page").settings
    assert (chosen.settle, chosen.half_width) == (("C@5", "nDCG@10"), 0.5)

"""A campaign's relevance predictor: its inputs read in bulk, fitted, stored, replaced, and run
only as a job or a command (never inside a judging request)."""

import io
import json
import uuid
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import TestCase
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.campaigns.provenance import provenance
from annotation.judging import queue, submit
from annotation.models import (
    AnnotatorModel,
    Assessor,
    Judgement,
    MachineJudgement,
    Pair,
    RelevancePredictor,
)
from annotation.policy import fit as policy_fit
from annotation.policy import label_models
from annotation.prediction import service, stored
from jobs import runner
from jobs.models import Job
from retrieval.proxies import PROXIES
from retrieval.proxies.service import ProxyOptions, relevance_frame
from tests.factories import make_campaign

IMMEDIATE = {
    "default": {
        "BACKEND": "django_tasks.backends.immediate.ImmediateBackend",
        "QUEUES": ["default", "gpu", "media", "live"],
    }
}
DUMMY = {"default": {**IMMEDIATE["default"], "BACKEND": "django_tasks.backends.dummy.DummyBackend"}}


def _people(django_user_model, *names):
    return [django_user_model.objects.create_user(n, password="pw-predict-1") for n in names]


def _judge_all(campaign, annotators, answer):
    """Each annotator judges what the queue serves them until nothing is left."""
    for annotator in annotators:
        while (current := queue.assign(campaign, annotator).current) is not None:
            label = answer(current.pair, annotator)
            submit.submit(annotator, current.pair.pk, label, uuid.uuid4())


def _rank(pair):
    """The rank the campaign's one run gave the pair."""
    return int(provenance(pair.campaign).ranks[pair.pool_row, 0])


def _by_rank(pair, annotator=None):
    """Relevant at the run's top three ranks."""
    return "relevant" if _rank(pair) <= 3 else "irrelevant"


def _pool(campaign):
    return list(Pair.objects.filter(campaign=campaign).order_by("pool_row"))


@pytest.mark.django_db
def test_every_pooled_pair_gets_a_stored_probability(django_user_model):
    campaign = make_campaign(n_queries=12, depth=6)
    (annotator,) = _people(django_user_model, "a")
    _judge_all(campaign, [annotator], _by_rank)
    fit = service.fit_predictor(campaign, seed=1)
    pool = _pool(campaign)
    assert fit.pairs == len(pool) == 72 and fit.labelled == 72
    assert fit.method.startswith("hist-gradient-boosting")
    assert fit.quality is not None and fit.quality["labelled"] == 72
    assert "rr:m" in fit.features and "caption_words" in fit.features
    pair_ids, probability = stored.stored_predictions(campaign)
    np.testing.assert_array_equal(pair_ids, [pair.pk for pair in pool])
    assert probability.dtype == np.float32
    assert ((probability >= 0) & (probability <= 1)).all()
    # the top three ranks are the relevant ones, and the predictor learnt it from the ranks
    top = np.array([_rank(pair) <= 3 for pair in pool])
    assert probability[top].min() > probability[~top].max()
    row = RelevancePredictor.objects.get(campaign=campaign)
    assert row.feature_names == list(fit.features) and row.labelled == 72


@pytest.mark.django_db
def test_a_campaign_without_labels_is_predicted_at_the_base_rate():
    campaign = make_campaign(n_queries=2, depth=3)
    fit = service.fit_predictor(campaign)
    assert (fit.labelled, fit.method, fit.quality) == (0, "base rate", None)
    _, probability = stored.stored_predictions(campaign)
    np.testing.assert_array_equal(probability, np.full(6, 0.5, np.float32))
    assert stored.stored_predictions(make_campaign(n_queries=1)) is None


@pytest.mark.django_db
def test_fire_targets_are_the_share_of_relevant_live_labels(django_user_model):
    campaign = make_campaign(n_queries=3, depth=3, rate=1.0)
    people = _people(django_user_model, "a", "b", "c")

    def split_votes(pair, annotator):
        relevant = (pair.pool_row + len(annotator.username)) % 2 or annotator.username == "a"
        return "relevant" if relevant else "irrelevant"

    _judge_all(campaign, people, split_votes)
    pool = _pool(campaign)
    # one label taken back, one pair adjudicated, one pair never judged
    undone = Judgement.objects.filter(pair=pool[0]).order_by("pk").first()
    Judgement.objects.filter(pk=undone.pk).update(undone_at=timezone.now())
    Pair.objects.filter(pk=pool[1].pk).update(adjudicated="irrelevant")
    Judgement.objects.filter(pair=pool[2]).delete()
    targets = service.predictor_inputs(campaign).targets
    for pair, target in zip(pool, targets, strict=True):
        pair.refresh_from_db()
        live = list(
            Judgement.objects.filter(pair=pair, undone_at__isnull=True).values_list(
                "label", flat=True
            )
        )
        if pair.adjudicated:
            expected = 1.0 if pair.adjudicated == "relevant" else 0.0
        elif not live:
            expected = np.nan
        else:
            expected = live.count("relevant") / len(live)
        np.testing.assert_equal(target, expected)
    assert np.isnan(targets[2]) and targets[1] == 0.0
    assert ((targets > 0) & (targets < 1)).any()  # split votes


@pytest.mark.django_db
def test_adaptive_targets_are_the_posteriors(django_user_model):
    campaign = make_campaign(n_queries=3, depth=3, policy="adaptive")
    people = _people(django_user_model, "a", "b")
    for annotator, accuracy in zip(people, (0.9, 0.6), strict=True):
        AnnotatorModel.objects.create(
            campaign=campaign,
            annotator=annotator,
            sensitivity=accuracy,
            specificity=accuracy - 0.05,
            evidence=50,
            fitted_at=timezone.now(),
        )

    def by_who(pair, annotator):
        return (
            "relevant" if (pair.pool_row + (annotator.username == "b")) % 3 == 0 else "irrelevant"
        )

    _judge_all(campaign, people, by_who)
    pool = _pool(campaign)
    Pair.objects.filter(pk=pool[-1].pk).update(adjudicated="relevant")
    Judgement.objects.filter(pair=pool[0]).delete()
    targets = service.predictor_inputs(campaign).targets
    for pair, target in zip(pool, targets, strict=True):
        pair.refresh_from_db()
        if pair.adjudicated:
            expected = 1.0
        elif not Judgement.objects.filter(pair=pair).exists():
            expected = np.nan
        else:
            expected = label_models.pair_posterior(pair, campaign)  # one pair at a time
        np.testing.assert_allclose(target, expected, rtol=1e-12)
    labelled = targets[1:-1]
    assert np.isnan(targets[0]) and ((labelled > 0) & (labelled < 1)).any()


@pytest.mark.django_db
def test_assessors_and_cached_proxies_are_feature_columns(settings):
    campaign = make_campaign(n_queries=3, depth=3)
    pool = _pool(campaign)
    missing = service.predictor_inputs(campaign).features
    for name in PROXIES:  # nothing cached: the columns are there, all NaN
        assert np.isnan(missing.column(f"proxy:{name}")).all()
    assert not [name for name in missing.names if name.startswith("assessor:")]

    scorer = Assessor.objects.create(campaign=campaign, name="vlm")
    labeller = Assessor.objects.create(campaign=campaign, name="judge")
    MachineJudgement.objects.bulk_create(
        [MachineJudgement(assessor=scorer, pair=pool[0], score=0.8, label="irrelevant")]
        + [MachineJudgement(assessor=scorer, pair=pool[4], score=0.1)]
        + [MachineJudgement(assessor=labeller, pair=pool[4], label="relevant")]
        + [MachineJudgement(assessor=labeller, pair=pool[5], label="irrelevant")]
    )
    # a cached bow matrix, as the proxy job would have left it
    frame = relevance_frame(campaign.dataset, ProxyOptions("bow", split="test"))
    rng = np.random.default_rng(0)
    matrix = rng.random((frame.video_ids.size, frame.items.representative.size)).astype(np.float32)
    settings.FIREPOOL_PROXY_CACHE_DIR.mkdir(parents=True, exist_ok=True)
    np.savez(frame.path, matrix=matrix, synset_source=np.array(""), seconds=np.array(0.0))

    features = service.predictor_inputs(campaign).features
    np.testing.assert_array_equal(
        features.column("assessor:vlm"), np.float32([0.8] + [np.nan] * 3 + [0.1] + [np.nan] * 4)
    )
    np.testing.assert_array_equal(
        features.column("assessor:judge"), [np.nan] * 4 + [1.0, 0.0] + [np.nan] * 3
    )
    caption_at = {pk: i for i, pk in enumerate(frame.caption_ids.tolist())}
    video_at = {pk: i for i, pk in enumerate(frame.video_ids.tolist())}
    expected = [
        matrix[video_at[p.video_id], frame.items.caption_text[caption_at[p.caption_id]]]
        for p in pool
    ]
    np.testing.assert_array_equal(features.column("proxy:bow"), np.float32(expected))
    for name in PROXIES[1:]:
        assert np.isnan(features.column(f"proxy:{name}")).all()
    # read from the cache, never computed: the one file there is the one written above
    cached = list(settings.FIREPOOL_PROXY_CACHE_DIR.glob("*.npz"))
    assert [path.name for path in cached] == [Path(frame.path).name]
    words = [len(p.caption.text.split()) for p in pool]
    np.testing.assert_array_equal(features.column("caption_words"), words)


def _labelled_campaign(n_queries, annotator):
    campaign = make_campaign(n_queries=n_queries, depth=4)
    pool = _pool(campaign)
    who = Assessor.objects.create(campaign=campaign, name="vlm")
    MachineJudgement.objects.bulk_create(
        [MachineJudgement(assessor=who, pair=pair, score=0.5) for pair in pool[::2]]
    )
    _judge_all(campaign, [annotator], _by_rank)
    return campaign


@pytest.mark.django_db
def test_the_fit_reads_in_a_constant_number_of_queries(django_user_model):
    annotator, other = _people(django_user_model, "a", "b")
    counts = []
    for n_queries, who in ((2, annotator), (8, other)):
        campaign = _labelled_campaign(n_queries, who)
        with CaptureQueriesContext(connection) as queries:
            fit = service.fit_predictor(campaign)
        assert fit.pairs == 4 * n_queries
        counts.append(len(queries))
    assert counts[0] == counts[1]


@pytest.mark.django_db
def test_a_refit_replaces_the_stored_row(django_user_model):
    campaign = make_campaign(n_queries=3, depth=3)
    first = service.fit_predictor(campaign)
    (annotator,) = _people(django_user_model, "a")
    _judge_all(campaign, [annotator], _by_rank)
    second = service.fit_predictor(campaign, seed=3)
    row = RelevancePredictor.objects.get(campaign=campaign)
    assert RelevancePredictor.objects.count() == 1
    assert (first.labelled, second.labelled, row.labelled) == (0, 9, 9)
    assert row.fitted_at == second.fitted_at > first.fitted_at


@pytest.mark.django_db
def test_the_command_prints_the_fit_as_json_by_name_or_id():
    campaign = make_campaign(n_queries=2, depth=3)
    for named in (campaign.name, str(campaign.pk)):
        out = io.StringIO()
        call_command("fit_predictor", "--campaign", named, "--format", "json", stdout=out)
        result = json.loads(out.getvalue())
        assert (result["campaign"], result["pairs"], result["labelled"]) == (campaign.name, 6, 0)
        assert result["method"] == "base rate" and "rr:m" in result["features"]
    out = io.StringIO()
    call_command("fit_predictor", "--campaign", campaign.name, "--seed", "4", stdout=out)
    assert "6 pairs predicted from 0 labelled" in out.getvalue()
    with pytest.raises(CommandError, match="no campaign"):
        call_command("fit_predictor", "--campaign", "nowhere")
    with pytest.raises(CommandError, match="seed"):
        call_command("fit_predictor", "--campaign", campaign.name, "--seed", "-1")


@pytest.mark.django_db
def test_the_job_runs_through_the_runner_and_stores_the_fit(settings):
    settings.TASKS = IMMEDIATE
    campaign = make_campaign(n_queries=2, depth=3)
    with TestCase.captureOnCommitCallbacks(execute=True):
        job = runner.submit(service.JOB_KIND, {"campaign": str(campaign.pk)})
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.arguments == {"campaign": campaign.name}  # the form names it
    assert job.result["pairs"] == 6
    assert stored.stored_predictions(campaign) is not None


@pytest.mark.django_db
def test_each_refit_queues_one_waiting_fit(settings, django_user_model):
    settings.TASKS = DUMMY
    campaign = make_campaign(n_queries=2, depth=3, policy="adaptive")
    (annotator,) = _people(django_user_model, "a")
    _judge_all(campaign, [annotator], _by_rank)
    with TestCase.captureOnCommitCallbacks(execute=True):
        policy_fit.refit(campaign)
    with TestCase.captureOnCommitCallbacks(execute=True):
        policy_fit.refit(campaign)  # the first fit still waits: no second one
    fits = Job.objects.filter(kind=service.JOB_KIND)
    assert [(job.status, job.arguments) for job in fits.all()] == [
        (Job.Status.QUEUED, {"campaign": campaign.name})
    ]
    assert not RelevancePredictor.objects.exists()  # queued, not run inline
    Job.objects.filter(kind=service.JOB_KIND).update(status=Job.Status.RUNNING)
    with TestCase.captureOnCommitCallbacks(execute=True):
        policy_fit.refit(campaign)  # a running fit read older labels: one more waits
    assert fits.filter(status=Job.Status.QUEUED).count() == 1 and fits.count() == 2


@pytest.mark.django_db
def test_fits_are_paced_by_their_cost(settings, django_user_model):
    settings.TASKS = DUMMY
    campaign = make_campaign(n_queries=2, depth=3, policy="adaptive")
    (annotator,) = _people(django_user_model, "a")
    _judge_all(campaign, [annotator], _by_rank)
    service.fit_predictor(campaign)
    stored = RelevancePredictor.objects.get(campaign=campaign)
    RelevancePredictor.objects.filter(pk=stored.pk).update(seconds=30.0)
    wait = label_models.pause(30.0, service.DUTY)
    assert wait >= timedelta(seconds=30.0 / 0.05)
    with TestCase.captureOnCommitCallbacks(execute=True):
        assert not service.request_fit(campaign, now=stored.fitted_at + wait / 2)
    assert not Job.objects.filter(kind=service.JOB_KIND).exists()
    with TestCase.captureOnCommitCallbacks(execute=True):
        assert service.request_fit(campaign, now=stored.fitted_at + wait)
    assert Job.objects.filter(kind=service.JOB_KIND).count() == 1

"""make run's start-up: what waits for jobs is recorded once, as registered job kinds, and
the pages that need it say it is still being prepared until the jobs are done."""

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotation import startup
from config.roles import ADMIN, ANNOTATOR, RESEARCHER, ensure_groups
from jobs import runner
from jobs.models import Job
from jobs.registry import get_kind
from retrieval.encoders.service import register_encoder
from retrieval.models import Dataset, Run
from tests.factories import query_dataset, random_run

NOTICE = "still being prepared"


def demo_dataset(*, trained_runs: bool = False) -> Dataset:
    """A tiny stand-in for the demo dataset with minilm, mme and jpose registered (not built),
    or, with ``trained_runs``, with runs of those names."""
    dataset, _, _ = query_dataset(startup.DEMO_DATASET)
    for name in ("minilm", "mme", "jpose"):
        if trained_runs:
            random_run(dataset, name, seed=1)
        else:
            register_encoder(dataset, name, name)
    return dataset


def user_with(role: str):
    user = get_user_model().objects.create_user(f"u-{role}", password="pw-long-enough-1")
    user.groups.add(ensure_groups()[role])
    return user


@pytest.mark.django_db
def test_every_deferred_step_is_a_registered_kind_whose_form_accepts_it():
    demo_dataset()
    steps = startup.deferred_steps()
    assert [step.kind for step in steps] == [
        "build_model",
        "build_model",
        "build_model",
        "demo_campaign",
        "proxies",
    ]
    assert [step.arguments.get("model") for step in steps[:3]] == ["minilm", "mme", "jpose"]
    for step in steps:
        kind = get_kind(step.kind)
        assert runner.check_arguments(kind, step.arguments)
        assert not step.ready()


@pytest.mark.django_db
def test_each_missing_step_is_recorded_once_and_again_only_when_its_job_ended_unfinished():
    demo_dataset()
    pending = startup.record_deferred()
    jobs = [job for _, job in pending]
    assert [job.kind for job in jobs] == [*["build_model"] * 3, "demo_campaign", "proxies"]
    assert all(job.status == Job.Status.QUEUED for job in jobs)
    assert all(job.task_id == f"{runner.RECORDED}{runner.STARTUP}" for job in jobs)

    again = startup.record_deferred()
    assert [job.pk for _, job in again] == [job.pk for job in jobs]
    assert Job.objects.count() == 5

    # A stopped make run leaves its job failed: the next one records that step anew.
    Job.objects.filter(pk=jobs[0].pk).update(status=Job.Status.FAILED)
    third = startup.record_deferred()
    assert Job.objects.count() == 6
    assert third[0][1].pk not in {job.pk for job in jobs}
    assert [job.pk for _, job in third[1:]] == [job.pk for job in jobs[1:]]


@pytest.mark.django_db
def test_a_step_whose_product_exists_is_not_recorded():
    demo_dataset(trained_runs=True)
    kinds = [job.kind for _, job in startup.record_deferred()]
    assert kinds == ["demo_campaign", "proxies"]
    assert Run.objects.filter(name__in=("minilm", "mme", "jpose")).count() == 3


@pytest.mark.django_db
def test_pages_that_need_deferred_work_say_it_is_still_being_prepared(client):
    demo_dataset()
    jobs = [job for _, job in startup.record_deferred()]
    Job.objects.filter(pk=jobs[0].pk).update(
        status=Job.Status.RUNNING, message="step 2 of 4: training mme", done=2, total=5
    )
    pages = {
        RESEARCHER: ["/", "/datasets/demo/", "/datasets/demo/leaderboard/", "/reports/demo/"],
        ANNOTATOR: ["/judge/"],
        ADMIN: ["/campaigns/", "/"],
    }
    for role, urls in pages.items():
        client.force_login(user_with(role))
        for url in urls:
            response = client.get(url, follow=True)
            assert response.status_code < 500, url
            text = response.content.decode()
            assert NOTICE in text.lower(), (role, url)
            if role == ANNOTATOR:
                assert "/jobs/" not in text  # annotators may not open job pages
                assert "demo campaign" in text
            elif url == "/":
                assert f'href="/jobs/{jobs[0].pk}/"' in text
                assert "training mme" in text and "40%" in text

    Job.objects.update(status=Job.Status.SUCCEEDED)
    for role, urls in pages.items():
        client.force_login(get_user_model().objects.get(username=f"u-{role}"))
        for url in urls:
            text = client.get(url, follow=True).content.decode()
            assert NOTICE not in text.lower(), (role, url)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_setup_demo_twice_builds_once_and_records_the_deferred_jobs_once(settings, tmp_path):
    settings.STATIC_ROOT = tmp_path / "static"
    first = StringIO()
    call_command("setup_demo", videos=6, workers=1, stdout=first)
    dataset = Dataset.objects.get(name=startup.DEMO_DATASET)
    assert set(Run.objects.filter(dataset=dataset).values_list("name", flat=True)) == {"random"}
    assert set(dataset.models.values_list("name", flat=True)) == {
        "random",
        "minilm",
        "mme",
        "jpose",
    }
    jobs = list(Job.objects.order_by("pk").values_list("pk", "kind"))
    assert [kind for _, kind in jobs] == [*["build_model"] * 3, "demo_campaign", "proxies"]
    assert "rendering clips: 6 of 6" in first.getvalue()
    assert "still being prepared" in first.getvalue()

    second = StringIO()
    call_command("setup_demo", videos=6, workers=1, stdout=second)
    assert "rendering" not in second.getvalue() and "embedding" not in second.getvalue()
    assert Dataset.objects.get(name=startup.DEMO_DATASET).pk == dataset.pk
    assert list(Job.objects.order_by("pk").values_list("pk", "kind")) == jobs
    assert get_user_model().objects.filter(username="annotator1").exists()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_demo_campaign_job_waits_for_the_four_runs_then_pools_them_once():
    from annotation.models import Campaign
    from jobs.tasks import execute
    from retrieval.datasets.demo.service import create_demo_dataset

    dataset = create_demo_dataset(name=startup.DEMO_DATASET, n_videos=36, seed=1, workers=2)
    arguments = {"dataset": dataset.name, "name": "demo-campaign"}
    early = runner.record("demo_campaign", arguments, runner.STARTUP)
    execute(early.pk)
    early.refresh_from_db()
    assert early.status == Job.Status.FAILED
    assert "lacks the demo runs random, minilm, mme, jpose" in early.error

    for seed, name in enumerate(("random", "minilm", "mme", "jpose")):
        random_run(dataset, name, seed)
    job = runner.record("demo_campaign", arguments, runner.STARTUP)
    execute(job.pk)
    job.refresh_from_db()
    campaign = Campaign.objects.get(name="demo-campaign")
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.result["campaign_id"] == campaign.pk and job.result["pairs"] > 0
    again = runner.record("demo_campaign", arguments, runner.STARTUP)
    execute(again.pk)
    again.refresh_from_db()
    assert again.result["campaign_id"] == campaign.pk and Campaign.objects.count() == 1


@pytest.mark.slow
@pytest.mark.django_db
def test_retrying_a_failed_demo_campaign_job_finishes_the_campaign(monkeypatch):
    """A demo-campaign job that failed after pooling left a half-made campaign;
    its retry found the campaign and "succeeded" at once, doing nothing. The retry now
    finishes what is missing (pre-fill, resolution), and only a complete campaign is kept
    as it is."""
    from annotation.campaign_read.overview import campaign_label_sets
    from annotation.models import Campaign, Judgement
    from annotation.simulation import demo as demo_campaign
    from jobs.tasks import execute
    from retrieval.datasets.demo.service import create_demo_dataset

    dataset = create_demo_dataset(name=startup.DEMO_DATASET, n_videos=36, seed=1, workers=2)
    for seed, name in enumerate(("random", "minilm", "mme", "jpose")):
        random_run(dataset, name, seed)
    real = demo_campaign.resolve_campaign

    def broken(campaign):
        raise RuntimeError("disk full")

    monkeypatch.setattr(demo_campaign, "resolve_campaign", broken)
    arguments = {"dataset": dataset.name, "name": "demo-campaign"}
    failed = runner.record("demo_campaign", arguments, runner.STARTUP)
    execute(failed.pk)
    failed.refresh_from_db()
    assert failed.status == Job.Status.FAILED and "disk full" in failed.error
    campaign = Campaign.objects.get(name="demo-campaign")
    labels = Judgement.objects.filter(pair__campaign=campaign).count()
    assert labels > 0 and not campaign_label_sets(campaign).exists()

    monkeypatch.setattr(demo_campaign, "resolve_campaign", real)
    again = runner.retry(failed)
    execute(again.pk)
    again.refresh_from_db()
    assert again.status == Job.Status.SUCCEEDED, again.error
    assert again.result["done"] == "resolved"
    assert campaign_label_sets(campaign).count() == 1
    assert Campaign.objects.count() == 1
    assert Judgement.objects.filter(pair__campaign=campaign).count() == labels

    third = runner.record("demo_campaign", arguments, runner.STARTUP)
    execute(third.pk)
    third.refresh_from_db()
    assert third.result["done"] == "nothing: it was complete already"

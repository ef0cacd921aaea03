"""Jobs in-process: submit, progress, failure messages, retry, reaping and the job pages."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from config.roles import ADMIN, ANNOTATOR, RESEARCHER, ensure_groups
from jobs import runner, tasks
from jobs.models import Job
from jobs.progress import Beater, reap_stale
from tests.factories import make_campaign
from tests.jobs import kinds  # noqa: F401 - registers the test kinds

IMMEDIATE = {
    "default": {
        "BACKEND": "django_tasks.backends.immediate.ImmediateBackend",
        "QUEUES": ["default", "gpu"],
    }
}


@pytest.fixture(autouse=True)
def _immediate(settings, tmp_path):
    settings.TASKS = IMMEDIATE
    settings.FIREPOOL_JOB_OUTPUT_DIR = tmp_path / "job-output"


def user_with(role: str):
    user = get_user_model().objects.create_user(f"u-{role}", password="pw-long-enough-1")
    user.groups.add(ensure_groups()[role])
    return user


def run_now(kind: str, data: dict, user=None) -> Job:
    """Submit inside a committed transaction so on_commit fires, then reload the row."""
    from django.test import TestCase

    with TestCase.captureOnCommitCallbacks(execute=True):
        job = runner.submit(kind, data, user)
    job.refresh_from_db()
    return job


@pytest.mark.django_db
def test_a_job_runs_reports_progress_and_keeps_its_result():
    job = run_now("test-count", {"units": "7"})
    assert job.status == Job.Status.SUCCEEDED
    assert (job.done, job.total) == (7, 7)
    assert job.result == {"counted": 7}
    assert job.attempts == 1 and job.started_at and job.finished_at


@pytest.mark.django_db
def test_bad_arguments_are_refused_before_anything_is_queued():
    with pytest.raises(runner.JobError, match="units"):
        runner.submit("test-count", {"units": "-3"})
    with pytest.raises(runner.JobError, match="unknown job kind 'nope'"):
        runner.submit("nope", {})
    with pytest.raises(runner.JobError, match="no dataset named 'missing'"):
        runner.submit("proxies", {"dataset": "missing", "proxy": "bow"})
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_a_user_error_is_shown_as_is_and_a_bug_without_its_traceback():
    user_error = run_now("test-count", {"units": "1", "fail": "user"})
    assert user_error.status == Job.Status.FAILED
    assert user_error.error == "the count file test.txt, line 3, field 'units': not a number"
    bug = run_now("test-count", {"units": "1", "fail": "bug"})
    assert bug.error.startswith("Internal error (RuntimeError): secret internals")
    assert "Traceback" not in bug.error and "RuntimeError" in bug.traceback


@pytest.mark.django_db
def test_a_numpy_value_error_is_an_internal_error_not_the_users():
    job = run_now("test-count", {"units": "1", "fail": "numpy"})
    assert job.status == Job.Status.FAILED
    assert job.error.startswith("Internal error (ValueError): cannot reshape")
    assert "ValueError" in job.traceback


@pytest.mark.django_db
def test_a_service_user_error_fails_the_job_with_its_message():
    campaign = make_campaign()  # its model "m" was registered from a run file
    job = run_now("predict", {"dataset": campaign.dataset.name, "model": "m"})
    assert job.status == Job.Status.FAILED
    assert job.error == "model 'm' was registered from a run file; it has no embeddings"


@pytest.mark.django_db
def test_a_failed_job_is_retried_with_the_same_arguments():
    from django.test import TestCase

    failed = run_now("test-count", {"units": "2", "fail": "user"})
    with TestCase.captureOnCommitCallbacks(execute=True):
        again = runner.retry(failed)
    again.refresh_from_db()
    assert again.retry_of == failed and again.arguments == failed.arguments
    assert again.status == Job.Status.FAILED  # the same arguments fail the same way
    done = run_now("test-count", {"units": "2"})
    with pytest.raises(runner.JobError, match="only a failed job"):
        runner.retry(done)


@pytest.mark.django_db
def test_a_job_is_claimed_once_even_if_its_task_is_delivered_twice():
    job = run_now("test-count", {"units": "3"})
    assert tasks.execute(job.pk) is None  # already ran: skipped
    job.refresh_from_db()
    assert job.attempts == 1


@pytest.mark.django_db
def test_jobs_whose_process_stopped_beating_are_reaped(settings):
    settings.FIREPOOL_JOB_STALE_SECONDS = 60
    now = timezone.now()
    lost = Job.objects.create(
        kind="test-count", status=Job.Status.RUNNING, heartbeat_at=now - timedelta(seconds=61)
    )
    alive = Job.objects.create(
        kind="test-count", status=Job.Status.RUNNING, heartbeat_at=now - timedelta(seconds=5)
    )
    waiting = Job.objects.create(kind="test-count", status=Job.Status.QUEUED)  # on a queue
    assert reap_stale(now) == 1
    lost.refresh_from_db(), alive.refresh_from_db(), waiting.refresh_from_db()
    assert lost.status == Job.Status.FAILED and "stopped answering" in lost.error
    assert alive.status == Job.Status.RUNNING and waiting.status == Job.Status.QUEUED


@pytest.mark.django_db
def test_the_heartbeat_reaps_lost_jobs_but_not_its_own(settings):
    """The periodic path: each beat refreshes the jobs held here, then reaps the lost ones."""
    settings.FIREPOOL_JOB_STALE_SECONDS = 60
    settings.FIREPOOL_JOB_HEARTBEAT_SECONDS = 3600  # the beater's own thread stays asleep
    old = timezone.now() - timedelta(seconds=61)
    lost = Job.objects.create(kind="test-count", status=Job.Status.RUNNING, heartbeat_at=old)
    mine = Job.objects.create(kind="test-count", status=Job.Status.RUNNING, heartbeat_at=old)
    beater = Beater()
    beater.hold(mine.pk)
    try:
        assert beater.beat() == 1
    finally:
        beater.release(mine.pk)
    lost.refresh_from_db(), mine.refresh_from_db()
    assert lost.status == Job.Status.FAILED and "stopped answering" in lost.error
    assert mine.status == Job.Status.RUNNING and mine.heartbeat_at > old


@pytest.mark.django_db
def test_job_pages_only_read_even_with_a_lost_job_present(client, settings):
    settings.FIREPOOL_JOB_STALE_SECONDS = 60
    lost = Job.objects.create(
        kind="test-count",
        status=Job.Status.RUNNING,
        heartbeat_at=timezone.now() - timedelta(seconds=600),
    )
    client.force_login(user_with(RESEARCHER))
    before = list(Job.objects.values())
    with CaptureQueriesContext(connection) as queries:
        for url in ("/jobs/", f"/jobs/{lost.pk}/", f"/jobs/{lost.pk}/status/"):
            assert client.get(url).status_code == 200, url
    writes = [q["sql"] for q in queries if q["sql"].lstrip().split()[0].upper() in WRITE_STATEMENTS]
    assert writes == []
    assert list(Job.objects.values()) == before


WRITE_STATEMENTS = {"INSERT", "UPDATE", "DELETE", "REPLACE"}


@pytest.mark.django_db
def test_gpu_jobs_go_to_the_gpu_queue_only_when_a_gpu_worker_is_configured(settings):
    from django.test import TestCase
    from django_tasks.backends.dummy import DummyBackend

    settings.TASKS = {"default": {**IMMEDIATE["default"], "BACKEND": DUMMY}}
    for gpu_queue, expected in ((True, "gpu"), (False, "default")):
        settings.FIREPOOL_GPU_QUEUE = gpu_queue
        with TestCase.captureOnCommitCallbacks(execute=True):
            runner.submit("test-gpu-count", {"units": "1"})
        from django_tasks import task_backends

        backend = task_backends["default"]
        assert isinstance(backend, DummyBackend)
        assert backend.results[-1].task.queue_name == expected


DUMMY = "django_tasks.backends.dummy.DummyBackend"


@pytest.mark.django_db
def test_figures_and_refits_go_to_the_live_queue_only_when_a_live_worker_is_configured(
    settings,
):
    """On database workers a campaign's figures must not wait behind a model's training: with
    ``FIREPOOL_LIVE_QUEUE`` they go to the ``live`` queue, whose worker runs nothing else."""
    from django.test import TestCase
    from django_tasks import task_backends

    campaign = make_campaign(n_queries=2, depth=2, seed=3)
    settings.TASKS = {"default": {**IMMEDIATE["default"], "BACKEND": DUMMY}}
    settings.TASKS["default"]["QUEUES"] = ["default", "gpu", "media", "live"]
    for live, expected in ((True, "live"), (False, "default")):
        settings.FIREPOOL_LIVE_QUEUE = live
        for kind in ("campaign-figures", "refit-policy", "fit-predictor"):
            Job.objects.all().delete()  # a kind that joins would give the queued one back
            with TestCase.captureOnCommitCallbacks(execute=True):
                runner.submit(kind, {"campaign": campaign.name})
            assert task_backends["default"].results[-1].task.queue_name == expected, kind
        with TestCase.captureOnCommitCallbacks(execute=True):
            runner.submit("test-count", {"units": "1"})
        assert task_backends["default"].results[-1].task.queue_name == "default"


@pytest.mark.parametrize(
    ("backend", "live", "warned"),
    [
        ("django_tasks_db.backend.DatabaseBackend", False, True),
        ("django_tasks_db.backend.DatabaseBackend", True, False),
        ("jobs.backends.ThreadBackend", False, False),
    ],
)
def test_deploy_check_warns_of_database_workers_without_a_live_queue(
    settings, backend, live, warned
):
    from django.core import checks

    settings.TASKS = {"default": {"BACKEND": backend, "QUEUES": ["default", "live"]}}
    settings.FIREPOOL_LIVE_QUEUE = live
    found = checks.run_checks(include_deployment_checks=True)
    assert ("firepool.W001" in {message.id for message in found}) is warned


@pytest.mark.django_db
def test_job_pages_show_progress_errors_and_retry(client):
    researcher = user_with(RESEARCHER)
    client.force_login(researcher)
    failed = run_now("test-count", {"units": "1", "fail": "bug"})
    page = client.get(f"/jobs/{failed.pk}/")
    text = page.content.decode()
    assert page.status_code == 200
    assert "Internal error (RuntimeError)" in text and "Traceback" not in text
    assert "Retry" in text
    if failed.percent is None:  # no total counted: no bar at all, never an endless moving one
        assert 'id="job-progress"' not in text
    else:  # a bar stopped where the job failed
        assert f'id="job-progress" max="100" value="{failed.percent:.0f}"' in text
    Job.objects.filter(pk=failed.pk).update(total=0, done=0)
    assert 'id="job-progress"' not in client.get(f"/jobs/{failed.pk}/").content.decode()
    status = client.get(f"/jobs/{failed.pk}/status/").json()
    assert status["status"] == "failed" and status["finished"]
    response = client.post(f"/jobs/{failed.pk}/retry/")
    again = Job.objects.get(retry_of=failed)
    assert response.status_code == 302 and response["Location"] == f"/jobs/{again.pk}/"
    listing = client.get("/jobs/").content.decode()
    assert f"/jobs/{again.pk}/" in listing and "Embed captions and videos" in listing
    assert "Export a campaign" not in listing  # an admin's kind


@pytest.mark.django_db
def test_starting_a_job_from_its_form(client):
    researcher = user_with(RESEARCHER)
    client.force_login(researcher)
    bad = client.post("/jobs/start/proxies/", {"dataset": "missing", "proxy": "bow"})
    assert bad.status_code == 400 and "no dataset named" in bad.content.decode()
    assert not Job.objects.exists()
    campaign = make_campaign()
    response = client.post("/jobs/start/rescore/", {"dataset": campaign.dataset.name})
    job = Job.objects.get()
    assert response.status_code == 302 and job.created_by == researcher
    assert job.kind == "rescore"
    assert job.arguments == {"dataset": campaign.dataset.name, "only_labelled": False}
    assert client.post("/jobs/start/export/", {"campaign": campaign.name}).status_code == 403


@pytest.mark.django_db
def test_an_export_job_writes_a_file_that_only_admins_download(client, settings):
    campaign = make_campaign()
    admin = user_with(ADMIN)
    job = run_now("export", {"campaign": campaign.name, "format": "qrels"}, admin)
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.output.startswith(str(settings.FIREPOOL_JOB_OUTPUT_DIR))
    client.force_login(admin)
    download = client.get(f"/jobs/{job.pk}/output/")
    assert download.status_code == 200
    assert download["Content-Disposition"].endswith(f'{campaign.name}.qrels"')
    client.force_login(user_with(RESEARCHER))
    assert client.get(f"/jobs/{job.pk}/output/").status_code == 403
    client.force_login(user_with(ANNOTATOR))
    assert client.get(f"/jobs/{job.pk}/").status_code == 403
    assert client.get("/jobs/").status_code == 403


@pytest.mark.django_db
def test_real_kinds_run_as_jobs(settings):
    campaign = make_campaign()
    rescored = run_now("rescore", {"dataset": campaign.dataset.name})
    assert rescored.status == Job.Status.SUCCEEDED, rescored.error
    assert set(rescored.result["runs"]) == {"m"}
    pooled = run_now(
        "pool",
        {"dataset": campaign.dataset.name, "name": "again", "runs": "m", "depth": "2"},
    )
    # every pair of the run at depth 2 was already pooled: a clear refusal, not a crash
    assert pooled.status in (Job.Status.SUCCEEDED, Job.Status.FAILED)
    assert "Internal error" not in pooled.error


@pytest.mark.django_db
def test_a_training_job_counts_its_epochs_then_embeds_and_predicts():
    from django.core.management import call_command

    from retrieval.datasets.demo.service import create_demo_dataset
    from retrieval.encoders.service import register_encoder

    dataset = create_demo_dataset(name="mini", n_videos=24, seed=4, workers=1)
    call_command("features", dataset="mini", verbosity=0)
    register_encoder(dataset, "trained", "mme")
    job = run_now("train", {"dataset": "mini", "model": "trained", "epochs": "3", "device": "cpu"})
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert (job.done, job.total) == (3, 3) and job.result["epochs"] == 3
    embedded = run_now("embed", {"dataset": "mini", "model": "trained", "device": "cpu"})
    assert embedded.status == Job.Status.SUCCEEDED, embedded.error
    assert embedded.done == embedded.total > 0  # every caption and video counted
    predicted = run_now("predict", {"dataset": "mini", "model": "trained", "k": "5"})
    assert predicted.status == Job.Status.SUCCEEDED, predicted.error
    assert predicted.result["run"] == "trained" and predicted.result["depth"] == 5

"""Every door that names a dataset, model, run, campaign or label set applies the name rule:
forms, the API, management commands, job kinds and the admin refuse a bad name with a
message that says which name and why, and write nothing. Jobs' writes and their reported
outcome stand or fall together.
"""

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils.html import escape
from rest_framework.authtoken.models import Token

from annotation.campaigns.service import CampaignError, CampaignSpec, create_campaign
from annotation.models import Campaign, Pair
from config import roles
from jobs import runner
from jobs.models import Job
from retrieval.datasets.names import InvalidName
from retrieval.label_sets.judged import Judged
from retrieval.label_sets.service import store_label_set
from retrieval.models import Dataset, LabelSet, RetrievalModel, Run
from tests.factories import query_dataset, random_run

BAD = ["slash/name", "..", "line\u2028break", "zero\u200bwidth", "<b>x</b>"]
"""Refused everywhere; forms and serializers also trim blanks, so those are left out here."""
BAD_RAW = [*BAD, " padded ", "", "."]
"""What commands and services refuse as given."""
IMMEDIATE = {
    "default": {
        "BACKEND": "django_tasks.backends.immediate.ImmediateBackend",
        "QUEUES": ["default", "gpu"],
    }
}
RUN_FILE = "".join(f"c{i} Q0 v{(i + 1) % 6} 1 0.9 mine\n" for i in range(6)).encode()
CAPTIONS = b'{"video_id": "n1", "caption_id": "n1#0", "caption": "a cat", "split": "test"}\n'


@pytest.fixture(autouse=True)
def _immediate(settings):
    settings.TASKS = IMMEDIATE
    cache.clear()  # the run-upload throttle counts in the cache
    yield
    cache.clear()


@pytest.fixture
def world(db):
    """Dataset ``tiny``: six query captions, run ``alpha``, label set ``truth``, campaign
    ``camp`` pooling ``alpha``."""
    dataset, videos, captions = query_dataset("tiny")
    run = random_run(dataset, "alpha", 0)
    pairs = Judged.build([c.pk for c in captions[:2]], [v.pk for v in videos[:2]], [1, 0])
    store_label_set(dataset, "truth", pairs, source="import")
    create_campaign(dataset, [run], CampaignSpec(name="camp", depth=2))
    return dataset


def counts() -> tuple[int, ...]:
    """Rows of every named thing, and jobs: a refused name changes none of them."""
    models = (Dataset, RetrievalModel, Run, LabelSet, Campaign, Pair, Job)
    return tuple(model.objects.count() for model in models)


def signed_in(role: str) -> Client:
    user = get_user_model().objects.create_user(
        f"u-{role}", password="pw-names-1234", is_staff=True
    )
    user.groups.add(roles.ensure_groups()[role])
    client = Client()
    client.force_login(user)
    return client


def superuser() -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", "r@x.org", "pw-root-12"))
    return client


def shown(message: str, page: bytes) -> bool:
    return escape(message) in page.decode()


def upload(name: str, content: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/octet-stream")


def input_file(settings, content: bytes = CAPTIONS) -> str:
    """An uploaded file as the job form expects it (relative to the input root)."""
    folder = Path(settings.FIREPOOL_JOB_INPUT_DIR) / "upload-1"
    folder.mkdir(parents=True)
    (folder / "captions").write_bytes(content)
    return "upload-1/captions"


# Datasets ------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", BAD)
def test_the_upload_page_refuses_a_bad_dataset_name(world, bad, settings):
    before = counts()
    answer = signed_in(roles.ADMIN).post(
        "/upload/dataset/", {"name": bad, "format": "jsonl", "captions": upload("c", CAPTIONS)}
    )
    assert answer.status_code == 400
    assert shown(f"the dataset name {bad!r}", answer.content), answer.content[-3000:]
    assert counts() == before
    root = Path(settings.FIREPOOL_JOB_INPUT_DIR)
    assert not root.exists() or not [p for p in root.rglob("*") if p.is_file()]


@pytest.mark.parametrize("bad", BAD)
def test_the_import_job_refuses_a_bad_dataset_name_before_it_is_queued(world, bad, settings):
    captions = input_file(settings)
    before = counts()
    with pytest.raises(runner.JobError, match="the dataset name"):
        runner.submit("import_dataset", {"name": bad, "format": "jsonl", "captions": captions})
    page = signed_in(roles.ADMIN).post(
        "/jobs/start/import_dataset/", {"name": bad, "format": "jsonl", "captions": captions}
    )
    assert page.status_code == 400 and shown(f"the dataset name {bad!r}", page.content)
    assert counts() == before


@pytest.mark.parametrize("bad", BAD)
def test_the_admin_refuses_a_bad_dataset_name_to_add_or_rename(world, bad):
    admin = superuser()
    before = counts()
    added = admin.post("/admin/retrieval/dataset/add/", {"name": bad, "description": ""})
    assert added.status_code == 200 and shown(f"the dataset name {bad!r}", added.content)
    renamed = admin.post(
        f"/admin/retrieval/dataset/{world.pk}/change/",
        {"name": bad, "description": "", "source_format": "", "metadata": "{}"},
    )
    assert renamed.status_code == 200 and shown(f"the dataset name {bad!r}", renamed.content)
    assert counts() == before and Dataset.objects.get(pk=world.pk).name == "tiny"


def test_the_demo_command_refuses_a_bad_dataset_name(db):
    for bad in ("slash/name", "..", "line\u2028break"):
        with pytest.raises(CommandError, match="the dataset name"):
            call_command("demo", name=bad, videos=6, workers=1, no_models=True)
    assert not Dataset.objects.exists()


# Models and their runs -----------------------------------------------------------------------


@pytest.mark.parametrize("bad", BAD)
def test_the_add_model_page_refuses_a_bad_model_name(world, bad):
    """The page answered 500 for ``<b>x</b>`` after writing the model and its run."""
    researcher = signed_in(roles.RESEARCHER)
    before = counts()
    for data in (
        {"name": bad, "source": "run", "run": upload("r.txt", RUN_FILE)},
        {"name": bad, "source": "encoder", "encoder": "random"},
    ):
        answer = researcher.post("/datasets/tiny/add-model/", data)
        assert answer.status_code == 400, answer.status_code
        assert shown(f"the model name {bad!r}", answer.content)
    assert counts() == before


def test_a_name_with_markup_the_rule_accepts_is_added_and_shown_as_text(
    world, django_capture_on_commit_callbacks
):
    researcher = signed_in(roles.RESEARCHER)
    name = '<i onmouseover="x()">ok & ?#%'
    with django_capture_on_commit_callbacks(execute=True):
        answer = researcher.post(
            "/datasets/tiny/add-model/",
            {"name": name, "source": "run", "run": upload("r.txt", RUN_FILE)},
        )
    assert answer.status_code == 302
    page = researcher.get(answer["Location"])
    assert page.status_code == 200 and page.context["model"].name == name
    assert escape(name) in page.content.decode() and name not in page.content.decode()
    overview = researcher.get("/datasets/tiny/")
    assert (
        overview.status_code == 200
        and f'href="{escape(answer["Location"])}"' in overview.content.decode()
    )


@pytest.mark.parametrize("bad", BAD_RAW)
def test_commands_refuse_a_bad_dataset_or_model_name(world, bad, tmp_path):
    captions = tmp_path / "c.jsonl"
    captions.write_bytes(CAPTIONS)
    run = tmp_path / "r.txt"
    run.write_bytes(RUN_FILE)
    before = counts()
    for command, options, what in (
        ("import_dataset", {"name": bad, "format": "jsonl", "captions": captions}, "dataset"),
        ("register_model", {"dataset": "tiny", "name": bad, "run": run}, "model"),
        ("register_model", {"dataset": "tiny", "name": bad, "encoder": "random"}, "model"),
    ):
        with pytest.raises(CommandError, match=f"the {what} name"):
            call_command(command, **options)
    assert counts() == before


@pytest.mark.parametrize("bad", BAD)
def test_the_run_upload_api_refuses_a_bad_model_name(world, bad):
    """``slash/name`` was accepted with a 202, and the dataset's page was a 500 after it."""
    user = get_user_model().objects.create_user("script", password="pw-script-123")
    user.groups.add(roles.ensure_groups()[roles.RESEARCHER])
    client = Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    before = counts()
    answer = client.post(
        "/api/datasets/tiny/runs/", {"run": upload("r.txt", RUN_FILE), "name": bad}
    )
    assert answer.status_code == 400, answer.content
    # The API's one error body: {"code", "detail"}, a serializer's field errors in detail.
    assert answer.json()["code"] == "invalid"
    assert answer.json()["detail"]["name"][0].startswith(f"the model name {bad!r}")
    assert counts() == before


# Campaigns -----------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", BAD_RAW)
def test_create_campaign_refuses_a_bad_name_as_a_service_and_a_command(world, bad):
    run = Run.objects.get(name="alpha")
    before = counts()
    with pytest.raises(CampaignError, match="name: the campaign name"):
        create_campaign(world, [run], CampaignSpec(name=bad, depth=3))
    if bad and bad == bad.strip():  # the form trims blanks and says an empty one is missing
        with pytest.raises(CommandError, match="--name: the campaign name"):
            call_command("create_campaign", dataset="tiny", name=bad, runs="alpha", depth=3)
    assert counts() == before


@pytest.mark.parametrize("bad", BAD)
def test_the_pool_job_refuses_a_bad_campaign_name_before_it_is_queued(world, bad):
    before = counts()
    with pytest.raises(runner.JobError, match="the campaign name"):
        runner.submit("pool", {"dataset": "tiny", "name": bad, "runs": "alpha", "depth": 3})
    page = signed_in(roles.ADMIN).post(
        "/campaigns/missing/tiny/",
        {"run": "alpha", "labels": "truth", "name": bad, "judging_order": "depth"},
    )
    assert page.status_code == 400 and shown(f"the campaign name {bad!r}", page.content)
    assert counts() == before


@pytest.mark.parametrize("bad", BAD)
def test_the_admin_refuses_a_bad_campaign_name_to_add_or_rename(world, bad):
    admin = superuser()
    campaign = Campaign.objects.get(name="camp")
    before = counts()
    added = admin.post(
        "/admin/annotation/campaign/add/",
        {
            "name": bad,
            "dataset": world.pk,
            "runs": [Run.objects.get(name="alpha").pk],
            "depth": 3,
            "seed": 0,
            "second_label_rate": 0.5,
            "max_labels": 3,
            "lease_seconds": 300,
            "guidelines": "Every element must be present.",
        },
    )
    assert added.status_code == 200 and shown(f"the campaign name {bad!r}", added.content)
    renamed = admin.post(
        f"/admin/annotation/campaign/{campaign.pk}/change/",
        {"name": bad, "status": "active", "lease_seconds": 300, "guidelines": "g", "options": "{}"},
    )
    assert renamed.status_code == 200 and shown(f"the campaign name {bad!r}", renamed.content)
    assert counts() == before and Campaign.objects.get(pk=campaign.pk).name == "camp"


# Label sets ----------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", BAD_RAW)
def test_label_set_commands_refuse_a_bad_name(world, bad, tmp_path):
    qrels = tmp_path / "labels.qrels"
    qrels.write_text("c0 0 v0 1\n")
    before = counts()
    with pytest.raises(InvalidName, match="the label set name"):
        store_label_set(world, bad, Judged.build([], [], []), source="import")
    for command, options in (
        ("import_labels", {"dataset": "tiny", "format": "qrels", "name": bad}),
        ("merge_labels", {"dataset": "tiny", "sets": "truth", "name": bad}),
        ("resolve_campaign", {"campaign": "camp", "name": bad}),
    ):
        args = [str(qrels)] if command == "import_labels" else []
        if command != "merge_labels" and not bad:
            continue  # no name: the file's or the campaign's
        with pytest.raises(CommandError, match="the label set name"):
            call_command(command, *args, **options)
    assert counts() == before


def test_a_label_file_named_badly_needs_a_name(world, tmp_path):
    qrels = tmp_path / " padded.qrels"
    qrels.write_text("c0 0 v0 1\n")
    with pytest.raises(CommandError, match="the label set name ' padded' starts or ends"):
        call_command("import_labels", str(qrels), dataset="tiny", format="qrels")
    call_command("import_labels", str(qrels), dataset="tiny", format="qrels", name="padded")
    assert LabelSet.objects.filter(name="padded").exists()


@pytest.mark.parametrize("bad", BAD)
def test_the_admin_refuses_a_bad_label_set_name(world, bad):
    label_set = LabelSet.objects.get(name="truth")
    answer = superuser().post(
        f"/admin/retrieval/labelset/{label_set.pk}/change/", {"name": bad, "description": ""}
    )
    assert answer.status_code == 200 and shown(f"the label set name {bad!r}", answer.content)
    assert LabelSet.objects.get(pk=label_set.pk).name == "truth"


def test_names_made_from_stored_names_follow_the_rule(world):
    """A campaign stored as ``a/b`` before the rule resolves into a label set the rule
    accepts, and the campaign page suggests an acceptable name for a new one."""
    campaign = Campaign.objects.get(name="camp")
    Campaign.objects.filter(pk=campaign.pk).update(name="a/b\u2028c")
    call_command("resolve_campaign", campaign="a/b\u2028c")
    assert LabelSet.objects.filter(dataset=world, name="a-b c").exists()
    Run.objects.filter(name="alpha").update(name="run/1")
    page = signed_in(roles.ADMIN).get("/campaigns/missing/tiny/?run=run/1&labels=truth")
    assert page.status_code == 200
    assert 'value="run-1 missing from truth"' in page.content.decode()


# Jobs: writes and outcome together -----------------------------------------------------------


def test_an_import_job_that_fails_after_its_writes_takes_them_back(
    world, settings, monkeypatch, django_capture_on_commit_callbacks
):
    """The upload of ``ds/slash`` committed the dataset, then building the link to it
    failed and the job said "failed"; now anything failing after the writes undoes them."""
    from retrieval.datasets import uploads

    def broken_reverse(*args, **kwargs):
        raise RuntimeError("the summary could not be built")

    monkeypatch.setattr(uploads, "reverse", broken_reverse)
    before = counts()
    with django_capture_on_commit_callbacks(execute=True):
        answer = signed_in(roles.ADMIN).post(
            "/upload/dataset/",
            {"name": "fresh", "format": "jsonl", "captions": upload("c.jsonl", CAPTIONS)},
        )
    assert answer.status_code == 302
    job = Job.objects.get(kind="import_dataset")
    assert job.status == Job.Status.FAILED and "the summary could not be built" in job.error
    assert not Dataset.objects.filter(name="fresh").exists()
    assert counts()[:-1] == before[:-1]
    monkeypatch.undo()
    with django_capture_on_commit_callbacks(execute=True):
        again = runner.retry(job)
    again.refresh_from_db()
    assert again.status == Job.Status.SUCCEEDED, again.error  # the upload was kept to retry
    assert again.result["page"] == "/datasets/fresh/"
    assert Dataset.objects.filter(name="fresh").exists()


def test_a_pool_job_that_fails_after_its_writes_takes_them_back(
    world, monkeypatch, django_capture_on_commit_callbacks
):
    from annotation.campaigns import jobs as annotation_jobs

    def broken_reverse(*args, **kwargs):
        raise RuntimeError("the summary could not be built")

    monkeypatch.setattr(annotation_jobs, "reverse", broken_reverse)
    before = counts()
    with django_capture_on_commit_callbacks(execute=True):
        job = runner.submit("pool", {"dataset": "tiny", "name": "new", "runs": "alpha", "depth": 2})
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert not Campaign.objects.filter(name="new").exists()
    assert counts()[:-1] == before[:-1]

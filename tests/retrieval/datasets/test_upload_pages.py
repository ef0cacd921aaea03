"""The Upload a dataset and Add a model pages, end to end with the jobs run in-process."""

from pathlib import Path

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils.html import escape

from config import roles
from jobs.models import Job
from retrieval.datasets import importing
from retrieval.datasets.importing import import_dataset
from retrieval.models import Caption, Dataset, RetrievalModel, Run, Video
from tests.browser_support import needs_chromium
from tests.factories import query_dataset

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "import"
PASSWORD = "pw-upload-12345"
IMMEDIATE = {
    "default": {
        "BACKEND": "django_tasks.backends.immediate.ImmediateBackend",
        "QUEUES": ["default", "gpu"],
    }
}


@pytest.fixture(autouse=True)
def _immediate(settings):
    settings.TASKS = IMMEDIATE


def signed_in(role: str) -> Client:
    user = get_user_model().objects.create_user(f"u-{role}", password=PASSWORD, is_staff=True)
    user.groups.add(roles.ensure_groups()[role])
    client = Client()
    client.force_login(user)
    return client


def upload(name: str, content: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/octet-stream")


def post_dataset(client, file_name: str, content: bytes, capture, **fields):
    data = {"name": "up", "format": "jsonl", "captions": upload(file_name, content), **fields}
    with capture(execute=True):
        return client.post("/upload/dataset/", data)


def leftover_inputs(settings) -> list[Path]:
    root = Path(settings.FIREPOOL_JOB_INPUT_DIR)
    return sorted(root.rglob("*")) if root.exists() else []


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fmt", "fixture"),
    [
        ("jsonl", "good.jsonl"),
        ("csv", "good.csv"),
        ("msrvtt-json", "msrvtt_data.json"),
        ("msrvtt-csv", "msrvtt_1ka_test.csv"),
        ("epic-csv", "epic_retrieval.csv"),
    ],
)
def test_an_admin_uploads_captions_in_every_format_and_a_job_imports_them(
    fmt, fixture, settings, django_capture_on_commit_callbacks
):
    content = (FIXTURES / fixture).read_bytes()
    # The reference: the same file imported by the service the command uses.
    expected = import_dataset("reference", fmt, FIXTURES / fixture)
    admin = signed_in(roles.ADMIN)
    answer = post_dataset(
        admin, fixture, content, django_capture_on_commit_callbacks, format=fmt, split="train"
    )
    assert answer.status_code == 302, answer.content[:500]
    job = Job.objects.get(kind="import_dataset")
    assert answer["Location"] == f"/jobs/{job.pk}/"
    assert job.status == Job.Status.SUCCEEDED, job.error
    dataset = Dataset.objects.get(name="up")
    assert Caption.objects.filter(dataset=dataset).count() == expected.captions
    assert Video.objects.filter(dataset=dataset).count() == expected.videos_created
    assert job.result["captions"] == expected.captions and job.result["file"] == fixture
    assert job.done == job.total and job.total >= expected.captions
    assert leftover_inputs(settings) == []  # the uploaded copy is gone once imported
    page = admin.get(f"/jobs/{job.pk}/")
    assert page.status_code == 200 and b"<progress" in page.content
    assert b'<a class="result-page" href="/datasets/up/">Open up</a>' in page.content
    assert b"job-input" not in page.content  # the server's folders are not shown


@pytest.mark.django_db
def test_a_bad_file_fails_the_job_with_file_line_and_field_and_writes_nothing(
    settings, django_capture_on_commit_callbacks
):
    admin = signed_in(roles.ADMIN)
    content = (FIXTURES / "bad_wrong_type.jsonl").read_bytes()
    answer = post_dataset(admin, "my captions.jsonl", content, django_capture_on_commit_callbacks)
    assert answer.status_code == 302
    job = Job.objects.get(kind="import_dataset")
    assert job.status == Job.Status.FAILED
    assert job.error.startswith("my captions.jsonl, line 1, field 'caption_id': ")
    assert "job-input" not in job.error and "Traceback" not in job.error
    assert not Dataset.objects.exists() and not Video.objects.exists()
    assert not Caption.objects.exists()
    assert leftover_inputs(settings) == []
    for url in (f"/jobs/{job.pk}/", "/upload/dataset/"):
        shown = admin.get(url).content.decode()
        assert "my captions.jsonl, line 1, field &#x27;caption_id&#x27;" in shown, url


@pytest.mark.django_db
def test_an_import_is_all_or_nothing_even_after_batches_were_written(
    monkeypatch, django_capture_on_commit_callbacks
):
    """Batches of two are flushed to the database before the last line fails; the
    transaction takes them back, and an existing dataset keeps what it had."""
    monkeypatch.setattr(importing, "BATCH_SIZE", 2)
    dataset, _, _ = query_dataset("up")
    before = (Caption.objects.count(), Video.objects.count())
    lines = [
        f'{{"video_id": "n{i}", "caption_id": "n{i}#0", "caption": "c {i}", "split": "train"}}'
        for i in range(7)
    ]
    lines.append('{"video_id": "n9", "caption_id": "n9#0", "caption": "", "split": "train"}')
    admin = signed_in(roles.ADMIN)
    post_dataset(admin, "big.jsonl", "\n".join(lines).encode(), django_capture_on_commit_callbacks)
    job = Job.objects.get(kind="import_dataset")
    assert job.status == Job.Status.FAILED
    assert job.error.startswith("big.jsonl, line 8, field 'caption'"), job.error
    assert (Caption.objects.count(), Video.objects.count()) == before
    dataset.refresh_from_db()
    assert "imports" not in dataset.metadata


@pytest.mark.django_db
def test_unusable_options_and_big_files_are_refused_on_the_page(
    settings, tmp_path, django_capture_on_commit_callbacks
):
    admin = signed_in(roles.ADMIN)
    content = (FIXTURES / "good.jsonl").read_bytes()
    capture = django_capture_on_commit_callbacks
    both = post_dataset(admin, "a.jsonl", content, capture, videos=str(tmp_path), video_url="x")
    assert both.status_code == 400 and b"not both" in both.content
    template = post_dataset(admin, "a.jsonl", content, capture, video_url="http://h/{nope}.mp4")
    assert template.status_code == 400 and b"unknown placeholder(s) nope" in template.content
    folder = post_dataset(admin, "a.jsonl", content, capture, videos=str(tmp_path / "missing"))
    assert folder.status_code == 400 and b"is not a folder on the server" in folder.content
    settings.FIREPOOL_MAX_UPLOAD_BYTES = 10
    big = post_dataset(admin, "a.jsonl", content, capture)
    assert big.status_code == 400 and b"over the limit of 10 bytes" in big.content
    assert not Job.objects.exists() and not Dataset.objects.exists()
    assert [p for p in leftover_inputs(settings) if p.is_file()] == []


@pytest.mark.django_db
def test_the_import_job_reads_only_uploaded_files(settings, tmp_path):
    """The job form on the jobs page cannot be pointed at any other file on the server."""
    secret = tmp_path / "secret.jsonl"
    secret.write_bytes((FIXTURES / "good.jsonl").read_bytes())
    admin = signed_in(roles.ADMIN)
    settings.FIREPOOL_JOB_INPUT_DIR.mkdir(parents=True)
    for path, message in (
        (str(secret), b"not uploaded through the page"),
        (str(settings.FIREPOOL_JOB_INPUT_DIR / ".." / "secret.jsonl"), b"not uploaded through"),
        (str(settings.FIREPOOL_JOB_INPUT_DIR), b"not uploaded through the page"),
        ("../secret.jsonl", b"not uploaded through the page"),
        ("\x00", b"Null characters are not allowed"),
    ):
        answer = admin.post(
            "/jobs/start/import_dataset/", {"name": "x", "format": "jsonl", "captions": path}
        )
        assert answer.status_code == 400 and message in answer.content, (path, answer.content)
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_who_may_open_the_pages_and_where_the_dataset_page_links():
    dataset, _, _ = query_dataset("tiny")
    researcher, admin = signed_in(roles.RESEARCHER), signed_in(roles.ADMIN)
    assert researcher.get("/upload/dataset/").status_code == 403
    assert admin.get("/upload/dataset/?dataset=tiny").status_code == 200
    page = researcher.get("/datasets/tiny/").content.decode()
    assert 'href="/datasets/tiny/add-model/"' in page and "/upload/dataset/" not in page
    page = admin.get("/datasets/tiny/").content.decode()
    assert 'href="/upload/dataset/?dataset=tiny"' in page
    assert 'href="/datasets/tiny/add-model/"' in page
    assert "Upload a dataset" in admin.get("/datasets/").content.decode()


# Add a model ---------------------------------------------------------------------------------


def run_text(pairs) -> bytes:
    return "".join(
        f"{qid} Q0 {docno} {rank} {1.0 - rank / 10} mine\n"
        for rank, (qid, docno) in enumerate(pairs, start=1)
    ).encode()


@pytest.fixture
def tiny(db):
    dataset, _, _ = query_dataset("tiny")
    return dataset


def test_a_researcher_adds_a_run_file_and_sees_it_scored(tiny, django_capture_on_commit_callbacks):
    researcher = signed_in(roles.RESEARCHER)
    run = run_text([(f"c{i}", f"v{(i + j) % 6}") for i in range(6) for j in range(3)])
    with django_capture_on_commit_callbacks(execute=True):
        answer = researcher.post(
            "/datasets/tiny/add-model/",
            {"name": "mine", "source": "run", "run": upload("mine.txt", run)},
        )
    assert answer.status_code == 302 and answer["Location"] == "/datasets/tiny/models/mine/"
    model = RetrievalModel.objects.get(dataset=tiny, name="mine")
    assert model.source == RetrievalModel.Source.RUN
    assert Run.objects.get(model=model).depth == 3
    job = Job.objects.get(kind="score_run")
    assert job.status == Job.Status.SUCCEEDED, job.error
    # Each caption's own video is at rank 1: C@1 under the original positives is 1.
    assert job.result["original"]["C@1"] == 1.0
    page = researcher.get(answer["Location"]).content.decode()
    assert f'href="/jobs/{job.pk}/"' in page and "score_run" in page and "succeeded" in page
    assert "C@1 100.0, C@10 100.0" in page  # the scores job's result, in a line
    assert "Runs" in page and ">mine</a>" in page
    assert (
        'href="/datasets/tiny/models/mine/"' in researcher.get("/datasets/tiny/").content.decode()
    )


def test_a_malformed_run_file_is_refused_with_line_and_field(tiny):
    researcher = signed_in(roles.RESEARCHER)
    broken = run_text([("c0", "v0")]) + b"c1 Q0 v1 2 not-a-number mine\n"
    answer = researcher.post(
        "/datasets/tiny/add-model/",
        {"name": "mine", "source": "run", "run": upload("broken run.txt", broken)},
    )
    assert answer.status_code == 400
    assert "broken run.txt, line 2, field &#x27;score&#x27;" in answer.content.decode()
    assert not RetrievalModel.objects.exists() and not Job.objects.exists()


def embedding_files(caption_ids, video_ids, dim: int = 4, seed: int = 0) -> dict:
    import io

    rng = np.random.default_rng(seed)

    def npy(rows: int) -> bytes:
        buffer = io.BytesIO()
        np.save(buffer, rng.normal(size=(rows, dim)).astype(np.float32))
        return buffer.getvalue()

    return {
        "captions_npy": upload("c.npy", npy(len(caption_ids))),
        "videos_npy": upload("v.npy", npy(len(video_ids))),
        "caption_ids": upload("c.txt", "".join(f"{k}\n" for k in caption_ids).encode()),
        "video_ids": upload("v.txt", "".join(f"{k}\n" for k in video_ids).encode()),
    }


def test_uploaded_embeddings_are_registered_and_searched(
    tiny, settings, django_capture_on_commit_callbacks
):
    researcher = signed_in(roles.RESEARCHER)
    files = embedding_files([f"c{i}" for i in range(6)], [f"v{i}" for i in range(6)])
    with django_capture_on_commit_callbacks(execute=True):
        answer = researcher.post(
            "/datasets/tiny/add-model/", {"name": "emb", "source": "embeddings", "k": 4, **files}
        )
    assert answer.status_code == 302, answer.content[:400]
    model = RetrievalModel.objects.get(dataset=tiny, name="emb")
    assert model.source == RetrievalModel.Source.EMBEDDINGS
    job = Job.objects.get(kind="predict")
    assert job.status == Job.Status.SUCCEEDED, job.error
    run = Run.objects.get(model=model)
    assert (run.depth, run.query_count) == (4, 6)
    assert leftover_inputs(settings) == []


def test_bad_embeddings_register_nothing(tiny, settings):
    researcher = signed_in(roles.RESEARCHER)
    files = embedding_files([f"c{i}" for i in range(6)], ["v0", "v1", "nope"])
    answer = researcher.post(
        "/datasets/tiny/add-model/", {"name": "emb", "source": "embeddings", **files}
    )
    assert answer.status_code == 400
    assert "video_ids.txt, line 3, field &#x27;id&#x27;: unknown video" in answer.content.decode()
    missing = researcher.post("/datasets/tiny/add-model/", {"name": "emb", "source": "embeddings"})
    assert missing.status_code == 400 and b"Choose captions.npy." in missing.content
    assert not RetrievalModel.objects.exists() and not Job.objects.exists()
    assert [p for p in leftover_inputs(settings) if p.is_file()] == []


def test_a_built_in_encoder_is_built_by_one_chained_job(tiny, django_capture_on_commit_callbacks):
    researcher = signed_in(roles.RESEARCHER)
    with django_capture_on_commit_callbacks(execute=True):
        answer = researcher.post(
            "/datasets/tiny/add-model/",
            {"name": "rand", "source": "encoder", "encoder": "random", "k": 5},
        )
    assert answer.status_code == 302, answer.content[:400]
    job = Job.objects.get(kind="build_model")
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert job.result["steps"] == ["embed", "search"] and job.result["run"] == "rand"
    run = Run.objects.get(dataset=tiny, name="rand")
    assert (run.depth, run.query_count) == (5, 6)
    page = researcher.get("/datasets/tiny/models/rand/").content.decode()
    assert "build_model" in page and "succeeded" in page
    assert (
        'href="/datasets/tiny/models/rand/"' in researcher.get(f"/jobs/{job.pk}/").content.decode()
    )


def test_a_chain_that_cannot_train_says_which_step_failed(tiny, django_capture_on_commit_callbacks):
    researcher = signed_in(roles.RESEARCHER)
    with django_capture_on_commit_callbacks(execute=True):
        answer = researcher.post(
            "/datasets/tiny/add-model/", {"name": "m", "source": "encoder", "encoder": "mme"}
        )
    assert answer.status_code == 302
    job = Job.objects.get(kind="build_model")
    assert job.status == Job.Status.FAILED
    assert job.message.startswith("step 2 of 4: training m (mme)")
    assert not job.error.startswith("Internal error"), job.error
    page = researcher.get("/datasets/tiny/models/m/").content.decode()
    assert "failed" in page and escape(job.error) in page
    assert "no &#x27;train&#x27; videos" in page
    assert not Run.objects.filter(name="m").exists()


def test_names_taken_and_sources_without_their_files_are_refused(tiny):
    researcher = signed_in(roles.RESEARCHER)
    RetrievalModel.objects.create(dataset=tiny, name="taken", source="run")
    taken = researcher.post(
        "/datasets/tiny/add-model/", {"name": "taken", "source": "encoder", "encoder": "random"}
    )
    assert taken.status_code == 400 and b"already has a model named" in taken.content
    for data, message in (
        ({"name": "x", "source": "run"}, b"Choose the run file."),
        ({"name": "x", "source": "encoder"}, b"Choose a built-in encoder."),
        ({"name": "x", "source": "encoder", "encoder": "nope"}, b"Select a valid choice"),
        ({"name": "x\x00", "source": "encoder", "encoder": "random"}, b"Null characters"),
    ):
        answer = researcher.post("/datasets/tiny/add-model/", data)
        assert answer.status_code == 400 and message in answer.content, data
    assert RetrievalModel.objects.count() == 1 and not Job.objects.exists()
    assert signed_in(roles.ANNOTATOR).get("/datasets/tiny/add-model/").status_code == 403


@pytest.mark.browser
@needs_chromium
@pytest.mark.django_db(transaction=True)
def test_an_admin_uploads_a_dataset_in_the_browser_and_sees_the_job_finish(
    live_server, browser, settings, tmp_path
):
    """The import job runs inside the upload's request (the immediate backend), so the job
    page it lands on shows it finished. A broken file ends in a failed job naming its line."""
    from tests.browser_support import login

    get_user_model().objects.create_superuser("boss", "boss@example.org", PASSWORD)
    good, bad = tmp_path / "demo captions.jsonl", tmp_path / "broken.jsonl"
    good.write_bytes((FIXTURES / "good.jsonl").read_bytes())
    bad.write_bytes((FIXTURES / "bad_wrong_type.jsonl").read_bytes())
    expected = sum(1 for line in good.read_text().splitlines() if line.strip())

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    login(page, live_server.url, "boss", PASSWORD)
    page.goto(f"{live_server.url}/datasets/")
    page.click("#upload-dataset")
    page.fill("#id_name", "browser-up")
    page.select_option("#id_format", "jsonl")
    page.set_input_files("#id_captions", str(good))
    page.click("button[type=submit] >> text=Upload and import")
    page.wait_for_url(f"{live_server.url}/jobs/*/")
    page.wait_for_function(
        "document.getElementById('job-state').textContent.trim() === 'succeeded'", timeout=20000
    )
    page.screenshot(path="/tmp/firepool-upload-job.png", full_page=True)
    assert Caption.objects.filter(dataset__name="browser-up").count() == expected

    page.goto(f"{live_server.url}/datasets/browser-up/")
    assert page.get_by_role("link", name="Add a model").is_visible()
    page.click("#upload-captions")
    assert page.input_value("#id_name") == "browser-up"
    page.set_input_files("#id_captions", str(bad))
    page.click("button[type=submit] >> text=Upload and import")
    page.wait_for_url(f"{live_server.url}/jobs/*/")
    page.wait_for_function(
        "document.getElementById('job-state').textContent.trim() === 'failed'", timeout=20000
    )
    error = page.locator("#job-error").inner_text()
    assert error.startswith("Failed: broken.jsonl, line 1, field 'caption_id'"), error
    page.screenshot(path="/tmp/firepool-upload-failed.png", full_page=True)
    assert Caption.objects.filter(dataset__name="browser-up").count() == expected
    page.goto(f"{live_server.url}/upload/dataset/")
    page.screenshot(path="/tmp/firepool-upload-page.png", full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280


@pytest.mark.browser
@needs_chromium
@pytest.mark.django_db(transaction=True)
def test_a_researcher_adds_a_run_file_in_the_browser(live_server, browser, tmp_path):
    from tests.browser_support import login

    query_dataset("tiny")
    user = get_user_model().objects.create_user("res", password=PASSWORD, is_staff=True)
    user.groups.add(roles.ensure_groups()[roles.RESEARCHER])
    run = tmp_path / "my run.txt"
    run.write_bytes(run_text([(f"c{i}", f"v{(i + j) % 6}") for i in range(6) for j in range(3)]))

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    login(page, live_server.url, "res", PASSWORD)
    page.goto(f"{live_server.url}/datasets/tiny/")
    page.click("#add-model")
    page.screenshot(path="/tmp/firepool-add-model.png", full_page=True)
    page.fill("#id_name", "mine")
    page.check("input[name=source][value=run]")
    page.set_input_files("#id_run", str(run))
    page.click("button[type=submit] >> text=Add the model")
    page.wait_for_url(f"{live_server.url}/datasets/tiny/models/mine/")
    page.screenshot(path="/tmp/firepool-model.png", full_page=True)
    assert page.locator("tr.model-job .job-state").inner_text() == "succeeded"
    assert page.get_by_role("link", name="mine").is_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280


class Recorder:
    """Collects what a chain reports: each step's message and the units counted in it."""

    def __init__(self):
        self.steps: list[list] = []

    def step(self, message: str, total: int | None = None, done: int = 0) -> None:
        self.steps.append([message, total, done])

    def advance(self, units: int = 1) -> None:
        self.steps[-1][2] += units


@pytest.mark.slow
@pytest.mark.django_db
def test_the_chain_runs_features_training_embedding_and_search_in_order():
    from retrieval.datasets.demo.service import create_demo_dataset
    from retrieval.datasets.uploads import build_model
    from retrieval.encoders.service import register_encoder

    world = create_demo_dataset(name="mini", n_videos=12, seed=4, workers=1)
    Video.objects.filter(dataset=world).update(features="")
    model = register_encoder(world, "m", "mme", {})
    recorder = Recorder()
    result = build_model(model, recorder, k=3, epochs=2, device="cpu")
    assert result["steps"] == ["features", "train", "embed", "search"]
    numbers = [message.split(":")[0] for message, _, _ in recorder.steps]
    assert numbers[0] == "step 1 of 4" and numbers[-1] == "step 4 of 4"
    assert numbers.index("step 2 of 4") < numbers.index("step 3 of 4")
    videos = Video.objects.filter(dataset=world).exclude(media="").count()
    assert recorder.steps[0][1:] == [videos, videos]  # every video's features, counted
    embedding = next(s for s in recorder.steps if s[0].startswith("step 3 of 4"))
    test_items = (
        Caption.objects.filter(dataset=world, split="test").count()
        + Video.objects.filter(dataset=world, split="test").count()
    )
    assert embedding[1:] == [test_items, test_items]
    assert [s[0] for s in recorder.steps if "epoch" in s[0]][-1].startswith(
        "step 2 of 4: training m: epoch 2 of 2"
    )
    model.refresh_from_db()
    assert model.weights and Run.objects.get(model=model).depth == 3
    # Run again, the chain skips what is done: no features to extract, nothing to train.
    Run.objects.filter(model=model).delete()
    again = build_model(model, Recorder(), k=3, device="cpu")
    assert again["steps"] == ["embed", "search"]

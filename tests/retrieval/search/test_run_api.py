"""The scoring API end to end: upload a TREC run with a token, poll, compare with rescore."""

import html

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from rest_framework.authtoken.models import Token

from config import roles
from jobs.models import Job
from retrieval.label_sets.judged import Judged
from retrieval.label_sets.service import load_judged, store_label_set
from retrieval.models import RetrievalModel, Run
from retrieval.scoring.rescoring_service import rescore_dataset
from retrieval.scoring.run_scoring import METRICS, score_run
from tests.factories import query_dataset, random_run

IMMEDIATE = {
    "default": {
        "BACKEND": "django_tasks.backends.immediate.ImmediateBackend",
        "QUEUES": ["default", "gpu"],
    }
}


def run_text(lines: list[tuple[str, str, float]], run_id: str = "mine") -> str:
    return "".join(
        f"{qid} Q0 {docno} {rank} {score} {run_id}\n"
        for rank, (qid, docno, score) in enumerate(lines, start=1)
    )


# Each caption ci's own video is vi; the run ranks v(i+1) above it, which the labels call
# relevant, so the corrected scores differ from the original ones.
VALID = run_text(
    [
        (f"c{i}", f"v{(i + j) % 6}", 1.0 - rank / 10)
        for i in range(6)
        for rank, j in enumerate((1, 0, 2, 3))
    ]
)


@pytest.fixture(autouse=True)
def _immediate(settings):
    settings.TASKS = IMMEDIATE  # (throttle history: emptied by conftest's _empty_cache)


@pytest.fixture
def dataset(db):
    dataset, videos, captions = query_dataset("tiny")
    pairs = Judged.build(
        [c.pk for c in captions[:4]] + [captions[4].pk],
        [videos[(i + 1) % 6].pk for i in range(4)] + [videos[0].pk],
        [1, 1, 0, 1, 0],
    )
    store_label_set(dataset, "human", pairs, source="import")
    return dataset


def user(name: str, role: str | None):
    made = get_user_model().objects.create_user(name, password="pw-long-enough-1")
    if role:
        made.groups.add(roles.ensure_groups()[role])
    return made


def token_client(who) -> Client:
    """A client that authenticates as a script does: ``Authorization: Token <key>``."""
    key = Token.objects.create(user=who).key
    return Client(HTTP_AUTHORIZATION=f"Token {key}")


def upload(client: Client, text: str, name: str = "mine", **extra):
    run = SimpleUploadedFile("my-run.txt", text.encode(), content_type="text/plain")
    return client.post("/api/datasets/tiny/runs/", {"run": run, "name": name, **extra})


def poll(client: Client, url: str, tries: int = 20) -> dict:
    for _ in range(tries):
        answer = client.get(url)
        assert answer.status_code == 200, answer.content
        body = answer.json()
        if body["status"] in ("done", "failed"):
            return body
    raise AssertionError(f"the job did not finish: {body}")


def test_a_run_uploaded_with_a_token_is_scored_like_rescore(
    dataset, django_capture_on_commit_callbacks
):
    researcher = token_client(user("res", roles.RESEARCHER))
    with django_capture_on_commit_callbacks(execute=True):
        answer = upload(researcher, VALID)
    assert answer.status_code == 202, answer.content
    url = answer.json()["url"]
    assert url.startswith("http://testserver/api/scores/") and answer["Location"] == url
    body = poll(researcher, url)
    assert body["status"] == "done" and body["error"] is None
    assert body["pooled"] is False and body["label_set"] == "human" and body["queries"] == 6
    assert set(body["scores"]) == set(body["original"]) == set(METRICS)

    expected = rescore_dataset(dataset, dataset.label_sets.get(), ["mine"]).result
    corrected, original = expected.means("corrected")["mine"], expected.means("original")["mine"]
    for name in METRICS:
        assert body["scores"][name] == pytest.approx(corrected[name], abs=1e-9)
        assert body["original"][name] == pytest.approx(original[name], abs=1e-9)
        assert 0.0 <= body["scores"][name] <= 1.0
    assert body["scores"]["C@1"] > body["original"]["C@1"] == 0.0
    # Labels without probabilities and nothing unjudged: every interval is the score itself.
    # (a set: PostgreSQL's jsonb, where the job's result is stored, keeps no key order)
    assert set(body["intervals"]) == {"C@1", "C@5", "C@10", "AP", "nDCG@10"}
    for name, interval in body["intervals"].items():
        assert interval["parts"] == []
        assert interval["low"] == interval["value"] == interval["high"] == body["scores"][name]
    model = RetrievalModel.objects.get(dataset=dataset, name="mine")
    assert model.source == RetrievalModel.Source.RUN and model.config["run_file"] == "my-run.txt"


def test_a_malformed_run_is_a_400_naming_line_and_field_and_writes_nothing(dataset):
    researcher = token_client(user("res", roles.RESEARCHER))
    broken = VALID + "c1 Q0 v3 5 not-a-number mine\n"
    answer = upload(researcher, broken)
    assert answer.status_code == 400
    detail = answer.json()["detail"]
    assert detail == "my-run.txt, line 25, field 'score': not a number: 'not-a-number'"
    unknown = upload(researcher, run_text([("c0", "v99", 1.0)]))
    assert unknown.status_code == 400 and "field 'docno'" in unknown.json()["detail"]
    empty = upload(researcher, "")
    assert empty.status_code == 400 and "no run lines" in empty.json()["detail"]
    assert not RetrievalModel.objects.filter(name="mine").exists()
    assert not Run.objects.filter(name="mine").exists() and not Job.objects.exists()


def test_name_clashes_unknown_labels_and_big_files_are_refused(dataset, settings):
    researcher = token_client(user("res", roles.RESEARCHER))
    random_run(dataset, "taken", 0)
    clash = upload(researcher, VALID, name="taken")
    assert clash.status_code == 409 and clash.json()["code"] == "name_taken"
    assert "already has a model named 'taken'" in clash.json()["detail"]
    no_labels = upload(researcher, VALID, labels="nope")
    assert (
        no_labels.status_code == 404 and "no label set named 'nope'" in no_labels.json()["detail"]
    )
    missing = researcher.post(
        "/api/datasets/elsewhere/runs/", {"run": SimpleUploadedFile("r.txt", b""), "name": "x"}
    )
    assert missing.status_code == 404
    settings.FIREPOOL_MAX_UPLOAD_BYTES = 10
    big = upload(researcher, VALID)
    assert big.status_code == 400 and "over the limit of 10 bytes" in big.json()["detail"]
    assert list(RetrievalModel.objects.values_list("name", flat=True)) == ["taken"]


def test_only_the_uploader_or_an_admin_reads_a_jobs_scores(
    dataset, django_capture_on_commit_callbacks
):
    uploader = user("res", roles.RESEARCHER)
    owner = token_client(uploader)
    with django_capture_on_commit_callbacks(execute=True):
        url = upload(owner, VALID).json()["url"]
    assert owner.get(url).status_code == 200
    other = token_client(user("res2", roles.RESEARCHER))
    assert other.get(url).status_code == 404
    # Another user's job reads as a job that does not exist, word for word.
    assert other.get(url).json() == owner.get("/api/scores/999999/").json()
    assert other.get(url).json()["code"] == "not_found"
    admin = token_client(user("boss", roles.ADMIN))
    assert admin.get(url).json()["status"] == "done"
    annotator = token_client(user("ann", roles.ANNOTATOR))
    assert annotator.get(url).status_code == 403
    assert upload(annotator, VALID, name="theirs").status_code == 403
    assert Client().get(url).status_code == 403
    # Another kind of job is not a scoring job.
    rescore = Job.objects.create(kind="rescore", created_by=uploader)
    assert owner.get(f"/api/scores/{rescore.pk}/").status_code == 404


def test_uploads_are_rate_limited_per_user(dataset, settings):
    settings.FIREPOOL_RUN_UPLOAD_RATE = "2/hour"
    first = token_client(user("res", roles.RESEARCHER))
    assert [upload(first, "bad").status_code for _ in range(3)] == [400, 400, 429]
    second = token_client(user("res2", roles.RESEARCHER))
    assert upload(second, "bad").status_code == 400


def test_a_session_works_too_and_a_queued_job_has_no_scores_yet(dataset):
    client = Client()
    client.force_login(user("res", roles.RESEARCHER))
    answer = upload(client, VALID)  # no on-commit callbacks run: the job stays queued
    assert answer.status_code == 202
    body = client.get(answer.json()["url"]).json()
    assert body == {
        "status": "queued",
        "error": None,
        "label_set": "human",
        "queries": None,
        "scores": None,
        "original": None,
        "pooled": False,
        "intervals": None,
    }


def test_a_label_set_with_probabilities_gives_the_api_its_intervals(
    dataset, django_capture_on_commit_callbacks
):
    """The same labels with a probability each (as Dawid-Skene gives): the API's intervals
    are :attr:`Rescoring.intervals`, and C@1 now rests on uncertain labels."""
    pairs = load_judged(dataset.label_sets.get())
    noisy = Judged.build(
        pairs.caption_ids,
        pairs.video_ids,
        pairs.relevance,
        confidence=[0.8 if r == 1 else 0.3 for r in pairs.relevance.tolist()],
    )
    store_label_set(dataset, "noisy", noisy, source="import")
    researcher = token_client(user("res", roles.RESEARCHER))
    with django_capture_on_commit_callbacks(execute=True):
        answer = upload(researcher, VALID, labels="noisy")
    body = poll(researcher, answer.json()["url"])
    assert body["status"] == "done" and body["label_set"] == "noisy"
    expected = rescore_dataset(
        dataset, dataset.label_sets.get(name="noisy"), ["mine"]
    ).result.intervals["mine"]
    assert body["intervals"] == {name: interval.as_dict() for name, interval in expected.items()}
    c1 = body["intervals"]["C@1"]
    assert c1["parts"] == ["label noise"]
    assert c1["value"] == pytest.approx(body["scores"]["C@1"])
    assert c1["low"] < c1["value"] <= c1["high"]


def test_a_run_the_label_sets_campaign_pooled_is_marked_pooled(dataset):
    run = random_run(dataset, "pooled", 1)
    label_set = dataset.label_sets.get()
    label_set.metadata = {"pooled_runs": ["pooled"], "pool_depth": 2}
    label_set.save()
    scored = score_run(dataset, run.name, label_set)
    assert scored.pooled is True and scored.label_set == "human"
    assert score_run(dataset, run.name, None).pooled is False


def test_the_schema_documents_the_multipart_upload_and_its_202(dataset):
    client = Client()
    client.force_login(user("res", roles.RESEARCHER))
    schema = client.get("/api/schema/", {"format": "json"}).json()
    post = schema["paths"]["/api/datasets/{dataset_name}/runs/"]["post"]
    body = post["requestBody"]["content"]
    assert list(body) == ["multipart/form-data"]
    upload_schema = schema["components"]["schemas"]["RunUpload"]
    assert upload_schema["properties"]["run"]["format"] == "binary"
    assert set(upload_schema["required"]) == {"run", "name"}
    assert {"202", "400", "404", "409", "429"} <= set(post["responses"])
    assert {"cookieAuth", "tokenAuth"} == {name for s in post["security"] for name in s}
    scores = schema["components"]["schemas"]["JobScores"]["properties"]
    assert set(scores) >= {"status", "error", "scores", "original", "pooled"}
    assert scores["status"]["$ref"].endswith("ScoreStatusEnum")


def test_a_token_for_a_script_comes_from_manage_py(dataset, capsys):
    researcher = user("res", roles.RESEARCHER)
    call_command("drf_create_token", "res")
    key = Token.objects.get(user=researcher).key
    assert key in capsys.readouterr().out
    answer = Client(HTTP_AUTHORIZATION=f"Token {key}").post("/api/datasets/tiny/runs/", {})
    assert answer.status_code == 400  # past authentication and the role check
    bad = Client(HTTP_AUTHORIZATION="Token not-a-key").post("/api/datasets/tiny/runs/", {})
    assert bad.status_code == 401 and bad["WWW-Authenticate"] == "Token"


def _registered() -> tuple[int, int, int]:
    return RetrievalModel.objects.count(), Run.objects.count(), Job.objects.count()


@pytest.mark.parametrize("first", ["form", "api"])
def test_one_run_upload_limit_whichever_door(dataset, settings, first):
    """The add-model page registers a run file as the API does, so 30 uploads an hour through
    either leave the 31st refused through both, with one message and nothing registered."""
    settings.FIREPOOL_RUN_UPLOAD_RATE = "30/hour"
    client = Client()
    client.force_login(user("res", roles.RESEARCHER))

    def form(name: str):
        run = SimpleUploadedFile("my-run.txt", VALID.encode(), content_type="text/plain")
        return client.post("/datasets/tiny/add-model/", {"name": name, "source": "run", "run": run})

    doors = {"form": (form, 302), "api": (lambda name: upload(client, VALID, name=name), 202)}
    send, accepted = doors[first]
    assert [send(f"run{i}").status_code for i in range(30)] == [accepted] * 30
    before = _registered()
    api = upload(client, VALID, name="one-too-many")
    assert api.status_code == 429 and int(api["Retry-After"]) > 0
    message = api.json()["detail"]
    assert message.startswith("Too many run files uploaded: at most 30/hour per user.")
    page = form("one-too-many")
    assert page.status_code == 429
    shown = page.content.decode()
    assert html.escape(message.partition(" Expected")[0]) in shown and "Expected available" in shown
    assert _registered() == before
    assert not RetrievalModel.objects.filter(name="one-too-many").exists()
    other = Client()
    other.force_login(user("res2", roles.RESEARCHER))
    assert upload(other, VALID, name="theirs").status_code == 202  # per user

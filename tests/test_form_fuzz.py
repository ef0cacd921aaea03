"""Property tests of the HTML form endpoints that take a POST (not in the OpenAPI schema):
adjudicate, resolve, promote to gold, add an annotator, job start and job retry, posted as an admin with random fields. No
input may give a 5xx."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from jobs.models import Job
from jobs.registry import kinds
from tests.annotation.judging.test_assignment import make_campaign
from tests.test_api_schema_fuzz import EXAMPLES, SCALE

EXAMPLES = EXAMPLES.__class__(EXAMPLES, max_examples=max(1, int(80 * SCALE)))
FIELDS = [
    "pair",
    "decision",
    "note",
    "dataset",
    "runs",
    "name",
    "depth",
    "campaign",
    "format",
    "model",
    "k",
    "seed",
    "max_labels",
    "lease_seconds",
    "queries",
    "labels",
    "proxy",
    "all_decided",
    "explanation",
    "guideline",
    "username",
    "email",
]
VALUES = st.one_of(
    st.text(max_size=40),
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(["", "\x00", "1\x00", "nan", "inf", "relevant", "return", "1e309", "é" * 300]),
)
FORMS = st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=6)


@pytest.fixture
def admin_client(db):
    admin = get_user_model().objects.create_user("form-fuzz", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(admin)
    return client


SEEN: set[int] = set()


def no_server_error(response) -> None:
    SEEN.add(response.status_code)
    assert response.status_code < 500, response.content[:300]


def test_campaign_forms_never_answer_with_a_server_error(admin_client):
    campaign = make_campaign()
    pairs = list(campaign.pairs.values_list("pk", flat=True))

    @EXAMPLES
    @given(
        data=FORMS,
        pair=st.sampled_from([None, *pairs]),
        path=st.sampled_from(["adjudicate", "resolve", "gold/promote", "annotators/add"]),
    )
    def check(data, pair, path):
        if pair is not None:
            data = {**data, "pair": str(pair)}
        no_server_error(admin_client.post(f"/campaigns/{campaign.pk}/{path}/", data))

    SEEN.clear()
    check()
    # The admin's session works and valid decisions get through: some answers are redirects.
    assert 302 in SEEN and 400 in SEEN, SEEN


def test_job_forms_never_answer_with_a_server_error(admin_client):
    failed = Job.objects.create(kind="export", arguments={}, status=Job.Status.FAILED)
    names = [kind.name for kind in kinds()] + ["nope", "\u00e9"]

    @EXAMPLES
    @given(data=FORMS, kind=st.sampled_from(names), retry=st.sampled_from([failed.pk, 10**12]))
    def check(data, kind, retry):
        no_server_error(admin_client.post(f"/jobs/start/{kind}/", data))
        no_server_error(admin_client.post(f"/jobs/{retry}/retry/", data))

    SEEN.clear()
    check()
    assert {302, 400, 404} <= SEEN, SEEN


UPLOAD_FIELDS = [
    "name",
    "format",
    "videos",
    "video_url",
    "split",
    "source",
    "encoder",
    "labels",
    "k",
    "epochs",
]
UPLOAD_VALUES = st.one_of(
    VALUES,
    st.sampled_from(["jsonl", "msrvtt-json", "epic-csv", "run", "embeddings", "encoder", "random"]),
    st.sampled_from(["{video_id}", "{0}", "{video_id!r:>{key}}", "/", "..", "/etc", "{" * 50]),
)
FILE_FIELDS = ["captions", "run", "captions_npy", "videos_npy", "caption_ids", "video_ids"]
FILE_BYTES = st.one_of(
    st.binary(max_size=200),
    st.sampled_from([b"", b"\x93NUMPY", b"c0 Q0 v0 1 1e309 x\n", b'{"video_id": [[[]]]}\n']),
)


def test_upload_pages_never_answer_with_a_server_error(admin_client, settings, tmp_path):
    """Odd names, huge numbers, nested junk and random files, posted to both upload pages."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.factories import query_dataset

    settings.TASKS = {
        "default": {
            "BACKEND": "django_tasks.backends.immediate.ImmediateBackend",
            "QUEUES": ["default", "gpu"],
        }
    }
    query_dataset("fuzz")

    @EXAMPLES
    @given(
        data=st.dictionaries(st.sampled_from(UPLOAD_FIELDS), UPLOAD_VALUES, max_size=7),
        files=st.dictionaries(st.sampled_from(FILE_FIELDS), FILE_BYTES, max_size=4),
        file_name=st.sampled_from(["a.jsonl", "../../x", "é" * 300, "a\x00b", ""]),
        path=st.sampled_from(["/upload/dataset/", "/datasets/fuzz/add-model/"]),
    )
    def check(data, files, file_name, path):
        uploads = {
            name: SimpleUploadedFile(file_name or "f", content) for name, content in files.items()
        }
        no_server_error(admin_client.post(path, {**data, **uploads}))

    SEEN.clear()
    check()
    assert 400 in SEEN, SEEN

"""POST /api/campaigns/: an admin queues the pool job through the API with every option of the
New campaign page and ``create_campaign``, checked by the pool job's own form: the job equals
the one ``manage.py jobs submit pool`` queues, runs to the campaign asked for, and bad input
is a 400 naming the field with nothing queued."""

import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import TestCase
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from annotation.campaigns.settings import DEFAULT_HALF_WIDTH, DEFAULT_SETTLE
from annotation.models import Campaign
from config import api_tokens, roles
from jobs import runner
from jobs.management.commands.jobs import parse_value
from jobs.models import Job
from tests.factories import query_dataset, random_run

URL = "/api/campaigns/"
IMMEDIATE = {
    "default": {
        "BACKEND": "django_tasks.backends.immediate.ImmediateBackend",
        "QUEUES": ["default", "gpu"],
    }
}

OPTIONS = {
    "name": "by-api",
    "depth": 3,
    "queries": 4,
    "seed": 7,
    "policy": "adaptive",
    "confidence": 0.9,
    "second_label_rate": 0.0,
    "max_labels": 6,
    "lease_seconds": 120,
    "show_roles": False,
    "judging_order": "maxmean",
    "budget": 50,
    "settle": ["ap", "C@1", "NDCG@10"],
    "half_width": 2.5,
    "gold_rate": 0.2,
    "qualification": 0,
    "qualification_threshold": 0.75,
    "speed_floor": 2.0,
    "guidelines": "Judge the whole clip.\nSay relevant when the caption happens in it.",
}
"""Every campaign option the API takes, none at its default."""

COMMAND_TEXT = [
    "name=by-api",
    "depth=3",
    "queries=4",
    "seed=7",
    "policy=adaptive",
    "confidence=0.9",
    "second_label_rate=0",
    "max_labels=6",
    "lease_seconds=120",
    "show_roles=no",
    "judging_order=maxmean",
    "budget=50",
    "settle=ap,C@1,NDCG@10",
    "half_width=2.5",
    "gold_rate=0.2",
    "qualification=0",
    "qualification_threshold=0.75",
    "speed_floor=2",
    "guidelines=Judge the whole clip.\nSay relevant when the caption happens in it.",
]
"""The same options as ``manage.py jobs submit pool`` takes them (name=value text)."""

BAD = [
    # (field, posted value): each must be refused on that field
    ("depth", 10**30),
    ("depth", 0),
    ("depth", "ten"),
    ("depth", 2.5),
    ("depth", [3]),
    ("seed", 2**63),
    ("queries", 0),
    ("max_labels", 10**19),
    ("half_width", "NaN"),
    ("half_width", "inf"),
    ("half_width", 1e308),
    ("half_width", 0),
    ("half_width", -1),
    ("half_width", "wide"),
    ("half_width", [1.0]),
    ("settle", ["c@2"]),
    ("settle", ["recall"]),
    ("settle", ["C@1", "c@1"]),
    ("settle", "C@1"),
    ("settle", {"C@1": True}),
    ("confidence", float("1e300")),
    ("second_label_rate", 2),
    ("gold_rate", 0.9),
    ("qualification", 10**6),
    ("lease_seconds", 10**12),
    ("budget", -5),
    ("policy", "best"),
    ("judging_order", 3),
    ("show_roles", "maybe"),
    ("name", "a/b"),
    ("name", "line\u2028break"),
    ("name", ""),
    ("name", "x" * 500),
    ("name", None),
    ("dataset", "no-such-dataset"),
    ("dataset", 987654321),
    ("runs", ["no-such-run"]),
    ("runs", []),
    ("runs", "r1"),
    ("runs", [987654321]),
]


@pytest.fixture
def pooled(db, settings, tmp_path):
    settings.FIREPOOL_JOB_OUTPUT_DIR = tmp_path
    dataset, _, _ = query_dataset("api-doors", n=12)
    random_run(dataset, "r1", seed=1)
    random_run(dataset, "r2", seed=2)
    return dataset


def client_for(user) -> APIClient:
    client = APIClient(enforce_csrf_checks=True)
    if user is not None:
        client.force_authenticate(user)
    return client


def body(found, /, **values) -> dict:
    return {"dataset": found.name, "runs": ["r1", "r2"], **OPTIONS, **values}


def counts() -> tuple[int, int]:
    return Job.objects.count(), Campaign.objects.count()


def test_the_posted_job_is_the_one_the_command_submits(pooled, people):
    answer = client_for(people["admin"]).post(URL, body(pooled), format="json")
    assert answer.status_code == 202, answer.json()
    got = answer.json()
    posted = Job.objects.get(pk=got["job"])
    assert got["status"] == "queued" and got["campaign"] is None  # queued, not yet run
    assert got["url"].endswith(f"/api/campaign-jobs/{posted.pk}/")
    assert answer["Location"] == got["url"]
    assert (posted.kind, posted.created_by) == ("pool", people["admin"])
    text = ["dataset=" + pooled.name, "runs=r1,r2", *COMMAND_TEXT]
    submitted = runner.submit("pool", dict(parse_value(each) for each in text))
    submitted.refresh_from_db()
    assert posted.arguments == submitted.arguments
    assert posted.arguments["settle"] == ["C@1", "AP", "nDCG@10"]
    assert posted.arguments["half_width"] == 2.5 and posted.arguments["show_roles"] is False
    assert posted.description == submitted.description
    assert not Campaign.objects.exists()


def test_running_the_job_creates_the_campaign_as_posted(pooled, people, settings):
    settings.TASKS = IMMEDIATE
    with TestCase.captureOnCommitCallbacks(execute=True):
        answer = client_for(people["admin"]).post(URL, body(pooled), format="json")
    assert answer.status_code == 202, answer.json()
    got = answer.json()
    job = Job.objects.get(pk=got["job"])
    assert job.status == Job.Status.SUCCEEDED, job.error
    campaign = Campaign.objects.get(name="by-api")
    assert got["status"] == "queued" and got["campaign"] is None  # it ran after the answer
    chosen = campaign.settings
    assert (chosen.settle, chosen.half_width) == (("C@1", "AP", "nDCG@10"), 2.5)
    assert chosen.label_policy.name == "adaptive" and chosen.label_policy.confidence == 0.9
    assert (chosen.judging.strategy, chosen.judging.budget) == ("maxmean", 50)
    assert (chosen.show_roles, chosen.gold.rate, chosen.gold.floor_seconds) == (False, 0.2, 2.0)
    assert (campaign.max_labels, campaign.lease_seconds) == (6, 120)
    assert campaign.guidelines == OPTIONS["guidelines"]
    assert campaign.pairs.values("caption_id").distinct().count() == 4  # the query sample


def test_omitted_options_take_the_defaults_of_create_campaign(pooled, people, settings):
    settings.TASKS = IMMEDIATE
    plain = {"dataset": pooled.name, "runs": ["r1"], "name": "plain-api"}
    with TestCase.captureOnCommitCallbacks(execute=True):
        answer = client_for(people["admin"]).post(URL, plain, format="json")
    assert answer.status_code == 202, answer.json()
    arguments = Job.objects.get(pk=answer.json()["job"]).arguments
    assert arguments["settle"] == list(DEFAULT_SETTLE)
    assert arguments["half_width"] == DEFAULT_HALF_WIDTH and arguments["show_roles"] is True
    by_api = Campaign.objects.get(name="plain-api")
    out = io.StringIO()
    call_command(
        "create_campaign",
        *("--dataset", pooled.name, "--runs", "r1", "--name", "plain-command"),
        *("--depth", "10", "--format", "json"),
        stdout=out,
    )
    assert json.loads(out.getvalue())["settle"] == list(DEFAULT_SETTLE)
    by_command = Campaign.objects.get(name="plain-command")
    assert by_api.settings == by_command.settings
    assert (by_api.settings.settle, by_api.settings.half_width) == (DEFAULT_SETTLE, 1.0)
    columns = ("depth", "seed", "second_label_rate", "max_labels", "lease_seconds", "guidelines")
    for column in columns:
        assert getattr(by_api, column) == getattr(by_command, column), column
    assert by_api.pairs.count() == by_command.pairs.count() > 0


@pytest.mark.django_db(transaction=True)
def test_the_answer_names_the_campaign_when_the_job_ran_before_it(pooled, people, settings):
    settings.TASKS = IMMEDIATE  # no transaction around the request: the job runs at once
    answer = client_for(people["admin"]).post(URL, body(pooled), format="json")
    assert answer.status_code == 202, answer.json()
    got = answer.json()
    assert got["status"] == "succeeded", Job.objects.get(pk=got["job"]).error
    assert got["campaign"] == Campaign.objects.get(name="by-api").pk


@pytest.mark.parametrize(("field", "value"), BAD)
def test_bad_input_is_refused_on_its_field_and_queues_nothing(pooled, people, field, value):
    before = counts()
    answer = client_for(people["admin"]).post(URL, body(pooled, **{field: value}), format="json")
    assert answer.status_code == 400, answer.json()
    got = answer.json()
    assert got["code"] == "invalid" and field in got["detail"], got
    assert all(isinstance(message, str) and message for message in got["detail"][field])
    assert counts() == before


def test_a_campaign_name_taken_is_refused_and_queues_nothing(pooled, people, settings):
    settings.TASKS = IMMEDIATE
    client = client_for(people["admin"])
    with TestCase.captureOnCommitCallbacks(execute=True):
        assert client.post(URL, body(pooled), format="json").status_code == 202
    before = counts()
    again = client.post(URL, body(pooled), format="json")
    assert again.status_code == 400 and "by-api" in json.dumps(again.json()["detail"])
    assert counts() == before


@pytest.mark.parametrize("name", ["halfwidth", "gold", "gold_name"])
def test_a_field_the_form_does_not_take_is_refused(pooled, people, name):
    answer = client_for(people["admin"]).post(URL, body(pooled, **{name: "x"}), format="json")
    assert answer.status_code == 400 and name in answer.json()["detail"], answer.json()
    assert counts() == (0, 0)


@pytest.mark.parametrize(
    "extra",
    [
        ', "half_width": NaN',
        ', "half_width": -Infinity',
        ', "depth": 1e400',
        ', "seed": 1' + "0" * 5000,
    ],
)
def test_numbers_no_field_can_hold_are_refused(pooled, people, extra):
    text = json.dumps(body(pooled))[:-1] + extra + "}"
    answer = client_for(people["admin"]).post(URL, text, content_type="application/json")
    assert answer.status_code == 400, answer.content
    assert counts() == (0, 0)


@pytest.mark.parametrize("text", ["{", "[]", '"campaign"', "null"])
def test_a_body_that_is_no_object_is_refused(pooled, people, text):
    answer = client_for(people["admin"]).post(URL, text, content_type="application/json")
    assert answer.status_code == 400, answer.content
    assert counts() == (0, 0)


@pytest.mark.parametrize(("who", "status"), [(None, 403), ("annotator", 403), ("researcher", 403)])
def test_only_admins_create_campaigns(pooled, people, who, status):
    answer = client_for(people.get(who)).post(URL, body(pooled), format="json")
    assert answer.status_code == status
    assert answer.json()["code"] in ("not_authenticated", "permission_denied")
    assert counts() == (0, 0)


def admin_script(name: str):
    """An admin of the role (no superuser) and an API client holding a token of theirs."""
    admin = get_user_model().objects.create_user(name, password=f"pw-{name}-1")
    admin.groups.add(roles.ensure_groups()[roles.ADMIN])
    _, key = api_tokens.create(admin, "script")
    script = APIClient()
    script.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return admin, script


def test_the_admin_role_and_its_token_may_create_and_others_tokens_may_not(pooled, people):
    admin, script = admin_script("role-admin")
    answer = script.post(URL, body(pooled), format="json")
    assert answer.status_code == 202, answer.json()
    assert Job.objects.get(pk=answer.json()["job"]).created_by == admin
    _, other = api_tokens.create(people["researcher"], "script")
    script.credentials(HTTP_AUTHORIZATION=f"Token {other}")
    refused = script.post(URL, body(pooled, name="other"), format="json")
    assert refused.status_code == 403 and Job.objects.count() == 1
    script.credentials(HTTP_AUTHORIZATION="Token fp_not-a-key")
    assert script.post(URL, body(pooled, name="other"), format="json").status_code == 401
    # The judging actions keep to the session: a token is not read there.
    assert script.get(URL).status_code == 403


def test_a_script_follows_its_campaign_with_its_token(pooled, people):
    _, script = admin_script("job-admin")
    answer = script.post(URL, body(pooled, name="followed"), format="json")
    assert answer.status_code == 202, answer.json()
    followed = script.get(answer["Location"])
    assert followed.status_code == 200, followed.content
    got = followed.json()
    assert got["job"] == answer.json()["job"] and got["url"] == answer["Location"]
    assert got["status"] in {"queued", "running", "succeeded"}
    if got["status"] == "succeeded":
        assert Campaign.objects.get(pk=got["campaign"]).name == "followed"
    # another kind's job, no job, and no admin: nothing to read
    other = Job.objects.create(kind="score-run", arguments={})
    assert script.get(f"/api/campaign-jobs/{other.pk}/").status_code == 404
    assert script.get("/api/campaign-jobs/999999999999/").status_code == 404
    _, annotator_key = api_tokens.create(people["annotator"], "script")
    script.credentials(HTTP_AUTHORIZATION=f"Token {annotator_key}")
    assert script.get(answer["Location"]).status_code == 403


def test_the_schema_describes_the_request_and_the_answer(people, client):
    schema = SchemaGenerator().get_schema(request=None, public=True)
    operation = schema["paths"]["/api/campaigns/"]["post"]
    request = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    answer = operation["responses"]["202"]["content"]["application/json"]["schema"]["$ref"]
    assert {"400", "403"} <= set(operation["responses"])
    components = schema["components"]["schemas"]
    posted = components[request.rsplit("/", 1)[1]]
    assert {"dataset", "runs", "name"} <= set(posted["required"])
    assert posted["properties"]["settle"]["type"] == "array"
    assert posted["properties"]["half_width"]["type"] == "number"
    assert posted["properties"]["depth"]["type"] == "integer"
    assert posted["properties"]["show_roles"]["type"] == "boolean"
    assert "gold" not in posted["properties"]
    assert set(components[answer.rsplit("/", 1)[1]]["properties"]) == {
        "job",
        "status",
        "url",
        "campaign",
        "percent",
        "message",
        "error",
    }
    client.force_login(people["admin"])
    served = client.get("/api/schema/")
    assert served.status_code == 200 and b"CampaignCreate" in served.content


def test_the_body_takes_every_field_of_the_pool_form_but_the_gold_upload():
    from annotation.api.serializers import CampaignCreateSerializer
    from annotation.campaigns.jobs import PoolForm

    taken = set(CampaignCreateSerializer().fields)
    assert taken == set(PoolForm.base_fields) - {"gold", "gold_name"}

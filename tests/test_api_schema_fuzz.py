"""Property tests of the API against its own OpenAPI schema: no input gives a 5xx.

Schemathesis reads the schema served at ``/api/schema/`` (fetched in process with a
signed-in session, since the schema is for signed-in users) and sends the requests it
generates for every operation, schema-conforming and schema-violating ones, to the WSGI
application in process with the session cookie and CSRF token of an annotator or an admin.
Half the cases are aimed at the real campaign and its real pairs (by the caller's task ids), so the judging code runs
and not only the 404 path; for the scoring API, at the campaign's dataset with a well-formed
or a broken run file in the multipart body, and at a real scoring job. Half the cases then
have every integer of their body (JSON or form) and, unless aimed, of their path pushed to
one no row can hold (past 32 and 64 bits, negative, up to 10^30). Each response must pass
schemathesis's ``not_a_server_error``.
"""

import os
import secrets
import uuid
from collections import Counter

import pytest
import schemathesis
from django.contrib.auth import get_user_model
from django.core import signals
from django.core.cache import cache
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.test import Client
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode

from annotation.judging import task_ids
from annotation.models import Campaign
from config import roles
from jobs.models import Job
from tests.factories import make_campaign

RUN_FILES = (
    b"c0 Q0 v1 1 0.5 fuzz\nc1 Q0 v2 1 0.25 fuzz\n",  # well formed
    b"c0 Q0 v1 1 high fuzz\n",  # a score that is not a number
    b"c0 Q0 v99 1 0.5 fuzz\n",  # a video the dataset does not have
    b"c0 Q0 v1\n",  # missing fields
    b"\xff\xfe c0\x00",  # not UTF-8 text
)
"""Run files the upload operation is aimed with: one good, the rest broken."""

RESEARCH_PATHS = ("/api/datasets/", "/api/scores/")
"""Operations annotators are refused (uploading and scoring runs)."""
RESEARCH_SUFFIXES = ("/annotator-scores/", "/active-stages/")
"""Campaign operations annotators are refused (campaign reports)."""
ADMIN_OPERATIONS = ("POST /api/campaigns/",)
"""Operations only admins may call (creating a campaign)."""
UNREAD = "unread body"
"""A 400 for a body no parser reads: the CSRF check parses it while authenticating, before
any permission, so it tells nothing about the caller's role."""

EXTREMES = (10**30, -(10**30), 2**31, -(2**31) - 1, 2**63 - 1, 2**63, -(2**63) - 1, 2**64, -1, 0)
"""Integers no row can hold: past 32 and 64 bits either way, negative, zero, 10^30."""
EXTREME_INTS = st.one_of(
    st.sampled_from(EXTREMES),
    st.integers(min_value=2**31, max_value=10**30),
    st.integers(min_value=-(10**30), max_value=-1),
)
""":data:`EXTREMES` and more like them, for the property test."""

SCALE = float(os.environ.get("FIREPOOL_FUZZ_SCALE", "1"))
"""Multiplies the example budget: ``FIREPOOL_FUZZ_SCALE=20`` for a long bug hunt."""

EXAMPLES = settings(
    max_examples=max(1, int(12 * SCALE)),
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    database=None,
)


def operation_labels() -> list[str]:
    """``METHOD /path`` of every operation the schema lists (read without a request)."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return [
        f"{method.upper()} {path}"
        for path, operations in schema["paths"].items()
        for method in operations
    ]


@pytest.fixture
def wsgi_app():
    """The project's WSGI app, without closing the test's database connection per request.

    Django closes "old" connections when a request starts and finishes; inside a test
    transaction that would close it, so the signal is detached, as Django's test client does.
    """
    for signal in (signals.request_started, signals.request_finished):
        signal.disconnect(close_old_connections)
    yield get_wsgi_application()
    for signal in (signals.request_started, signals.request_finished):
        signal.connect(close_old_connections)


@pytest.fixture
def world(db):
    """An active campaign with pairs, a scoring job, and a logged-in annotator and admin."""
    cache.clear()  # no upload throttled by an earlier test's counts
    groups = roles.ensure_groups()
    campaign = make_campaign(n_queries=4, depth=4)
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.ACTIVE)
    User = get_user_model()
    annotator = User.objects.create_user("fuzz-annotator")  # no password: force_login only
    annotator.groups.add(groups[roles.ANNOTATOR])
    admin = User.objects.create_user("fuzz-admin", is_staff=True, is_superuser=True)
    sessions, tasks = {}, {}
    pairs = list(campaign.pairs.values_list("pk", flat=True))
    for who, user in (("annotator", annotator), ("admin", admin)):
        tasks[who] = [task_ids.encode(user.pk, pk) for pk in pairs]  # the ids next/ serves
        client = Client()
        client.force_login(user)
        token = secrets.token_hex(16)  # a CSRF secret: 32 characters from the allowed set
        sessions[who] = {
            "cookies": {"sessionid": client.cookies["sessionid"].value, "csrftoken": token},
            "headers": {"X-CSRFToken": token},
        }
    job = Job.objects.create(kind="score_run", created_by=admin)
    served = client.get("/api/schema/", {"format": "json"})
    assert served.status_code == 200
    return {
        "campaign": campaign.pk,
        "tasks": tasks,
        "dataset": campaign.dataset.name,
        "job": job.pk,
        "sessions": sessions,
        "schema": served.json(),
    }


def aim_at_world(case, world: dict, data, who: str) -> None:
    """Point the case's path and body at the world's campaign, pairs (as ``who``'s task ids),
    dataset and job."""
    path = case.path_parameters or {}
    if "id" in path:
        path["id"] = world["campaign"]
        if isinstance(case.body, dict) and "pair" in case.body:
            case.body["pair"] = data.draw(st.sampled_from(world["tasks"][who]))
    if "dataset_name" in path:
        path["dataset_name"] = world["dataset"]
        if isinstance(case.body, dict):
            case.body["run"] = data.draw(st.sampled_from(RUN_FILES))
            case.body.pop("labels", None)  # the dataset's default label set
    if "job_id" in path:
        path["job_id"] = world["job"]


def push_to_extremes(case, data, path: bool) -> None:
    """Replace every integer of the case's body (JSON or form, nested too) and, with ``path``,
    of its path with one of :data:`EXTREME_INTS`: after aiming, the real campaign meets
    impossible pair ids; otherwise impossible campaign and job ids are asked for too."""

    def pushed(value):
        if isinstance(value, bool):
            return value
        if isinstance(value, int):
            return data.draw(EXTREME_INTS)
        if isinstance(value, dict):
            return {key: pushed(item) for key, item in value.items()}
        if isinstance(value, list):
            return [pushed(item) for item in value]
        return value

    if path and case.path_parameters:
        case.path_parameters = pushed(case.path_parameters)
    if isinstance(case.body, dict | list):
        case.body = pushed(case.body)


@pytest.mark.parametrize("who", ["annotator", "admin"])
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
@pytest.mark.parametrize("label", operation_labels())
def test_no_operation_answers_with_a_server_error(world, wsgi_app, label, mode, who):
    session = world["sessions"][who]
    statuses: Counter[int] = Counter()
    schema = schemathesis.openapi.from_dict(world["schema"])
    schema.app = wsgi_app  # what from_wsgi does; it cannot send the session cookie itself
    operation = schema.find_operation_by_label(label)
    assert operation is not None, label

    @EXAMPLES
    @given(
        case=operation.as_strategy(generation_mode=mode),
        aim=st.booleans(),
        extreme=st.booleans(),
        data=st.data(),
    )
    def check(case, aim, extreme, data):
        if aim:
            aim_at_world(case, world, data, who)
        if extreme:
            push_to_extremes(case, data, path=not aim)
        response = case.call(headers=session["headers"], cookies=session["cookies"])
        unread = response.status_code == 400 and b'"code":"parse_error"' in response.content
        statuses[UNREAD if unread else response.status_code] += 1
        case.validate_response(response, checks=[not_a_server_error])

    check()
    path = label.split()[1]
    refused = label in ADMIN_OPERATIONS or path.startswith(RESEARCH_PATHS)
    if who == "annotator" and (refused or path.endswith(RESEARCH_SUFFIXES)):
        # Scoring runs is for researchers and admins, creating campaigns for admins (a path no route matches is a 404; a
        # body of a media type the operation does not take is a 415 first, since the CSRF
        # check reads the form while authenticating, before permissions: it tells nothing).
        assert 403 in statuses and set(statuses) <= {403, 404, 415, UNREAD}, statuses
        return
    # The session and CSRF token must work: not every answer may be a refusal to authenticate.
    assert set(statuses) - {401, 403}, statuses


def _resolved(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def valid_request(
    schema: dict, label: str, world: dict, who: str
) -> tuple[dict, dict | None, list[str]]:
    """Path parameters and a JSON body the operation accepts, aimed at the world (the task id
    is ``who``'s own), and the names of the id slots (``path:id``, ``body:pair``) to push to
    extremes: the integer ones, and the task id, which a client may send as a number."""
    method, path = label.split()
    operation = schema["paths"][path][method.lower()]
    aimed = {"id": world["campaign"], "job_id": world["job"], "dataset_name": world["dataset"]}
    params = {p["name"]: aimed[p["name"]] for p in operation.get("parameters", [])}
    slots = [f"path:{p['name']}" for p in operation.get("parameters", [])
             if p["in"] == "path" and p["schema"].get("type") == "integer"]  # fmt: skip
    content = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if content is None:
        return params, None, slots
    body = {}
    for name, prop in _resolved(schema, content["schema"]).get("properties", {}).items():
        prop = _resolved(schema, prop)
        if prop.get("readOnly"):
            continue
        if name == "pair":
            body[name] = world["tasks"][who][0]
            slots.append(f"body:{name}")
        elif prop.get("type") == "integer":
            body[name] = 1
            slots.append(f"body:{name}")
        elif prop.get("type") == "number":
            body[name] = 2.5
        elif prop.get("type") == "boolean":
            body[name] = True
        elif "enum" in prop:
            body[name] = prop["enum"][0]
        elif prop.get("format") == "uuid":
            body[name] = str(uuid.uuid4())
        else:
            body[name] = "fuzz"
    return params, body, slots


@pytest.mark.parametrize("who", ["annotator", "admin"])
@pytest.mark.parametrize("label", operation_labels())
def test_every_integer_slot_refuses_impossible_ids(world, label, who):
    """Each integer path parameter and body field (JSON and form), in turn, at each of
    :data:`EXTREMES` with everything else valid and real: a 400, 403 or 404, never a 5xx."""
    schema = world["schema"]
    params, body, slots = valid_request(schema, label, world, who)
    method, path = label.split()
    client = Client(raise_request_exception=False)  # every answer, then the 5xx among them
    client.force_login(get_user_model().objects.get(username=f"fuzz-{who}"))
    answers = []
    for slot, value in ((slot, value) for slot in slots for value in EXTREMES):
        where, name = slot.split(":")
        sent_params = {**params, name: value} if where == "path" else params
        sent_body = {**body, name: value} if where == "body" else body
        if sent_body is not None and "uuid" in sent_body:
            sent_body["uuid"] = str(uuid.uuid4())
        url = path.format(**sent_params)
        for form in (False, True) if sent_body is not None else (False,):
            if method == "GET":
                response = client.get(url)
            elif form:
                response = client.post(url, sent_body)
            else:
                response = client.post(url, sent_body or {}, content_type="application/json")
            answers.append((slot, value, "form" if form else "json", response.status_code))
    failures = [answer for answer in answers if answer[3] not in (400, 403, 404)]
    assert not failures, failures

"""Gold tasks cannot be told from real ones by anything the annotator receives.

Two annotators each judge a few hundred tasks through the API of a campaign with a 20% gold
rate; every response is recorded as the annotator sees it, and the kind of each task is
looked up only afterwards, from the server's side. Then, feature by feature:

- ids: the served id's format is the same for both kinds, and as numbers the ids of gold
  tasks do not rank above or below the others (the area under the ROC curve of the best
  threshold on them is 0.5 up to chance; on a random order its standard deviation is about
  0.03 here, and the bound is 0.2, more than six of them, so the test cannot flake; before
  the fix it was exactly 1: gold tasks had the highest pair ids);
- fields: the set of keys and value types of every task, and of every submit's answer;
- what a submit changes: the progress counters (judged today +1, labels left -1), the
  ``created`` flag and the feedback, exactly the same sets for both kinds;
- undo: after an answer on either kind, undo shows that task again (same id), the counters
  step back, a retry of the undone id is refused alike and a new answer is taken alike;
- timing: not measured as wall time, which on a shared machine would only make the test
  flaky; instead, what makes a request take longer: the number of SQL statements each
  submit runs (deterministic, unlike a clock). Over the run, gold and real submits must
  run the same median number of statements (17 on both databases when this was written),
  and every count of one kind must lie within one statement of the other kind's range.
"""

import re
import statistics
import uuid
from datetime import datetime, timedelta

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.gold import tasks as gold_queue
from annotation.judging import errors, escalations, submit, task_ids
from annotation.models import Escalation, GoldPair
from tests.factories import add_gold, make_campaign

TASKS_PER_ANNOTATOR = 170
UNDO_EVERY = 7


def _auc(gold: list[float], real: list[float]) -> float:
    """Area under the ROC curve of ranking by value (Mann-Whitney U / (n1 n2)), ties half."""
    gold_values, real_values = np.asarray(gold, float), np.asarray(real, float)
    above = (gold_values[:, None] > real_values[None, :]).sum()
    ties = (gold_values[:, None] == real_values[None, :]).sum()
    return float(above + ties / 2) / (gold_values.size * real_values.size)


def _signature(value) -> object:
    """Keys and value types, recursively: what a client sees of a response's shape."""
    if isinstance(value, dict):
        return tuple(sorted((key, _signature(item)) for key, item in value.items()))
    if isinstance(value, list):
        return ("list", tuple(sorted({repr(_signature(item)) for item in value})))
    return type(value).__name__


def _shape(text: str) -> str:
    return re.sub(r"[0-9]+", "9", text)


@pytest.mark.django_db
def test_gold_tasks_cannot_be_told_from_real_ones(people):
    campaign = make_campaign(n_queries=45, depth=8, seed=4, lease_seconds=600)
    add_gold(campaign, 80, rate=0.2)
    # Every answer below is "irrelevant", right on every gold pair: nobody is paused.
    GoldPair.objects.filter(campaign=campaign).update(label="irrelevant")
    gold_queue.ensure_tasks(campaign)  # as importing or promoting gold does
    base = f"/api/campaigns/{campaign.pk}/"
    served = {"gold": [], "real": []}  # (annotator id, task dict)
    answers = {"gold": set(), "real": set()}  # what a submit changed, as the client sees it
    undos = {"gold": set(), "real": set()}
    statements = {"gold": [], "real": []}
    shapes = {"gold": set(), "real": set()}

    def kind(user, task: dict) -> str:
        """Which kind the task is, looked up on the server's side only."""
        pair_id = task_ids.decode(user.pk, task["pair"])
        assert pair_id is not None, "every served id names its pair for its annotator"
        return "gold" if GoldPair.objects.filter(task_id=pair_id).exists() else "real"

    for user in (people["annotator"], people["other"]):
        client = APIClient()
        client.force_authenticate(user)
        body = client.post(base + "next/").json()
        for step in range(TASKS_PER_ANNOTATOR):
            current = body["current"]
            if current is None:
                break
            which = kind(user, current)
            served[which].append((user.pk, current))
            shapes[which].add(_signature(current))
            expires = datetime.fromisoformat(current["expires_at"].replace("Z", "+00:00"))
            shapes[which].add(
                ("lease", round((expires - datetime.now(expires.tzinfo)).total_seconds(), -2))
            )
            shapes[which].add(("video", _shape(current["video_url"])))
            before = body["progress"]
            key = str(uuid.uuid4())
            answer = {"pair": current["pair"], "label": "irrelevant", "uuid": key, "seconds": 2.5}
            with CaptureQueriesContext(connection) as queries:
                response = client.post(base + "submit/", answer, format="json")
            assert response.status_code == 200, response.content
            statements[which].append(len(queries))
            body = response.json()
            shapes[which].add(
                (
                    "submit",
                    _signature({k: v for k, v in body.items() if k not in ("current", "upcoming")}),
                )
            )
            after = body["progress"]
            answers[which].add(
                (
                    after["judged_today"] - before["judged_today"],
                    after["labels_left"] - before["labels_left"],
                    body["created"],
                    body["feedback"] is None,
                )
            )
            retry = client.post(base + "submit/", answer, format="json").json()
            answers[which].add(("retry", retry["created"], retry["judgement"] == key))
            if step % UNDO_EVERY == 0:
                undone = client.post(base + "undo/")
                assert undone.status_code == 200, undone.content
                undone = undone.json()
                again = client.post(base + "submit/", answer, format="json")
                redo = {**answer, "uuid": str(uuid.uuid4())}
                redone = client.post(base + "submit/", redo, format="json")
                undos[which].add(
                    (
                        undone["current"]["pair"] == current["pair"],
                        undone["progress"]["judged_today"] - after["judged_today"],
                        undone["progress"]["labels_left"] - after["labels_left"],
                        again.status_code,
                        again.json()["code"],
                        redone.status_code,
                        redone.json()["created"],
                    )
                )
                body = redone.json()

    n_gold, n_real = len(served["gold"]), len(served["real"])
    assert n_gold + n_real >= 300 and n_gold >= 40 and n_real >= 200, (n_gold, n_real)
    # Ids: one format, and as numbers no better than chance at telling the kinds apart.
    ids = {which: [task["pair"] for _, task in tasks] for which, tasks in served.items()}

    def id_format(i: str) -> tuple:
        return type(i).__name__, len(i), bool(re.fullmatch("[0-9a-f]+", i))

    assert {id_format(i) for i in ids["gold"]} == {id_format(i) for i in ids["real"]}
    for feature in (lambda i: int(i, 16), lambda i: int(i[:8], 16), lambda i: int(i[-8:], 16)):
        auc = _auc([feature(i) for i in ids["gold"]], [feature(i) for i in ids["real"]])
        assert abs(auc - 0.5) < 0.2, auc
    # Fields, lease times, markup of the media links; what a submit changes; what undo does.
    assert shapes["gold"] == shapes["real"]
    assert (
        answers["gold"]
        == answers["real"]
        == {
            (1, -1, True, True),
            ("retry", False, True),
        }
    )
    assert undos["gold"] and undos["gold"] == undos["real"] == {
        (True, -1, 1, 409, "undone", 200, True)
    }
    # Work per request: the statement counts of the two kinds overlap.
    gold_counts, real_counts = statements["gold"], statements["real"]
    spread = (sorted(set(gold_counts)), sorted(set(real_counts)))
    assert statistics.median(gold_counts) == statistics.median(real_counts), spread
    assert min(gold_counts) >= min(real_counts) - 1 and max(gold_counts) <= max(real_counts) + 1
    assert min(real_counts) >= min(gold_counts) - 1 and max(real_counts) <= max(gold_counts) + 1
    # And the pair ids themselves never reach the client.
    assert not any(
        task["pair"] == str(task_ids.decode(user_id, task["pair"]))
        for tasks in served.values()
        for user_id, task in tasks
    )


@pytest.mark.django_db
def test_escalating_answers_alike_for_gold_and_real_tasks(people):
    """Escalations follow one set of rules: the task on screen may be escalated, a retry
    with the same id and reason counts once, the same id with another reason is a conflict,
    and a task answered longer ago than the undo window cannot be escalated. (An admin
    settles each real escalation at once here, so the cap on waiting ones never binds.)"""
    campaign = make_campaign(n_queries=8, depth=4, seed=2)
    add_gold(campaign, 12, rate=0.4)
    GoldPair.objects.filter(campaign=campaign).update(label="irrelevant")
    user = people["annotator"]
    client = APIClient()
    client.force_authenticate(user)
    base = f"/api/campaigns/{campaign.pk}/"
    outcomes = {"gold": set(), "real": set()}
    late = {"gold": set(), "real": set()}
    body = client.post(base + "next/").json()
    for step in range(24):
        current = body["current"]
        if current is None:
            break
        pair_id = task_ids.decode(user.pk, current["pair"])
        which = "gold" if GoldPair.objects.filter(task_id=pair_id).exists() else "real"
        if step % 2:  # answer it, then try to escalate it once the undo window is over
            answer = {"pair": current["pair"], "label": "irrelevant", "uuid": str(uuid.uuid4())}
            body = client.post(base + "submit/", answer, format="json").json()
            later = timezone.now() + timedelta(seconds=submit.UNDO_SECONDS + 5)
            try:
                escalations.escalate(user, pair_id, "no picture", uuid.uuid4(), now=later)
                late[which].add("accepted")
            except errors.AssignmentError as refused:
                late[which].add(refused.code)
            continue
        escalation = {"pair": current["pair"], "reason": "no picture", "uuid": str(uuid.uuid4())}
        first = client.post(base + "escalate/", escalation, format="json")
        again = client.post(base + "escalate/", escalation, format="json")
        other = client.post(base + "escalate/", {**escalation, "reason": "dark"}, format="json")
        outcomes[which].add(
            (first.status_code, again.status_code, other.status_code, other.json()["code"])
        )
        Escalation.objects.filter(resolved_at__isnull=True).update(resolved_at=timezone.now())
        body = again.json()
    assert outcomes["gold"] and outcomes["gold"] == outcomes["real"] == {
        (200, 200, 409, "conflict")
    }
    assert late["gold"] and late["gold"] == late["real"] == {"not_leased"}

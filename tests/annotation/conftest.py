"""Fixtures shared by the annotation tests."""

import uuid

import pytest
from django.contrib.auth import get_user_model

from annotation.judging import queue, submit
from config import roles
from tests.factories import make_campaign


@pytest.fixture
def people(db):
    """Two annotators ("annotator", "other"), a researcher and a superuser ("admin")."""
    groups = roles.ensure_groups()
    User = get_user_model()
    made = {}
    for name, role in (
        ("annotator", "annotator"),
        ("other", "annotator"),
        ("researcher", "researcher"),
    ):
        made[name] = User.objects.create_user(name, password="pw-people-123")
        made[name].groups.add(groups[role])
    made["admin"] = User.objects.create_superuser("boss", "b@example.org", "pw-boss-123")
    return made


@pytest.fixture
def judged(people):
    """Nine pairs, each labelled by two annotators: they agree on video keys v0-v3, and
    disagree elsewhere (the policy's tie then waits for a third label)."""
    campaign = make_campaign(n_queries=3, depth=3, rate=1.0)
    for user in (people["annotator"], people["other"]):
        while (current := queue.assign(campaign, user).current) is not None:
            key = current.pair.video.key
            agree = key in ("v0", "v1", "v2", "v3")
            relevant = key in ("v0", "v1") if agree else user == people["annotator"]
            submit.submit(
                user, current.pair.pk, "relevant" if relevant else "irrelevant", uuid.uuid4(), 3.0
            )
    return campaign

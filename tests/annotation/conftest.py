"""Fixtures shared by the annotation tests."""

import pytest
from django.contrib.auth import get_user_model

from config import roles


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

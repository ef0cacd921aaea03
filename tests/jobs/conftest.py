"""Fixtures of the job page tests."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from config import roles


@pytest.fixture
def admin(db):
    """A client logged in as a member of the admin role (``client.user`` is the user)."""
    user = get_user_model().objects.create_user("boss", password="pw-long-enough-1")
    user.groups.add(roles.ensure_groups()[roles.ADMIN])
    client = Client()
    client.force_login(user)
    client.user = user
    return client

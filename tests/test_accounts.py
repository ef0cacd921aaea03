"""One account per username in any letter case, at every door that makes or renames one:
``createsuperuser``, the admin site's add and change forms, the demo accounts' command and
the simulated annotators. Each refuses a name another account has in another letter case
with a clear error (a form error, a command error), before the database's index must, and
makes nothing; a race the check lost is the same error, not a traceback."""

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import transaction
from django.test import Client

from config.accounts import names
from config.accounts.management.commands import createsuperuser


@pytest.fixture
def taken(db):
    """An account "annotator" and a superuser to use the admin site."""
    User = get_user_model()
    User.objects.create_user("annotator", password="pw-accounts-123")
    return User.objects.create_superuser("boss", "b@example.org", "pw-accounts-123")


def _users() -> list[str]:
    return sorted(get_user_model().objects.values_list("username", flat=True))


def test_case_twin_folds_as_the_index_does(taken):
    assert names.case_twin("ANNOTATOR") == names.case_twin("annotator") == "annotator"
    assert names.case_twin("annotator2") is None
    mine = get_user_model().objects.get(username="annotator").pk
    assert names.case_twin("Annotator", exclude=mine) is None  # its own name, renamed


@pytest.mark.parametrize("race", [False, True])
def test_createsuperuser_refuses_another_letter_case(taken, monkeypatch, race):
    if race:  # another process made it after the check: the index refuses it
        monkeypatch.setattr(createsuperuser, "case_twin", lambda *args, **kwargs: None)
    before = _users()
    # (a savepoint, as the command's own autocommit would be outside the test's transaction)
    with pytest.raises(CommandError, match="'ANNOTATOR' is taken"), transaction.atomic():
        call_command("createsuperuser", "--noinput", username="ANNOTATOR", email="a@example.org")
    assert _users() == before
    call_command("createsuperuser", "--noinput", username="root", email="r@example.org")
    assert "root" in _users()


def test_the_admin_sites_user_forms_refuse_another_letter_case(taken):
    admin = Client()
    admin.force_login(taken)
    before = _users()
    added = admin.post(
        "/admin/auth/user/add/",
        {"username": "Annotator", "password1": "pw-Long-enough-1", "password2": "pw-Long-enough-1"},
    )
    assert added.status_code == 200 and "username" in added.context["adminform"].form.errors
    other = get_user_model().objects.create_user("other")
    changed = admin.post(
        f"/admin/auth/user/{other.pk}/change/",
        {
            "username": "ANNOTATOR",
            "is_active": "on",
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
        },
    )
    assert changed.status_code == 200, changed.status_code  # the form again, not a 500
    errors = changed.context["adminform"].form.errors
    assert list(errors) == ["username"] and "is taken (as 'annotator')" in errors["username"][0]
    assert _users() == sorted([*before, "other"])
    renamed = admin.post(
        f"/admin/auth/user/{other.pk}/change/",
        {
            "username": "Other",  # its own name in another case: allowed
            "is_active": "on",
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
        },
    )
    assert renamed.status_code == 302
    assert "Other" in _users()


def test_fixed_accounts_are_refused_when_another_case_has_them(taken):
    from annotation.simulation.live import simulated_annotators

    get_user_model().objects.create_user("Annotator1")
    before = _users()
    with pytest.raises(CommandError, match="'annotator1' is taken"):
        call_command("create_demo_users")
    assert _users() == before  # one transaction: no demo account made
    get_user_model().objects.create_user("SIM-annotator-2")
    with pytest.raises(names.UsernameTaken, match="'sim-annotator-2' is taken"):
        simulated_annotators(2)
    assert [u.username for u in simulated_annotators(1)] == ["sim-annotator-1"]

"""Usernames are one account in any letter case (folded with ``LOWER``, as the database's
unique index folds them): the check every door that makes or renames an account asks."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Value
from django.db.models.functions import Lower

from config.errors import UserError


class UsernameTaken(UserError):
    """Another account has the username, in this or another letter case."""

    def __init__(self, username: str, twin: str | None = None):
        held = "" if twin is None or twin == username else f" (as {twin!r})"
        super().__init__(
            f"the username {username!r} is taken{held}: an account has it, letter case aside"
        )


def case_twin(username: str, *, exclude: int | None = None, using: str = "default") -> str | None:
    """The username of an account other than ``exclude`` (a user id) whose name folds to
    the same lower case as ``username``; None when there is none."""
    User = get_user_model()
    field = User.USERNAME_FIELD
    found = (
        User._default_manager.db_manager(using)
        .annotate(folded=Lower(field))
        .filter(folded=Lower(Value(username)))
    )
    if exclude is not None:
        found = found.exclude(pk=exclude)
    return found.values_list(field, flat=True).order_by("pk").first()


def existing_or_new(username: str):
    """(the account named exactly ``username``, False), or (a new one with no usable password,
    True); :class:`UsernameTaken` when another letter case or a parallel process has it."""
    User = get_user_model()
    found = User._default_manager.filter(**{User.USERNAME_FIELD: username}).first()
    if found is not None:
        return found, False
    twin = case_twin(username)
    if twin is not None:
        raise UsernameTaken(username, twin)
    try:
        with transaction.atomic():
            user = User._default_manager.create_user(username)
    except IntegrityError:
        raise UsernameTaken(username, case_twin(username)) from None
    return user, True

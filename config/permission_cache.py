"""The authentication backend of every request (the module keeps its name: sessions store it).
Django's ``ModelBackend`` re-read a user's permissions every request, two queries and about a
tenth of a judging request's CPU (``bench/request_profile.py``); this keeps each user's set in
memory, dropped at once in this process when users, groups or permissions change and kept at
most :data:`TTL_SECONDS` in others. The user row is read by one hand-written statement, as
composing the ORM's query cost several times running it."""

import functools
import threading
import time
from collections.abc import Collection

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group, Permission
from django.core.exceptions import ValidationError
from django.db.models.signals import m2m_changed, post_delete, post_save

from config import raw_sql

TTL_SECONDS = 30.0
"""How long another process may go on using a permission set it cached."""

_cache: dict[tuple, tuple[float, frozenset[str]]] = {}
_lock = threading.Lock()


def forget(user_ids: Collection[int] | None = None) -> None:
    """Drop these users' cached permissions (all users' when ``user_ids`` is None)."""
    with _lock:
        if user_ids is None:
            _cache.clear()
        else:
            for key in [key for key in _cache if key[0] in user_ids]:
                del _cache[key]


@functools.cache
def _user_row() -> raw_sql.Sources:
    return ((get_user_model(), "u"),)


@functools.cache
def user_statement() -> raw_sql.Statement:
    """The user with primary key ``%(pk)s`` (registered by :func:`connect`, once the user
    model is known)."""
    model = get_user_model()
    return raw_sql.Statement(
        "user",
        {"user": model},
        f"SELECT {{user:u.*}} FROM {{user}} u WHERE u.{{user.{model._meta.pk.name}}} = %(pk)s",
        raw_sql.model_row("UserRow", _user_row()),
    )


class CachedPermissionBackend(ModelBackend):
    """``ModelBackend`` whose request user comes with a permission set that outlives the
    request (see the module). The set is attached as the user is read, where Django's
    ``ModelBackend.get_all_permissions`` looks first (``_perm_cache``), so asking a
    permission later in the request calls nothing of this module. A user read any other way
    (a login, a queryset) has its permissions read by ``ModelBackend`` as usual."""

    def get_user(self, user_id):
        model = get_user_model()
        try:
            pk = model._meta.pk.to_python(user_id)
        except ValidationError:
            return None
        found = user_statement().instances({"pk": pk}, _user_row())
        if not found:
            return None
        ((user,),) = found
        if not self.user_can_authenticate(user):
            return None
        user._perm_cache = set(self._remembered(user))
        return user

    def _remembered(self, user) -> frozenset[str]:
        """The user's permission set from this process's memory, read again once
        :data:`TTL_SECONDS` old or forgotten."""
        # date_joined tells apart accounts that reuse a deleted one's id.
        key = (user.pk, user.date_joined, user.is_superuser)
        now = time.monotonic()
        found = _cache.get(key)
        if found is None or now - found[0] > TTL_SECONDS:
            found = (now, frozenset(super().get_all_permissions(user)))
            with _lock:
                _cache[key] = found
        return found[1]


def _user_changed(sender, instance, **kwargs) -> None:
    forget({instance.pk})


def _everyone_changed(sender, **kwargs) -> None:
    forget()


def _memberships_changed(sender, instance, action, reverse, pk_set, **kwargs) -> None:
    """Forget the users a change of ``User.groups``, ``User.user_permissions`` or
    ``Group.permissions`` concerns, from either side (a far-side ``clear()``: everyone)."""
    if not action.startswith("post_"):
        return
    if sender is Group.permissions.through:
        groups = pk_set if reverse else {instance.pk}
        if groups is None:
            forget()
        else:
            members = get_user_model().objects.filter(groups__in=groups)
            forget(set(members.values_list("pk", flat=True)))
    else:
        forget(pk_set if reverse else {instance.pk})


def connect() -> None:
    """Connect the receivers above (from ``ProjectConfig.ready``, in every process) and
    register the user's statement."""
    user_statement()
    user = get_user_model()
    post_save.connect(_user_changed, sender=user, dispatch_uid="perm-cache-user-save")
    post_delete.connect(_user_changed, sender=user, dispatch_uid="perm-cache-user-del")
    for model in (Group, Permission):  # a permission renamed or deleted, a group deleted
        post_save.connect(
            _everyone_changed, sender=model, dispatch_uid=f"perm-cache-{model.__name__}-s"
        )
        post_delete.connect(
            _everyone_changed, sender=model, dispatch_uid=f"perm-cache-{model.__name__}-d"
        )
    for through in (user.groups.through, user.user_permissions.through, Group.permissions.through):
        m2m_changed.connect(
            _memberships_changed, sender=through, dispatch_uid=f"perm-cache-{through.__name__}"
        )

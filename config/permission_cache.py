"""The authentication backend of every request: the user read by one hand-written statement,
and role permissions remembered across requests, so a judging request does not query them.
(The module keeps its first name: sessions store the backend's dotted path, and renaming it
would log everyone out.)

Django's ``ModelBackend`` caches a user's permissions on the user object, which lives for
one request; every judging request then spent two queries (user permissions, group
permissions) and about a tenth of its CPU re-reading the same few rows (issue 20's profile,
``bench/request_profile.py``). :class:`CachedPermissionBackend` keeps each user's set in this
process's memory:

- dropped at once in this process when the user's groups or a group's permissions change,
  when a user or group is saved or deleted (signals below);
- kept at most :data:`TTL_SECONDS` in any other process (another gunicorn worker does not
  hear those signals), so a role taken away stops working everywhere within that time.

Whether a user is active or a superuser is read from the user row, which every request
loads anyway; so deactivating an account takes effect on its next request. That row is read
by :func:`user_statement` rather than the ORM: composing ``User.objects.get(pk=...)`` cost
several times running it, on every request (issue 20's profile).
"""

import functools
import threading
import time

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models.signals import m2m_changed, post_delete, post_save

from config import raw_sql

TTL_SECONDS = 30.0
"""How long another process may go on using a permission set it cached."""

_cache: dict[tuple, tuple[float, frozenset[str]]] = {}
_lock = threading.Lock()


def forget(user_id: int | None = None) -> None:
    """Drop one user's cached permissions (all users' when ``user_id`` is None)."""
    with _lock:
        if user_id is None:
            _cache.clear()
        else:
            for key in [key for key in _cache if key[0] == user_id]:
                del _cache[key]


@functools.cache
def _user_row() -> raw_sql.Sources:
    return ((get_user_model(), "u"),)


@functools.cache
def user_statement(vendor: str) -> str:
    """The user with primary key ``%(pk)s``, every concrete field (on ``vendor``'s backend)."""
    (source,) = _user_row()
    pk = source[0]._meta.pk.column
    return (
        f"SELECT {raw_sql.select_list(raw_sql.model_columns(_user_row()))} "
        f"FROM {raw_sql.table(source[0])} u WHERE u.{raw_sql.quote(pk)} = %(pk)s"
    )


class CachedPermissionBackend(ModelBackend):
    """``ModelBackend`` whose permission sets outlive the request and whose user is read by
    one hand-written statement (see the module)."""

    def get_user(self, user_id):
        model = get_user_model()
        try:
            pk = model._meta.pk.to_python(user_id)
        except ValidationError:
            return None
        found = raw_sql.rows(user_statement(connection.vendor), {"pk": pk})
        if not found:
            return None
        (user,) = raw_sql.instances(_user_row(), found[0])
        return user if self.user_can_authenticate(user) else None

    def get_all_permissions(self, user_obj, obj=None):
        if not user_obj.is_active or user_obj.is_anonymous or obj is not None:
            return set()
        if not hasattr(user_obj, "_perm_cache"):
            # date_joined tells apart accounts that reuse a deleted one's id.
            key = (user_obj.pk, user_obj.date_joined, user_obj.is_superuser)
            now = time.monotonic()
            found = _cache.get(key)
            if found is None or now - found[0] > TTL_SECONDS:
                found = (now, frozenset(super().get_all_permissions(user_obj, obj)))
                with _lock:
                    _cache[key] = found
            user_obj._perm_cache = set(found[1])
        return user_obj._perm_cache


def _user_changed(sender, instance, **kwargs) -> None:
    forget(instance.pk)


def _memberships_changed(sender, instance, **kwargs) -> None:
    # user.groups.add(...) names the user; group.user_set.add(...) names the group and
    # lists users in pk_set; a group's permissions touch every member.
    if isinstance(instance, Group):
        forget()
    else:
        forget(instance.pk)


def _group_changed(sender, **kwargs) -> None:
    forget()


post_save.connect(_user_changed, sender=get_user_model(), dispatch_uid="perm-cache-user-save")
post_delete.connect(_user_changed, sender=get_user_model(), dispatch_uid="perm-cache-user-del")
post_save.connect(_group_changed, sender=Group, dispatch_uid="perm-cache-group-save")
post_delete.connect(_group_changed, sender=Group, dispatch_uid="perm-cache-group-del")
m2m_changed.connect(
    _memberships_changed,
    sender=get_user_model().groups.through,
    dispatch_uid="perm-cache-memberships",
)
m2m_changed.connect(
    _memberships_changed, sender=Group.permissions.through, dispatch_uid="perm-cache-group-perms"
)
m2m_changed.connect(
    _memberships_changed,
    sender=get_user_model().user_permissions.through,
    dispatch_uid="perm-cache-user-perms",
)

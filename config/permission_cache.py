"""The authentication backend of every request (the module and class keep their names:
sessions store them). It reads the request's user and the user's whole permission set in one
hand-written statement and hands the set to Django's ``ModelBackend`` where it looks first
(``_perm_cache``), so a permission asked later in the request costs nothing.

Nothing is kept between requests: a role given or taken away in any process is seen by every
worker on its next request. ``ModelBackend`` alone read the user and then the permissions in
two more queries, about a tenth of a judging request's CPU in composing them
(``bench/request_profile.py``); a set remembered per process instead went on granting a role
taken away in another worker for up to 30 s."""

import functools

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ValidationError

from config import raw_sql


@functools.cache
def _user_row() -> raw_sql.Sources:
    return ((get_user_model(), "u"),)


def _user_text() -> str:
    """:func:`user_statement`'s text: the user's row, then one row per permission with the
    user's columns left NULL (an admin's 134 rows each carrying the user's columns took 0.7
    ms to read, against 0.2 ms for an annotator's one)."""
    model = get_user_model()
    pk = model._meta.pk.name
    nothing = raw_sql.select_list(dict.fromkeys(raw_sql.model_columns(_user_row()), "NULL"))
    return f"""
        SELECT {{user:u.*}}, NULL AS app_label, NULL AS codename
        FROM {{user}} u WHERE u.{{user.{pk}}} = %(pk)s
        UNION ALL
        SELECT {nothing.replace("{", "{{").replace("}", "}}")},
               t.{{content_type.app_label}}, p.{{permission.codename}}
        FROM {{permission}} p
        JOIN {{content_type}} t ON t.{{content_type.id}} = p.{{permission.content_type}}
        WHERE p.{{permission.id}} IN (
            SELECT up.{{user_permissions.permission}} FROM {{user_permissions}} up
            WHERE up.{{user_permissions.user}} = %(pk)s
            UNION
            SELECT gp.{{group_permissions.permission}} FROM {{user_groups}} ug
            JOIN {{group_permissions}} gp
                ON gp.{{group_permissions.group}} = ug.{{user_groups.group}}
            WHERE ug.{{user_groups.user}} = %(pk)s)
        OR EXISTS (SELECT 1 FROM {{user}} s
            WHERE s.{{user.{pk}}} = %(pk)s AND s.{{user.is_superuser}})"""


@functools.cache
def user_statement() -> raw_sql.Statement:
    """The user with primary key ``%(pk)s`` (the row whose ``codename`` is NULL), and one row
    per permission they hold as ``ModelBackend`` counts them: their own and their groups',
    every permission for a superuser; none for no such user (registered from
    ``ProjectConfig.ready``, once the user model is known). The permission subqueries name the user by the
    parameter, so PostgreSQL runs them once, not per permission."""
    model = get_user_model()
    return raw_sql.Statement(
        "user",
        {
            "user": model,
            "user_groups": model.groups.through,
            "user_permissions": model.user_permissions.through,
            "group_permissions": Group.permissions.through,
            "permission": Permission,
            "content_type": ContentType,
        },
        _user_text,
        raw_sql.model_row("UserRow", _user_row(), "app_label", "codename"),
    )


class CachedPermissionBackend(ModelBackend):
    """``ModelBackend`` whose request user comes with its permission set, read with the user
    (see the module). A user read any other way (a login, a queryset) has its permissions
    read by ``ModelBackend`` as usual."""

    def get_user(self, user_id):
        model = get_user_model()
        try:
            pk = model._meta.pk.to_python(user_id)
        except ValidationError:
            return None
        rows = user_statement().rows({"pk": pk})
        found = [row for row in rows if row.codename is None]
        if not found:
            return None
        (user,) = raw_sql.instances(_user_row(), found[0])
        if not self.user_can_authenticate(user):
            return None
        user._perm_cache = {
            f"{row.app_label}.{row.codename}" for row in rows if row.codename is not None
        }
        return user

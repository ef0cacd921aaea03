"""The three roles as Django groups, and :func:`has_perm`, the one question every check asks
(views, API, admin actions and templates), with per-object rules (:data:`OBJECT_RULES`).
Annotators judge pairs; researchers read everything and start research jobs; admins do all."""

from collections.abc import Callable
from functools import wraps

from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import Group, Permission
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from rest_framework.exceptions import NotFound
from rest_framework.permissions import BasePermission

ANNOTATOR = "annotator"
RESEARCHER = "researcher"
ADMIN = "admin"
ROLES = (ANNOTATOR, RESEARCHER, ADMIN)
APPS = ("retrieval", "annotation", "jobs")
STAFF_ROLES = (RESEARCHER, ADMIN)
"""Roles whose accounts are staff: the admin site's own gate (researchers only read there)."""

JUDGE_PAIRS = "annotation.judge_pairs"
VIEW_CAMPAIGN_REPORTS = "annotation.view_campaign_reports"
MANAGE_CAMPAIGNS = "annotation.manage_campaigns"
VIEW_REPORTS = "retrieval.view_reports"
VIEW_JOBS = "jobs.view_job"
START_RESEARCH_JOB = "jobs.start_research_job"
START_ADMIN_JOB = "jobs.start_admin_job"
UPLOAD_DATASETS = START_ADMIN_JOB
"""Upload captions as a new dataset (or into one): an admin's job."""
ADD_MODELS = START_RESEARCH_JOB
"""Add a model to a dataset (a run file, embeddings or a built-in encoder): researchers too."""
SCORE_RUNS = START_RESEARCH_JOB
"""Upload a run file to the scoring API and read its scores (only one's own, for a researcher)."""
MAKE_API_TOKENS = START_RESEARCH_JOB
"""Make and revoke one's own API tokens: those the scoring API lets in."""
VIEW_VIDEOS = "retrieval.view_video"
"""Fetch any known media file (annotators fetch only what a media grant allows)."""


def _uploader_or_admin(user, job) -> bool:
    return job.created_by_id == user.pk or user.has_perm(START_ADMIN_JOB)


OBJECT_RULES: dict[tuple[str, str], Callable[[object, object], bool]] = {
    (SCORE_RUNS, "jobs.job"): _uploader_or_admin,
}
"""(permission, the object's ``app_label.model``) -> the rule an object must pass as well."""


def _codename(permission: str) -> str:
    return permission.partition(".")[2]


def ensure_groups() -> dict[str, Group]:
    """Create the role groups if missing and give them their permissions."""
    groups = {name: Group.objects.get_or_create(name=name)[0] for name in ROLES}
    ours = Permission.objects.filter(content_type__app_label__in=APPS)
    groups[ANNOTATOR].permissions.set(
        ours.filter(content_type__app_label="annotation", codename=_codename(JUDGE_PAIRS))
    )
    groups[RESEARCHER].permissions.set(
        ours.filter(Q(codename__startswith="view_") | Q(codename=_codename(START_RESEARCH_JOB)))
    )
    groups[ADMIN].permissions.set(
        Permission.objects.filter(content_type__app_label__in=(*APPS, "auth"))
    )
    return groups


def has_perm(user, permission: str, obj=None) -> bool:
    """Whether ``user`` holds ``permission`` and ``obj``, if given, passes its rule."""
    if not user.has_perm(permission):
        return False
    if obj is None:
        return True
    rule = OBJECT_RULES.get((permission, obj._meta.label_lower))
    return rule is None or rule(user, obj)


def users_with(permission: str):
    """The active users holding ``permission``, as one queryset (not a query per user)."""
    return get_user_model().objects.with_perm(permission)


def require(user, permission: str, message: str = "You may not do this.") -> None:
    """Raise PermissionDenied (403) unless :func:`has_perm`."""
    if not has_perm(user, permission):
        raise PermissionDenied(message)


def permission_required(permission: str, message: str) -> Callable:
    """Decorate a view: anonymous users go to the login page, others without ``permission``
    get 403 before the view looks anything up."""

    def decorate(view: Callable) -> Callable:
        @wraps(view)
        def checked(request, *args, **kwargs):
            require(request.user, permission, message)
            return view(request, *args, **kwargs)

        return login_required(checked)

    return decorate


class HasPerm(BasePermission):
    """The API's door for ``permission`` (a 403 with ``message``); an object failing its rule
    is a 404 worded as a missing row's, so others' objects look like unknown ids."""

    permission = ""

    def has_permission(self, request, view) -> bool:
        return has_perm(request.user, self.permission)

    def has_object_permission(self, request, view, obj) -> bool:
        if has_perm(request.user, self.permission, obj):
            return True
        raise NotFound(f"No {obj._meta.object_name} matches the given query.")

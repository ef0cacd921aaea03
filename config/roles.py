"""The three roles of firepool as Django groups, and the one question every check asks.

A role is a group holding Django permissions; views, the API, templates and media access
ask only ``user.has_perm(name)`` with the names below (superusers hold every permission).
Django caches a user's permissions on the user object, so a request asks many times for
the price of one query. The roles span both apps and ``retrieval`` must not import
``annotation``, so they live here, in the project layer that already knows every app.

annotator: judges pairs and sees only their own work;
researcher: reads datasets, runs, campaigns and reports (the admin site's view permissions)
    and starts embedding, training, search, proxy and re-scoring jobs;
admin: everything, including users, adjudication, resolution and exports.
"""

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import Group, Permission
from django.core.exceptions import PermissionDenied
from django.db.models import Q

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


def require(user, permission: str, message: str = "You may not do this.") -> None:
    """Raise PermissionDenied (403) unless ``user`` holds ``permission``."""
    if not user.has_perm(permission):
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

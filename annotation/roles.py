"""The three roles of firepool as Django groups with their permissions.

annotator: judges pairs and sees only their own work (no admin access, no permissions);
researcher: reads datasets, runs, campaigns and reports (the admin's view permissions)
    and starts embedding, training, search, proxy and re-scoring jobs;
admin: everything, including users, campaigns and exports (every permission).
"""

from django.contrib.auth.models import Group, Permission
from django.db.models import Q

ANNOTATOR = "annotator"
RESEARCHER = "researcher"
ADMIN = "admin"
ROLES = (ANNOTATOR, RESEARCHER, ADMIN)
APPS = ("retrieval", "annotation", "jobs")
STAFF_ROLES = (RESEARCHER, ADMIN)
"""Roles that may open the admin site (researchers only read there)."""


def ensure_groups() -> dict[str, Group]:
    """Create the role groups if missing and give them their permissions."""
    groups = {name: Group.objects.get_or_create(name=name)[0] for name in ROLES}
    ours = Permission.objects.filter(content_type__app_label__in=APPS)
    groups[RESEARCHER].permissions.set(
        ours.filter(Q(codename__startswith="view_") | Q(codename="start_research_job"))
    )
    groups[ADMIN].permissions.set(
        Permission.objects.filter(content_type__app_label__in=(*APPS, "auth"))
    )
    return groups


def has_role(user, role: str) -> bool:
    """True when ``user`` is in ``role`` (superusers hold every role)."""
    if not user.is_authenticated:
        return False
    if user.is_superuser:
        return True
    return user.groups.filter(name=role).exists()


def only_annotator(user) -> bool:
    """True for users whose only role is judging."""
    return has_role(user, ANNOTATOR) and not (has_role(user, RESEARCHER) or has_role(user, ADMIN))

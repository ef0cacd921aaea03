"""The three roles of firepool as Django groups.

annotator: judges pairs and sees only their own work; researcher: reads datasets, runs,
campaigns and reports; admin: everything, including users, campaigns and exports.
"""

from django.contrib.auth.models import Group

ANNOTATOR = "annotator"
RESEARCHER = "researcher"
ADMIN = "admin"
ROLES = (ANNOTATOR, RESEARCHER, ADMIN)


def ensure_groups() -> dict[str, Group]:
    """Create the role groups if missing and return them by name."""
    return {name: Group.objects.get_or_create(name=name)[0] for name in ROLES}


def has_role(user, role: str) -> bool:
    """True when ``user`` is in ``role`` (superusers hold every role)."""
    if not user.is_authenticated:
        return False
    if user.is_superuser:
        return True
    return user.groups.filter(name=role).exists()

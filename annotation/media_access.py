"""Annotators may fetch the videos they judge: those of active campaigns, and of pairs they hold.

Registered with :func:`retrieval.media_access.register_grant` when the app is ready, so the
retrieval app serves media without knowing about campaigns.
"""

from django.db.models import Q

from annotation.models import Campaign, Pair
from config import roles


def judging_video(user, name: str) -> bool:
    """True when ``name`` is the video of a pair ``user`` may judge now or holds a lease on."""
    if not roles.has_perm(user, roles.JUDGE_PAIRS):
        return False
    return (
        Pair.objects.filter(video__media=name)
        .filter(Q(campaign__status=Campaign.Status.ACTIVE) | Q(leases__annotator=user))
        .exists()
    )

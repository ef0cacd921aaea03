"""Annotators may fetch the videos they judge: those of active campaigns (their pairs and their
gold pairs, which qualification and gold tasks serve), and of pairs they hold.

Registered with :func:`retrieval.media.access.register_grant` when the app is ready, so the
retrieval app serves media without knowing about campaigns.
"""

from django.db.models import Q

from annotation.models import Campaign, GoldPair, Pair
from config import roles


def judging_video(user, name: str) -> bool:
    """True when ``name`` is the video of a pair ``user`` may judge now or holds a lease on,
    or of a gold pair of an active campaign (a training or gold task may show any pair of
    the dataset, pooled or not)."""
    if not roles.has_perm(user, roles.JUDGE_PAIRS):
        return False
    active = Campaign.Status.ACTIVE
    return (
        Pair.objects.filter(video__media=name)
        .filter(Q(campaign__status=active) | Q(leases__annotator=user))
        .exists()
        or GoldPair.objects.filter(video__media=name, campaign__status=active).exists()
    )

"""Template filters for report pages: shares in percent (campaigns), scores in points (runs),
a stored figure's age."""

from datetime import datetime

from django import template
from django.utils import timezone

from retrieval.scoring import rescoring

register = template.Library()


@register.filter
def percent(value: float | None, digits: int = 1) -> str:
    """A share in [0, 1] as a percentage, e.g. ``0.9512`` → ``95.1%``; missing → an em dash."""
    if value is None or value == "":
        return "—"
    return f"{100 * float(value):.{int(digits)}f}%"


@register.filter
def points(value: float | None) -> str:
    """A score in points with one decimal, ``0.4312`` → ``43.1``."""
    return rescoring.points(value)


@register.filter
def signed_points(value: float | None) -> str:
    """A difference of scores in points with its sign, e.g. ``-0.215`` → ``-21.5``."""
    return rescoring.points(value, signed=True)


@register.filter
def segment_place(video) -> str:
    """Where a segment sits in its recording, e.g. ``0:21-0:26 of P01_01, 1:00:00``."""
    from retrieval.media.service import segment_label

    return segment_label(video)


@register.filter
def age(when: datetime | None) -> str:
    """How long ago ``when`` was (``12 s``, ``4 min 5 s``, ``3 h 20 min``), where ``timesince``
    says "0 minutes"."""
    if when is None or when == "":
        return "—"
    seconds = max(int((timezone.now() - when).total_seconds()), 0)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s" if minutes < 10 and seconds else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{hours // 24} days"

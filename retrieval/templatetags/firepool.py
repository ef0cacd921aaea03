"""Template filters for report pages: shares in percent (campaigns), scores in points (runs)."""

from django import template

from retrieval import rescoring

register = template.Library()


@register.filter
def percent(value: float | None, digits: int = 1) -> str:
    """A share in [0, 1] as a percentage, e.g. ``0.9512`` → ``95.1%``; missing → an em dash."""
    if value is None or value == "":
        return "—"
    return f"{100 * float(value):.{int(digits)}f}%"


@register.filter
def points(value: float | None) -> str:
    """A score in points with one decimal, ``0.4312`` → ``43.1`` (:func:`retrieval.rescoring.points`,
    the leaderboard's and the reports' one format)."""
    return rescoring.points(value)


@register.filter
def signed_points(value: float | None) -> str:
    """A difference of scores in points with its sign, e.g. ``-0.215`` → ``-21.5``."""
    return rescoring.points(value, signed=True)


@register.filter
def segment_place(video) -> str:
    """Where a segment sits in its recording, e.g. ``0:21-0:26 of P01_01, 1:00:00``
    (:func:`retrieval.services.media.segment_label`); "" for a whole video."""
    from retrieval.services.media import segment_label

    return segment_label(video)

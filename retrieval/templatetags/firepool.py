"""Template filters for report pages."""

from django import template

register = template.Library()


@register.filter
def percent(value: float | None, digits: int = 1) -> str:
    """A share in [0, 1] as a percentage, e.g. ``0.9512`` → ``95.1%``; missing → an em dash."""
    if value is None or value == "":
        return "—"
    return f"{100 * float(value):.{int(digits)}f}%"


@register.filter
def signed_points(value: float | None) -> str:
    """A difference of shares in points with its sign, e.g. ``-0.215`` → ``-21.5``."""
    if value is None or value == "":
        return "—"
    return f"{100 * float(value):+.1f}"

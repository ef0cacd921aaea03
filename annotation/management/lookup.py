"""Find the campaign a command or a job names; a missing one raises
:class:`config.errors.NotFound` listing known names, shown by each boundary as its message."""

from annotation.models import Campaign
from config.errors import NotFound


def get_campaign(name: str) -> Campaign:
    try:
        return Campaign.objects.select_related("dataset").get(name=name)
    except Campaign.DoesNotExist:
        known = ", ".join(Campaign.objects.values_list("name", flat=True)[:20]) or "none"
        raise NotFound(f"no campaign named {name!r} (known: {known})") from None

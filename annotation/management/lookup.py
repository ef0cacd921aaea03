"""Find the campaign a command names, with a clear error when there is none."""

from django.core.management.base import CommandError

from annotation.models import Campaign


def get_campaign(name: str) -> Campaign:
    try:
        return Campaign.objects.select_related("dataset").get(name=name)
    except Campaign.DoesNotExist:
        known = ", ".join(Campaign.objects.values_list("name", flat=True)[:20]) or "none"
        raise CommandError(f"no campaign named {name!r} (known: {known})") from None

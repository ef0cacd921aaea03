"""Find the campaign a command or a job names; a missing one raises
:class:`config.errors.NotFound` listing known names, shown by each boundary as its message."""

from annotation.gold import tasks as gold_tasks
from annotation.models import Campaign, Pair
from config.errors import NotFound
from config.subqueries import row_count


def get_campaign(name: str) -> Campaign:
    try:
        return Campaign.objects.select_related("dataset").get(name=name)
    except Campaign.DoesNotExist:
        known = ", ".join(Campaign.objects.values_list("name", flat=True)[:20]) or "none"
        raise NotFound(f"no campaign named {name!r} (known: {known})") from None


def get_campaign_or_id(value: str) -> Campaign:
    """The campaign named ``value``, else the one whose id it is (a command's ``NAME_OR_ID``)."""
    try:
        return get_campaign(value)
    except NotFound:
        if not str(value).strip().isdigit():
            raise
        found = Campaign.objects.select_related("dataset").filter(pk=int(value)).first()
        if found is None:
            raise
        return found


def campaign_by_id(campaign_id: int, *related: str) -> Campaign:
    """The campaign with this id, its dataset (and ``related``) read with it; :class:`NotFound`
    (a 404 page) if missing."""
    found = Campaign.objects.select_related("dataset", *related).filter(pk=campaign_id).first()
    if found is None:
        raise NotFound(f"no campaign {campaign_id}")
    return found


def visible_campaigns():
    """Every campaign but the hidden gold companions, with its dataset."""
    return gold_tasks.visible(Campaign.objects.select_related("dataset"))


def listed_campaigns(active_only: bool = False):
    """The API's campaign list: visible campaigns, newest first, each with its pair count
    (``pair_count``); only the active ones for an annotator."""
    listed = visible_campaigns().annotate(pair_count=row_count(Pair.objects.all(), "campaign"))
    if active_only:
        listed = listed.filter(status=Campaign.Status.ACTIVE)
    return listed.order_by("-created_at")

"""Move the gold companion link out of the JSON: the companion's ``options["gold_of"]`` into
its ``gold_of`` column, and its campaign's ``options["gold"]["companion"]`` dropped (the
column says it); reversed, both come back. Apart from the column's migration so that, on
PostgreSQL, no schema change shares a transaction with these row updates."""

from django.db import migrations
from django.db.models import Q


def options_to_column(apps, schema_editor):
    Campaign = apps.get_model("annotation", "Campaign")
    linked = Q(options__has_key="gold_of") | Q(options__gold__has_key="companion")
    changed = list(Campaign.objects.filter(linked).only("pk", "options", "gold_of"))
    for campaign in changed:
        options = dict(campaign.options)
        if "gold_of" in options:
            campaign.gold_of_id = options.pop("gold_of")
        gold = options.get("gold")
        if isinstance(gold, dict):
            options["gold"] = {key: value for key, value in gold.items() if key != "companion"}
        campaign.options = options
    Campaign.objects.bulk_update(changed, ["options", "gold_of"])


def column_to_options(apps, schema_editor):
    Campaign = apps.get_model("annotation", "Campaign")
    companions = list(
        Campaign.objects.filter(gold_of__isnull=False).only("pk", "options", "gold_of")
    )
    mains = Campaign.objects.only("pk", "options").in_bulk([c.gold_of_id for c in companions])
    for companion in companions:
        main = mains[companion.gold_of_id]
        main.options = {
            **(main.options or {}),
            "gold": {**((main.options or {}).get("gold") or {}), "companion": companion.pk},
        }
        companion.options = {**(companion.options or {}), "gold_of": main.pk}
        companion.gold_of = None
    Campaign.objects.bulk_update(list(mains.values()), ["options"])
    Campaign.objects.bulk_update(companions, ["options", "gold_of"])


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0013_campaign_gold_of"),
    ]

    operations = [migrations.RunPython(options_to_column, column_to_options)]

"""The gold companion link becomes a column, ``Campaign.gold_of`` (filled from the JSON by
the next migration); ``options`` is checked as campaign settings."""

import django.db.models.deletion
from django.db import migrations, models

import annotation.models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0012_gold_judgement_undone"),
    ]

    operations = [
        migrations.AddField(
            model_name="campaign",
            name="gold_of",
            field=models.OneToOneField(
                blank=True,
                editable=False,
                help_text="Set on the hidden companion that holds a campaign's gold tasks: "
                "that campaign.",
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="gold_companion",
                to="annotation.campaign",
            ),
        ),
        migrations.AlterField(
            model_name="campaign",
            name="options",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="Optional behaviour, e.g. proxy ordering: read and written only as "
                "settings (annotation.campaigns.settings.CampaignSettings).",
                validators=[annotation.models.validate_options],
            ),
        ),
    ]

"""Who paused an annotator (empty: a rule), and the history of each annotator's standing
in a campaign (invited, admitted, paused, reinstated, discounted), started from what the
standings hold today."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def backfill(apps, schema_editor):
    """One event per step the standings still show: a pause in force, the last
    reinstatement, the last discount."""
    Standing = apps.get_model("annotation", "AnnotatorStanding")
    Event = apps.get_model("annotation", "StandingEvent")
    events = []
    for row in Standing.objects.all().iterator():
        who = {"campaign_id": row.campaign_id, "annotator_id": row.annotator_id}
        if row.reinstated_at is not None:
            events.append(
                Event(**who, action="reinstated", at=row.reinstated_at, by_id=row.reinstated_by_id)
            )
        if row.paused_at is not None:
            events.append(Event(**who, action="paused", at=row.paused_at, reason=row.reason))
        if row.discounted_at is not None:
            events.append(
                Event(
                    **who, action="discounted", at=row.discounted_at, labels=row.discounted_labels
                )
            )
    Event.objects.bulk_create(events, batch_size=1000)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0016_sqlite_tallies"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="annotatorstanding",
            name="paused_by",
            field=models.ForeignKey(
                blank=True,
                help_text="The admin who paused the annotator (empty: a rule did).",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.CreateModel(
            name="StandingEvent",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "action",
                    models.CharField(
                        choices=[
                            ("invited", "invited"),
                            ("admitted", "admitted"),
                            ("paused", "paused"),
                            ("reinstated", "reinstated"),
                            ("discounted", "discounted"),
                        ],
                        max_length=16,
                    ),
                ),
                ("at", models.DateTimeField()),
                ("reason", models.CharField(blank=True, max_length=300)),
                ("labels", models.PositiveIntegerField(default=0, help_text="Labels discounted.")),
                (
                    "since",
                    models.DateTimeField(
                        blank=True,
                        help_text="Discounted labels given from this time on (empty: all).",
                        null=True,
                    ),
                ),
                (
                    "annotator",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "by",
                    models.ForeignKey(
                        blank=True,
                        help_text="The admin who acted (empty: a rule, or a command run without a user).",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "campaign",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="annotation.campaign",
                    ),
                ),
            ],
            options={
                "ordering": ["campaign", "annotator", "at", "pk"],
                "indexes": [
                    models.Index(fields=["campaign", "annotator"], name="standing_event_by_person")
                ],
            },
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]

"""Pairs keep their provenance row apart from their queue position.

Until now ``position`` was both the queue order and the row of the campaign's provenance
array, so reordering a queue (the proxy order, and now the judging orders) detached pairs
from the runs that retrieved them. Existing pairs take their position as their row.
"""

from django.db import migrations, models
from django.db.models import F


def rows_from_positions(apps, schema_editor):
    Pair = apps.get_model("annotation", "Pair")
    Pair.objects.update(pool_row=F("position"))


class Migration(migrations.Migration):
    dependencies = [("annotation", "0007_role_permissions")]

    operations = [
        migrations.AddField(
            model_name="pair",
            name="pool_row",
            field=models.PositiveIntegerField(
                db_default=0, default=0, help_text="Row of the campaign's provenance array (fixed)."
            ),
        ),
        migrations.AlterField(
            model_name="pair",
            name="position",
            field=models.PositiveIntegerField(
                help_text="Queue order (lowest first); the campaign's judging order sets and "
                "updates it."
            ),
        ),
        migrations.RunPython(rows_from_positions, migrations.RunPython.noop, elidable=True),
    ]

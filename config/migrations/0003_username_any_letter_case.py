"""One account per username in any letter case, held by the database: a unique index on the
lower-cased username of the user model's table (Django's own model has no such constraint,
so two parallel "Add a new annotator" requests could both pass the service's check)."""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import migrations
from django.db.models import Count
from django.db.models.functions import Lower

INDEX = "firepool_username_any_case"


def _user_model(apps):
    return apps.get_model(*settings.AUTH_USER_MODEL.split("."))


def add_index(apps, schema_editor):
    """Refuse, naming them, accounts that already differ only in letter case; then index."""
    User = _user_model(apps)
    field = User._meta.get_field(get_user_model().USERNAME_FIELD)  # not on historical models
    clashes = (
        User._default_manager.annotate(folded=Lower(field.name))
        .values("folded")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
        .values_list("folded", flat=True)
    )
    names = sorted(
        User._default_manager.annotate(folded=Lower(field.name))
        .filter(folded__in=list(clashes)[:20])
        .values_list(field.name, flat=True)
    )
    if names:
        raise RuntimeError(
            "accounts whose usernames differ only in letter case: "
            f"{', '.join(map(repr, names))}; rename or remove all but one of each "
            "(in the admin site), then migrate again"
        )
    quote = schema_editor.quote_name
    schema_editor.execute(
        f"CREATE UNIQUE INDEX {quote(INDEX)} "
        f"ON {quote(User._meta.db_table)} (LOWER({quote(field.column)}))"
    )


def drop_index(apps, schema_editor):
    schema_editor.execute(f"DROP INDEX {schema_editor.quote_name(INDEX)}")


class Migration(migrations.Migration):
    dependencies = [
        ("firepool", "0002_attempt_counts"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [migrations.RunPython(add_index, drop_index)]

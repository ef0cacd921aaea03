import hashlib

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def copy_drf_tokens(apps, schema_editor):
    """Keys made by ``drf_create_token`` before this table: listed and revocable on the
    tokens page from now on (the DRF row stays, so the key keeps working)."""
    Token = apps.get_model("authtoken", "Token")
    ApiToken = apps.get_model("firepool", "ApiToken")
    ApiToken.objects.bulk_create(
        ApiToken(
            user_id=token.user_id,
            name="made on the server (drf_create_token)",
            digest=hashlib.sha256(token.key.encode()).hexdigest(),
            prefix=token.key[:8],
        )
        for token in Token.objects.all()
    )


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("authtoken", "0004_alter_tokenproxy_options"),
    ]

    operations = [
        migrations.CreateModel(
            name="ApiToken",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=100)),
                ("digest", models.CharField(max_length=64, unique=True)),
                (
                    "prefix",
                    models.CharField(
                        help_text="The key's first characters, to tell keys apart.", max_length=12
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("last_used_at", models.DateTimeField(blank=True, null=True)),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="api_tokens",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={"ordering": ["-created_at", "-pk"]},
        ),
        migrations.AddConstraint(
            model_name="apitoken",
            constraint=models.UniqueConstraint(
                fields=("user", "name"), name="api_token_name_per_user"
            ),
        ),
        migrations.RunPython(copy_drf_tokens, migrations.RunPython.noop),
    ]

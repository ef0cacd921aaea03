"""Create the demo accounts (one admin, one researcher, three annotators) and print logins."""

from django.db import transaction

from config import roles
from config.accounts.names import existing_or_new
from jobs.commands import BaseCommand

DEMO_USERS = (
    ("admin", "firepool-admin", roles.ADMIN),
    ("researcher", "firepool-researcher", roles.RESEARCHER),
    ("annotator1", "firepool-annotator1", roles.ANNOTATOR),
    ("annotator2", "firepool-annotator2", roles.ANNOTATOR),
    ("annotator3", "firepool-annotator3", roles.ANNOTATOR),
)


class Command(BaseCommand):
    help = (
        "Create the role groups and the demo accounts for local use. Existing accounts are "
        "kept as they are (their passwords are not reset unless --reset-passwords)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--reset-passwords", action="store_true")
        parser.add_argument("--format", choices=["table", "json"], default="table")

    @transaction.atomic
    def handle(self, *args, reset_passwords: bool, **options):
        groups = roles.ensure_groups()
        rows = []
        for username, password, role in DEMO_USERS:
            user, created = existing_or_new(username)  # refuses another case's twin
            if created or reset_passwords:
                user.set_password(password)
            user.is_staff = role in roles.STAFF_ROLES
            user.is_superuser = role == roles.ADMIN
            user.save()
            user.groups.add(groups[role])
            rows.append(
                {"username": username, "password": password, "role": role, "created": created}
            )
        if self.wrote_json(options, rows):
            return
        self.stdout.write("Demo logins (local development only):")
        for row in rows:
            note = "" if row["created"] or reset_passwords else "  (existing account)"
            self.stdout.write(
                f"  {row['role']:<11} {row['username']:<11} password: {row['password']}{note}"
            )

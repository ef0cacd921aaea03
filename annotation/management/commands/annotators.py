"""Where a campaign's annotators stand: paused, discounted, qualified; and an admin's remedies."""

from datetime import datetime

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from annotation.campaigns.lookup import get_campaign
from annotation.people import service as people
from jobs.commands import BaseCommand


class Command(BaseCommand):
    help = (
        "List the campaign's paused and discounted annotators, or act as an admin: "
        "--reinstate USER (paused annotators judge again), --discount USER [--since TIME] "
        "(their labels stop counting and their pairs go back to the queue), --admit USER "
        "(pass the qualification by hand)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True)
        action = parser.add_mutually_exclusive_group()
        action.add_argument("--reinstate", metavar="USER")
        action.add_argument("--discount", metavar="USER")
        action.add_argument("--admit", metavar="USER")
        parser.add_argument("--since", help="With --discount: ISO time of the first label.")
        parser.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        campaign = get_campaign(options["campaign"])
        if options["reinstate"]:
            people.reinstate(campaign, self._user(options["reinstate"]), None)
            self.stdout.write(
                f"Reinstated {options['reinstate']} in {campaign.name!r}: {people.REINSTATED}."
            )
            return
        if options["admit"]:
            people.admit(campaign, self._user(options["admit"]), None)
            self.stdout.write(f"Admitted {options['admit']} to {campaign.name!r}.")
            return
        if options["discount"]:
            since = None
            if options["since"]:
                try:
                    since = datetime.fromisoformat(options["since"])
                except ValueError:
                    raise CommandError(
                        f"--since: {options['since']!r} is not an ISO time"
                    ) from None
                if since.tzinfo is None:
                    raise CommandError("--since: give a time zone, e.g. 2026-11-24T10:00:00+00:00")
            n = people.discount(campaign, self._user(options["discount"]), since)
            self.stdout.write(f"Discounted {n} labels; their pairs are back in the queue.")
            return
        rows = [
            {
                "annotator": row.annotator.username,
                "paused_at": row.paused_at.isoformat() if row.paused_at else None,
                "reason": row.reason,
                "discounted_labels": row.discounted_labels,
            }
            for row in people.standings(campaign)
        ]
        if self.wrote_json(options, rows):
            return
        if not rows:
            self.stdout.write("Nobody is paused or discounted.")
        for row in rows:
            state = f"paused: {row['reason']}" if row["paused_at"] else "active"
            self.stdout.write(
                f"{row['annotator']}: {state}; {row['discounted_labels']} labels discounted"
            )

    def _user(self, name: str):
        user = get_user_model().objects.filter(username=name).first()
        if user is None:
            raise CommandError(f"no user named {name!r}")
        return user

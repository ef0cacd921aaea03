"""Gold pairs of a campaign: import a file, promote decided pairs, list them, export them."""

import argparse
from dataclasses import asdict

from django.core.management.base import CommandError

from annotation.campaigns.lookup import get_campaign
from annotation.gold import service as gold
from annotation.management.commands.export_labels import write_to
from jobs.commands import BaseCommand

ACTIONS = ("import", "promote", "list", "export")


class ProgressLines:
    """A job's progress reporter for a terminal: a line per step, then per tenth of a step
    that names its total."""

    def __init__(self, out):
        self.out = out
        self.message, self.total, self.done, self.tenths = "", None, 0, 0

    def step(self, message: str, total: int | None = None, done: int = 0) -> None:
        self.message, self.total, self.done, self.tenths = message, total, done, 0
        self.out.write(f"{message}…")

    def advance(self, units: int = 1) -> None:
        self.done += units
        if self.total and min(self.done * 10 // self.total, 10) > self.tenths:
            self.tenths = min(self.done * 10 // self.total, 10)
            self.out.write(f"{self.message}: {self.done:,} of about {self.total:,}")


class Command(BaseCommand):
    help = (
        "Manage a campaign's gold pairs (caption-video pairs with a known label and an "
        "explanation, used to score annotators; never counted as labels). Actions: "
        "'import --campaign C FILE' (csv or jsonl: caption_key, video_key, label, "
        "explanation[, guideline]; all or nothing), 'promote --campaign C --pairs 1,2 | "
        "--all-decided' (adjudicated pairs, or unanimous with at least two labels), "
        "'list --campaign C [--format json]', 'export --campaign C [--csv] [-o FILE]'. "
        "The forms 'gold --campaign C --import FILE' and 'gold --campaign C "
        "--promote-decided' do the same as import and promote --all-decided."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", help="Campaign name.")
        parser.add_argument("--import", dest="import_file", metavar="FILE", help="Gold file.")
        parser.add_argument(
            "--promote-decided", action="store_true", help="Promote every decided pair."
        )
        actions = parser.add_subparsers(dest="action", required=False, metavar="ACTION")

        def action(name: str, help: str):
            sub = actions.add_parser(name, help=help, description=help)
            # SUPPRESS: a --campaign given before the action is not overwritten by None.
            sub.add_argument("--campaign", default=argparse.SUPPRESS, help="Campaign name.")
            return sub

        add = action("import", "Add the gold pairs of a csv or jsonl file.")
        add.add_argument("file", help="Gold file (.csv or .jsonl).")
        add.add_argument("--file-format", choices=("csv", "jsonl"), help="Default: by suffix.")
        promote = action("promote", "Promote decided pairs to gold.")
        chosen = promote.add_mutually_exclusive_group(required=True)
        chosen.add_argument("--pairs", help="Comma-separated pair ids.")
        chosen.add_argument("--all-decided", action="store_true")
        promote.add_argument("--explanation", default="", help="Default: how it was decided.")
        promote.add_argument("--guideline", default="", help="Guideline sentence (optional).")
        listing = action("list", "List the gold pairs with their answer counts.")
        listing.add_argument("--format", choices=("table", "json"), default="table")
        export = action("export", "Write every gold pair with every answer on it.")
        export.add_argument("--csv", action="store_true", help="CSV (default: jsonl).")
        export.add_argument(
            "-o", "--output", default="-", help="File to write, or '-' (the default)."
        )

    def handle(self, *args, **options):
        action = options.get("action")
        if action is None:
            if options["import_file"] and options["promote_decided"]:
                raise CommandError("give --import or --promote-decided, not both")
            if options["import_file"]:
                action = "import"
                options["file"] = options["import_file"]
            elif options["promote_decided"]:
                action = "promote"
                options["all_decided"] = True
            else:
                raise CommandError(f"name an action: {', '.join(ACTIONS)}")
        if not options.get("campaign"):
            raise CommandError("--campaign is required")
        campaign = get_campaign(options["campaign"])
        getattr(self, f"_{action}")(campaign, options)

    def _import(self, campaign, options):
        # Read and checked first, written in one short transaction (the gold import job's path).
        result = gold.import_gold(
            campaign, options["file"], options.get("file_format"), steps=ProgressLines(self.stderr)
        )
        self.stdout.write(
            f"Added {result.created} gold pairs ({result.relevant} relevant) from "
            f"{result.file} to campaign {result.campaign!r}."
        )

    def _promote(self, campaign, options):
        pair_ids = None
        if options.get("pairs"):
            try:
                pair_ids = [int(part) for part in options["pairs"].split(",") if part.strip()]
            except ValueError:
                raise CommandError(f"--pairs: not a list of ids: {options['pairs']!r}") from None
        result = gold.promote(
            campaign,
            pair_ids=pair_ids,
            all_decided=bool(options.get("all_decided")),
            explanation=options.get("explanation", ""),
            guideline=options.get("guideline", ""),
        )
        self.stdout.write(
            f"Promoted {result.promoted} decided pairs of {result.campaign!r} to gold "
            f"({result.already_gold} already gold)."
        )

    def _list(self, campaign, options):
        rows = gold.gold_summaries(campaign)
        if self.wrote_json(options, [asdict(row) for row in rows], ensure_ascii=False):
            return
        if not rows:
            self.stdout.write(f"Campaign {campaign.name!r} has no gold pairs.")
            return
        for row in rows:
            self.stdout.write(
                f"{row.id:>6}  {row.caption_key} × {row.video_key}  {row.label:<10} "
                f"{row.source:<8} {row.correct}/{row.answers} right  {row.explanation}"
            )

    def _export(self, campaign, options):
        output = options["output"]
        written = write_to(output, campaign, "gold-csv" if options.get("csv") else "gold")
        if written is not None:
            self.stderr.write(
                f"Wrote the gold pairs of {campaign.name!r} to {output} ({written:,} characters)."
            )

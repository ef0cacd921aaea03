"""Import a file of machine judgements (a vision-language model's) into a campaign."""

from dataclasses import asdict

from annotation.assessors import service as assessors
from annotation.campaigns.lookup import get_campaign
from jobs.commands import BaseCommand


class Command(BaseCommand):
    help = (
        "Store a file of machine judgements as a campaign's machine assessors: features for a "
        "relevance predictor, never labels (no pair, tally, label figure or export changes). "
        "The file is CSV (a header row) or JSON lines (one object a line), told by the name "
        "(.csv; .jsonl, .json, .ndjson) or else by the content ('{' first: JSON lines). "
        "Columns or keys: caption (the caption's key in the dataset), video (the video's "
        "key), assessor (the machine's name), score (P(relevant), a number from 0 to 1) "
        "and/or label (relevant or irrelevant), family (optional: the model family, e.g. "
        "clip). Each (assessor, caption, video) once, each pair pooled in the campaign or one "
        "of its gold pairs (a pair both pooled and gold is stored as pooled; judgements of "
        "gold pairs only measure the machine's accuracy on gold). All or nothing: an error "
        "names the file, line and field and stores nothing. An assessor already stored has "
        "its judgements replaced by the file's."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="Machine judgements (.csv or .jsonl).")
        parser.add_argument("--campaign", required=True, help="Campaign name.")
        parser.add_argument(
            "--file-format", choices=("csv", "jsonl"), help="Default: by name, then content."
        )
        parser.add_argument("--format", choices=("text", "json"), default="text")

    def handle(self, *args, **options):
        campaign = get_campaign(options["campaign"])
        result = assessors.import_assessments(campaign, options["file"], options["file_format"])
        if self.wrote_json(options, asdict(result), ensure_ascii=False):
            return
        replaced = f"; replaced {', '.join(result.replaced)}" if result.replaced else ""
        gold = f" and {result.gold} gold pairs" if result.gold else ""
        self.stdout.write(
            f"Stored {result.rows} machine judgements of {len(result.assessors)} assessor"
            f"{'s' if len(result.assessors) != 1 else ''} ({', '.join(result.assessors)}) on "
            f"{result.pairs} pairs{gold} from {result.file} in campaign {result.campaign!r}"
            f"{replaced}."
        )

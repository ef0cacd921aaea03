"""Write a model's run as a TREC run file (the format `register_model --run` reads)."""

from pathlib import Path

from jobs.commands import BaseCommand
from retrieval.management.lookup import get_dataset, get_model, get_run


class Command(BaseCommand):
    help = "Export a model's run as a TREC run file: qid Q0 docno rank score run_id."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--model", required=True)
        parser.add_argument("-o", "--output", type=Path, required=True, help="Output file.")

    def handle(self, *args, **options):
        from retrieval.search.runs_service import export_run

        dataset = get_dataset(options["dataset"])
        model = get_model(dataset, options["model"])
        run = get_run(dataset, model.name)
        lines = export_run(run, options["output"])
        self.stdout.write(f"Wrote {lines} lines of run {run.name!r} to {options['output']}")

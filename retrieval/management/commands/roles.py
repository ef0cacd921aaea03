"""Print a caption's semantic-role frames (V, ARG0, ARG1, ARGM-*) from the dependency parse."""

from django.core.management.base import CommandError
from tqdm import tqdm

from jobs.commands import BaseCommand
from retrieval.datasets.lookup import get_dataset
from retrieval.datasets.roles import frames, role_graphs
from retrieval.datasets.roles_service import fill_role_spans
from retrieval.encoders.text import load_spacy


class Command(BaseCommand):
    help = (
        "Parse a caption into PropBank-style semantic-role frames (Zhu, Bresson & Lim's "
        "role graph) with spaCy's dependency parse and print them: JSON, a list of "
        '{"V": ..., "ARG0": ..., ...} frames, or a table of verb, role and span.'
    )

    def add_arguments(self, parser):
        parser.add_argument("caption", nargs="?")
        parser.add_argument("--format", choices=["table", "json"], default="table")
        parser.add_argument(
            "--fill-dataset",
            metavar="D",
            help="Instead: store the role spans of every caption of dataset D that has none "
            "(the judging page underlines them; campaigns created since do this themselves).",
        )

    def handle(self, *args, **options):
        if options["fill_dataset"]:
            dataset = get_dataset(options["fill_dataset"])
            ids = list(dataset.captions.values_list("pk", flat=True))
            with tqdm(total=len(ids), unit=" captions", disable=options["verbosity"] == 0) as bar:
                filled = fill_role_spans(ids, progress=bar.update)
            self.stdout.write(f"Role spans stored for {filled} captions of {dataset.name!r}.")
            return
        if options["caption"] is None:
            raise CommandError("give a caption, or --fill-dataset D")
        graph = role_graphs([options["caption"]], nlp=load_spacy())[0]
        if self.wrote_json(options, frames(graph), indent=2):
            return
        rows = [("verb", "role", "span")]
        for edge in graph.edges:
            source, target = graph.nodes[edge.source], graph.nodes[edge.target]
            verb = {"verb": source.text, "sentence": "-"}[source.kind]
            rows.append((target.text if edge.role == "V" else verb, edge.role, target.text))
        widths = [max(len(row[column]) for row in rows) for column in range(2)]
        for verb, role, span in rows:
            self.stdout.write(f"{verb:<{widths[0]}}  {role:<{widths[1]}}  {span}")

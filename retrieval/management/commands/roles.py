"""Print a caption's semantic-role frames (V, ARG0, ARG1, ARGM-*) from the dependency parse."""

import json

from config.commands import BaseCommand
from retrieval.semantic_roles import frames, role_graphs


class Command(BaseCommand):
    help = (
        "Parse a caption into PropBank-style semantic-role frames (Zhu, Bresson & Lim's "
        "role graph) with spaCy's dependency parse and print them: JSON, a list of "
        '{"V": ..., "ARG0": ..., ...} frames, or a table of verb, role and span.'
    )

    def add_arguments(self, parser):
        parser.add_argument("caption")
        parser.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        graph = role_graphs([options["caption"]])[0]
        if options["format"] == "json":
            self.stdout.write(json.dumps(frames(graph), indent=2))
            return
        rows = [("verb", "role", "span")]
        for edge in graph.edges:
            source, target = graph.nodes[edge.source], graph.nodes[edge.target]
            verb = {"verb": source.text, "sentence": "-"}[source.kind]
            rows.append((target.text if edge.role == "V" else verb, edge.role, target.text))
        widths = [max(len(row[column]) for row in rows) for column in range(2)]
        for verb, role, span in rows:
            self.stdout.write(f"{verb:<{widths[0]}}  {role:<{widths[1]}}  {span}")

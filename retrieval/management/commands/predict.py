"""Search every query caption with a model's embeddings and store the run."""

import json

from django.core.management.base import CommandError

from jobs.commands import BaseCommand
from retrieval.management.lookup import get_dataset, get_model
from retrieval.services.search import predict


class Command(BaseCommand):
    help = (
        "Rank the collection's videos for every query caption of a split (test by default) and "
        "store the top-k run. Default index: exact inner product on L2-normalised vectors; "
        "--index ivf|hnsw for large collections reports recall@k against exact search."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--model", required=True)
        parser.add_argument("--k", type=int, default=20, help="Depth of each ranked list.")
        parser.add_argument("--split", default="test")
        parser.add_argument("--index", choices=["exact", "ivf", "hnsw"], default="exact")
        parser.add_argument("--nlist", type=int, help="IVF lists (default about 4 sqrt(n)).")
        parser.add_argument("--nprobe", type=int, help="IVF lists visited per query.")
        parser.add_argument("--ef-search", type=int, help="HNSW candidates per query.")
        parser.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        dataset = get_dataset(options["dataset"])
        model = get_model(dataset, options["model"])
        if options["k"] < 1:
            raise CommandError("--k must be at least 1")
        run = predict(
            model,
            k=options["k"],
            split=options["split"],
            index_kind=options["index"],
            nlist=options["nlist"],
            nprobe=options["nprobe"],
            ef_search=options["ef_search"],
        )
        summary = {"run": run.name, "queries": run.query_count, "depth": run.depth, **run.metadata}
        if options["format"] == "json":
            self.stdout.write(json.dumps(summary))
            return
        line = (
            f"Run {run.name!r}: {run.query_count} queries, top {run.depth} of "
            f"{run.metadata['collection_size']} videos ({run.metadata['index']} index)"
        )
        if "recall_at_k_vs_exact" in run.metadata:
            line += f", recall@{run.depth} vs exact {run.metadata['recall_at_k_vs_exact']:.4f}"
        self.stdout.write(line)

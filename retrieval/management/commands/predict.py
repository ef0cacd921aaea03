"""Search every query caption with a model's embeddings and store the run (the ``predict``
job kind, run here)."""

from jobs.commands import JobCommand


class Command(JobCommand):
    kind_name = "predict"
    help = (
        "Rank the collection's videos for every query caption of a split (test by default) and "
        "store the top-k run. Default index: exact inner product on L2-normalised vectors; "
        "--index ivf|hnsw for large collections reports recall@k against exact search."
    )

    def summary(self, result: dict, arguments: dict) -> str:
        line = (
            f"Run {result['run']!r}: {result['queries']} queries, top {result['depth']} of "
            f"{result['collection_size']} videos ({result['index']} index)"
        )
        if "recall_at_k_vs_exact" in result:
            line += f", recall@{result['depth']} vs exact {result['recall_at_k_vs_exact']:.4f}"
        return line

"""Embed a split's captions and videos with a model, then build its faiss index (the
``embed`` job kind, run here)."""

from jobs.commands import JobCommand


class Command(JobCommand):
    kind_name = "embed"
    help = (
        "Compute caption and video embeddings in batches (on the GPU when present), then "
        "build the exact faiss index over the video embeddings. Resumable: an interrupted "
        "run continues from the chunks already saved."
    )

    def summary(self, result: dict, arguments: dict) -> str:
        return (
            f"Embedded {result['captions']} captions and {result['videos']} videos with "
            f"{arguments['model']!r} (d = {result['dim']}); index built."
        )

"""Embed a split's captions and videos with a model, then build its faiss index."""

import sys

from tqdm import tqdm

from jobs.commands import BaseCommand
from retrieval.management.lookup import get_dataset, get_model
from retrieval.models import Caption, Video
from retrieval.services.encoding import embed


class Command(BaseCommand):
    help = (
        "Compute caption and video embeddings in batches (on the GPU when present), then "
        "build the exact faiss index over the video embeddings. Resumable: an interrupted "
        "run continues from the chunks already saved."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--model", required=True)
        parser.add_argument("--split", default="test")
        parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
        parser.add_argument("--batch-size", type=int, default=256)

    def handle(self, *args, **options):
        dataset = get_dataset(options["dataset"])
        model = get_model(dataset, options["model"])
        split = options["split"]
        total = (
            Caption.objects.filter(dataset=dataset, split=split).count()
            + Video.objects.filter(dataset=dataset, split=split).count()
        )
        quiet = options["verbosity"] == 0 or not sys.stderr.isatty()
        with tqdm(total=total, unit=" items", file=sys.stderr, disable=quiet) as bar:
            embeddings = embed(
                model,
                split=split,
                device=options["device"],
                batch_size=options["batch_size"],
                progress=bar.update,
            )
        self.stdout.write(
            f"Embedded {len(embeddings.caption_ids)} captions and {len(embeddings.video_ids)} "
            f"videos with {model.name!r} (d = {embeddings.captions.shape[1]}); index built."
        )

"""Compute or attach per-video feature vectors (inputs of the mme and jpose encoders)."""

import sys
from pathlib import Path

from tqdm import tqdm

from jobs.commands import BaseCommand
from retrieval.encoders.service import extract_dataset_features, link_feature_files
from retrieval.management.lookup import get_dataset


class Command(BaseCommand):
    help = (
        "Compute per-video features with the deterministic torch frame-feature extractor "
        "(colour, shape and motion statistics) for videos with local media, or attach "
        "user-supplied feature files with --from DIR (one <video key>.npy vector and/or "
        "<video key>.npz with arrays appearance (T x d), action (T x d) and objects (N x d) "
        "per video). --experts also stores those three sequences for computed features."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--from", dest="source", type=Path, metavar="DIR")
        parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
        parser.add_argument("--force", action="store_true", help="Recompute existing features.")
        parser.add_argument(
            "--experts",
            action="store_true",
            help="Also store per-clip appearance, action and object sequences (<key>.npz).",
        )

    def handle(self, *args, **options):
        dataset = get_dataset(options["dataset"])
        if options["source"]:
            count = link_feature_files(dataset, options["source"])
        else:
            total = dataset.videos.exclude(media="").count()
            quiet = options["verbosity"] == 0 or not sys.stderr.isatty()
            with tqdm(total=total, unit=" videos", file=sys.stderr, disable=quiet) as bar:
                count = extract_dataset_features(
                    dataset,
                    device=options["device"],
                    force=options["force"],
                    experts=options["experts"],
                    progress=bar.update,
                )
        self.stdout.write(f"Features stored for {count} videos of {dataset.name!r}.")

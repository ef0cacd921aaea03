"""``manage.py demo``: build the synthetic demo benchmark (clips, captions, ground truth)."""

import time

from django.core.management.base import CommandError, CommandParser
from tqdm import tqdm

from jobs.commands import BaseCommand
from retrieval.datasets.demo.runs import (
    DEMO_MODELS,
    OPTIONAL_MODELS,
    build_demo_models,
    score_runs,
)
from retrieval.datasets.demo.service import create_demo_dataset, summarize_demo_dataset
from retrieval.models import Dataset


class Command(BaseCommand):
    help = (
        "Generate the synthetic demo world: short WebM clips of moving coloured shapes, "
        "captions from a grammar with synonyms and varying specificity, a train/test split "
        "with one query caption per test video, and the exact relevance of every "
        "caption-video pair (FIRE §3.1 rule). Runs offline; 600 videos take well under "
        "two minutes on two cores."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", default="demo", help="Dataset name (default: demo).")
        parser.add_argument(
            "--videos", type=int, default=600, help="Number of videos (default: 600)."
        )
        parser.add_argument(
            "--seed", type=int, default=0, help="Seed; equal seeds give equal worlds."
        )
        parser.add_argument(
            "--test-fraction",
            type=float,
            default=1 / 3,
            help="Share of videos in the test split (default: 1/3).",
        )
        parser.add_argument(
            "--workers", type=int, default=2, help="Rendering processes (default: 2)."
        )
        parser.add_argument(
            "--no-models",
            action="store_true",
            help="Only build the world; skip training and running the four built-in models.",
        )
        parser.add_argument(
            "--with-srct",
            action="store_true",
            help="Also build srct (feature experts, training, run): a few minutes more.",
        )
        parser.add_argument("--epochs", type=int, help="Training epochs for mme, jpose, srct.")
        parser.add_argument("--k", type=int, default=20, help="Depth of the demo runs.")
        parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
        existing = parser.add_mutually_exclusive_group()
        existing.add_argument(
            "--replace", action="store_true", help="Delete and rebuild an existing dataset."
        )
        existing.add_argument(
            "--if-missing",
            action="store_true",
            help="Do nothing (successfully) when the dataset already exists.",
        )

    def handle(self, *args, **options) -> None:
        name: str = options["name"]
        if options["videos"] < 1:
            raise CommandError("--videos must be at least 1")
        if not 0.0 <= options["test_fraction"] <= 1.0:
            raise CommandError("--test-fraction must be between 0 and 1")
        dataset = Dataset.objects.filter(name=name).first()
        if dataset is not None and not options["replace"]:
            if not options["if_missing"]:
                raise CommandError(
                    f'Dataset "{name}" already exists: pass --replace to rebuild it, '
                    "or --if-missing to keep it."
                )
            self.stdout.write(f'Dataset "{name}" already exists; keeping it.')
        else:
            started = time.perf_counter()
            quiet = options["verbosity"] < 1
            with tqdm(
                total=options["videos"], desc="Rendering clips", unit="clip", disable=quiet
            ) as bar:
                dataset = create_demo_dataset(
                    name=name,
                    n_videos=options["videos"],
                    seed=options["seed"],
                    test_fraction=options["test_fraction"],
                    replace=options["replace"],
                    progress=lambda done, total: bar.update(done - bar.n),
                    workers=options["workers"],
                )
            summary = summarize_demo_dataset(dataset)
            self.stdout.write(
                f'Built demo dataset "{name}" in {time.perf_counter() - started:.1f} s: '
                f"{summary.videos} videos ({summary.train_videos} train, "
                f"{summary.test_videos} test), {summary.captions} captions, "
                f"{summary.queries} queries."
            )
            self.stdout.write(
                "Relevant test videos per query caption: "
                f"mean {summary.mean_relevant_per_query:.1f}, "
                f"max {summary.max_relevant_per_query}, "
                f"exactly one for {summary.queries_with_one_relevant} of {summary.queries}."
            )
        if not options["no_models"]:
            self._models(dataset, options)

    def _models(self, dataset: Dataset, options: dict) -> None:
        """Train and run the four built-in models (and srct), then print their Correct@K."""
        models = DEMO_MODELS + (OPTIONAL_MODELS if options["with_srct"] else ())
        missing = [m for m in models if not dataset.runs.filter(name=m).exists()]
        started = time.perf_counter()
        runs = build_demo_models(
            dataset,
            models=models,
            k=options["k"],
            seed=options["seed"],
            epochs=options["epochs"],
            device=options["device"],
            progress=options["verbosity"] > 0,
            say=self.stdout.write,
        )
        if missing:
            self.stdout.write(
                f"Built runs {', '.join(missing)} in {time.perf_counter() - started:.1f} s."
            )
        self.stdout.write(
            "Correct@K of the demo runs: exhaustive ground truth (original positive only)"
        )
        self.stdout.write(f"  {'run':<8} {'C@1':>15} {'C@5':>15} {'C@10':>15}")
        for scores in score_runs(runs):
            cells = " ".join(
                f"{100 * scores.exhaustive[key]:6.1f} ({100 * scores.original[key]:5.1f})"
                for key in ("C@1", "C@5", "C@10")
            )
            self.stdout.write(f"  {scores.run:<8} {cells}")

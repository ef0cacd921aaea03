"""Register a retrieval model: uploaded embeddings, a TREC run file, or a built-in encoder."""

import json
from pathlib import Path

from django.core.management.base import CommandError

from jobs.commands import BaseCommand
from retrieval.datasets.lookup import get_dataset
from retrieval.search import registration


class Command(BaseCommand):
    help = (
        "Register a model on a dataset from one of three sources. --embeddings DIR holds "
        "captions.npy, videos.npy, caption_ids.txt and video_ids.txt; --run FILE is a TREC run "
        "(qid = caption key, docno = video key; ranked by score, ties by docno descending as "
        "trec_eval does); --encoder NAME is a built-in model (random, minilm, mme, jpose). "
        "Nothing is registered if any check fails."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--name", required=True, help="Model name, unique in the dataset.")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--embeddings", type=Path, metavar="DIR")
        source.add_argument("--run", type=Path, metavar="FILE")
        source.add_argument("--encoder", metavar="NAME")
        parser.add_argument(
            "--config",
            default="{}",
            help='Encoder settings as JSON, e.g. \'{"seed": 1, "dim": 256}\'.',
        )
        parser.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        dataset = get_dataset(options["dataset"])
        name = options["name"]
        if options["embeddings"]:
            model = registration.register_embeddings(dataset, name, options["embeddings"])
        elif options["run"]:
            model = registration.register_run_file(dataset, name, options["run"])
        else:
            from retrieval.encoders.service import register_encoder

            try:
                config = json.loads(options["config"])
            except json.JSONDecodeError as exc:
                raise CommandError(f"--config is not valid JSON: {exc}") from None
            model = register_encoder(dataset, name, options["encoder"], config)
        summary = {
            "dataset": dataset.name,
            "model": model.name,
            "source": model.source,
            "encoder": model.encoder,
            "runs": list(model.runs.values_list("name", flat=True)),
        }
        if not self.wrote_json(options, summary):
            what = model.encoder or model.get_source_display()
            self.stdout.write(f"Registered {model.name!r} on {dataset.name!r} ({what}).")

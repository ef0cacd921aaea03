"""Train a built-in encoder (mme, jpose) on the dataset's train split."""

import json

from jobs.commands import BaseCommand
from retrieval.management.lookup import get_dataset, get_model
from retrieval.proxies import RELEVANCES
from retrieval.services.encoding import DEFAULT_THRESHOLD, train


class Command(BaseCommand):
    help = (
        "Train a registered mme or jpose model on the train split (seeded; CUDA with bf16 "
        "autocast when --device is cuda or auto finds a GPU), with a progress bar showing the "
        "loss. --relevance picks the triplets' positives (Wray et al. §4.3): 'instance' (the "
        "default) only a caption's own video; a proxy (bow, pos, syn, met) every caption-video "
        "pair of the train split with semantic similarity S >= --threshold, the rest negatives."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--model", required=True)
        parser.add_argument("--epochs", type=int, help="Default: the encoder's own.")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
        parser.add_argument(
            "--relevance",
            choices=RELEVANCES,
            default="instance",
            help="Positives: 'instance' (own video only) or a proxy thresholded at "
            "--threshold (default: instance).",
        )
        parser.add_argument(
            "--threshold",
            type=float,
            metavar="T",
            help=f"Proxy relevance only: pairs with S >= T are positives, T in (0, 1] "
            f"(default {DEFAULT_THRESHOLD}: Wray et al. find SYN, METEOR and PoS best near "
            "0.4, BoW near 0.2).",
        )
        parser.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        dataset = get_dataset(options["dataset"])
        model = get_model(dataset, options["model"])
        losses = train(
            model,
            epochs=options["epochs"],
            seed=options["seed"],
            device=options["device"],
            progress=options["verbosity"] > 0 and options["format"] == "table",
            relevance=options["relevance"],
            threshold=options["threshold"],
        )
        log = model.training_log[-1]
        if options["format"] == "json":
            self.stdout.write(json.dumps(log))
        else:
            if log["threshold"] is None:
                relevance = "instance relevance"
            else:
                relevance = f"{log['relevance']} relevance S >= {log['threshold']:g}"
            self.stdout.write(
                f"Trained {model.name!r} for {len(losses)} epochs in {log['seconds']} s on "
                f"{log['device']} with {relevance} ({log['positives_per_caption']:g} positive "
                f"videos per caption): loss {losses[0]:.4f} -> {losses[-1]:.4f}"
            )

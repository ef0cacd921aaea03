"""Train a built-in encoder (mme, jpose) on the dataset's train split."""

import json

from django.core.management.base import BaseCommand, CommandError

from retrieval.management.lookup import get_dataset, get_model
from retrieval.services.encoding import EncodingError, train


class Command(BaseCommand):
    help = (
        "Train a registered mme or jpose model on the train split (seeded; CUDA with bf16 "
        "autocast when --device is cuda or auto finds a GPU), with a progress bar showing the loss."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--model", required=True)
        parser.add_argument("--epochs", type=int, help="Default: the encoder's own.")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
        parser.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        dataset = get_dataset(options["dataset"])
        model = get_model(dataset, options["model"])
        try:
            losses = train(
                model,
                epochs=options["epochs"],
                seed=options["seed"],
                device=options["device"],
                progress=options["verbosity"] > 0 and options["format"] == "table",
            )
        except (EncodingError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        log = model.training_log[-1]
        if options["format"] == "json":
            self.stdout.write(json.dumps(log))
        else:
            self.stdout.write(
                f"Trained {model.name!r} for {len(losses)} epochs in {log['seconds']} s on "
                f"{log['device']}: loss {losses[0]:.4f} -> {losses[-1]:.4f}"
            )

"""Train a built-in encoder (mme, jpose, srct) on the dataset's train split (the ``train``
job kind, run here)."""

from jobs.commands import JobCommand


class Command(JobCommand):
    kind_name = "train"
    help = (
        "Train a registered mme, jpose or srct model on the train split (seeded; CUDA with "
        "bf16 autocast when --device is cuda or auto finds a GPU), with a progress bar showing "
        "the loss. --relevance picks the triplets' positives (Wray et al. 2021, §4.3): "
        "'instance' (the default) only a caption's own video; a proxy (bow, pos, syn, met) "
        "every caption-video pair of the train split with semantic similarity S >= "
        "--threshold, the rest negatives."
    )

    def summary(self, log: dict, arguments: dict) -> str:
        if log["threshold"] is None:
            relevance = "instance relevance"
        else:
            relevance = f"{log['relevance']} relevance S >= {log['threshold']:g}"
        losses = log["losses"]
        return (
            f"Trained {arguments['model']!r} for {len(losses)} epochs in {log['seconds']} s on "
            f"{log['device']} with {relevance} ({log['positives_per_caption']:g} positive "
            f"videos per caption): loss {losses[0]:.4f} -> {losses[-1]:.4f}"
        )

"""Refit an adaptive campaign's annotator models and priors now, and recompute its pairs (the
``refit-policy`` job kind, run here)."""

from annotation.policy.fit import JOB_KIND
from jobs.commands import JobCommand


class Command(JobCommand):
    help = (
        "Fit the annotator confusions and class priors of an adaptive campaign from its live "
        "labels and gold answers (what the refit-policy job does), store them and recompute "
        "every labelled pair's needed labels and status."
    )
    kind_name = JOB_KIND

    def summary(self, result: dict, arguments: dict) -> str:
        return (
            f"Refitted {result['campaign']!r} on {result['labels']} labels and "
            f"{result['gold_answers']} gold answers from {result['annotators']} "
            f"annotators: {result['pairs_changed']} pairs changed."
        )

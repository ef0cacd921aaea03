"""Fit a campaign's relevance predictor now (what the ``fit-predictor`` job does)."""

from annotation.prediction.service import JOB_KIND
from jobs.commands import JobCommand


class Command(JobCommand):
    help = (
        "Cross-fit the relevance predictor of a campaign (by name or id) on its resolved "
        "labels, from the runs' ranks and scores, caption lengths, cached semantic proxies "
        "and machine assessors, and store every pooled pair's probability of relevance."
    )
    kind_name = JOB_KIND

    def summary(self, result: dict, arguments: dict) -> str:
        quality = result.get("quality") or {}
        auc = quality.get("auc")
        return (
            f"Fitted {result['campaign']!r}: {result['pairs']} pairs predicted from "
            f"{result['labelled']} labelled ({result['method']}"
            + (f", out-of-fold AUC {auc:.3f}" if auc is not None else "")
            + f") in {result['seconds']:.1f} s."
        )

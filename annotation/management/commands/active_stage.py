"""Estimate a campaign's last active stage and draw the next (what the ``active-stage`` job does)."""

from annotation.active.stages import JOB_KIND
from jobs.commands import JobCommand
from retrieval.scoring.rescoring import points


class Command(JobCommand):
    help = (
        "The active policy's stages of a campaign: once every query the last stage drew is "
        "judged in full, store each run's active-inference estimate of every score with its "
        "95%% interval; with --draw, draw the next stage (queries drawn with known "
        "probabilities, more where the predictor is unsure, served first and judged in full) "
        "unless every settled score is already within the campaign's half-width."
    )
    kind_name = JOB_KIND

    def summary(self, result: dict, arguments: dict) -> str:
        lines = []
        for stage in result["stages"]:
            lines.append(
                f"stage {stage['number']}: {stage['drawn']} queries drawn, {stage['pairs']} "
                f"pairs served again" + ("" if stage["estimated"] else " (being judged)")
            )
        if result.get("unfinished"):
            lines.append(f"{result['unfinished']} drawn queries still have pairs to label")
        estimates = result.get("estimates")
        if estimates:
            lines.append(f"estimates of stage {result['estimated_stage']} (95% intervals):")
            for run, scores in estimates.items():
                cells = [
                    f"{metric} {points(value['estimate'])} "
                    f"[{points(value['low'])}–{points(value['high'])}]"
                    for metric, value in scores.items()
                ]
                lines.append(f"  {run}: " + ", ".join(cells))
            state = "settled" if result["settled"] else "not settled yet"
            lines.append(
                f"every settled score ({', '.join(result['settle'])}) within "
                f"±{result['half_width']:g} points: {state}"
            )
        if result.get("drawn"):
            drawn = result["drawn"]
            lines.append(
                f"drew stage {drawn['stage']}: {drawn['drawn']} of {drawn['queries']} queries "
                f"({drawn['pairs']} pairs served first, about {drawn['expected_labels']:.0f} "
                "labels expected)"
            )
        elif result.get("not_drawn"):
            lines.append(f"no stage drawn: {result['not_drawn']}")
        elif result.get("stopped"):
            lines.append(f"no further stage is drawn: {result['stopped']}")
        return "\n".join(lines) or f"{result['campaign']!r} has no active stage yet."

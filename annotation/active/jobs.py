"""The active stages' job kind: estimate the last stage, draw the next."""

from django import forms

from annotation.active import stages as active_stages
from annotation.active.live import ActiveError
from annotation.campaigns.forms import CampaignNameForm, bounded
from annotation.campaigns.lookup import get_campaign
from annotation.campaigns.spec import SEED
from jobs.progress import Reporter
from jobs.registry import ADMIN, JobKind, register


class ActiveStageForm(CampaignNameForm):
    """A campaign, whether to draw its next active stage, and the draw's seed."""

    draw = forms.BooleanField(
        required=False,
        help_text="Draw the next stage (unticked: only estimate the last one once judged).",
    )
    seed = bounded(
        SEED,
        required=False,
        help_text="Seed of the draw (default: from the campaign's seed and the stage number).",
    )


def run_active_stage(
    reporter: Reporter, campaign: str, draw: bool = False, seed: int | None = None
) -> dict:
    """Estimate the campaign's last active stage once its queries are judged in full and, with
    ``draw``, draw the next one; a draw the stopping rule refuses is reported, not failed."""
    found = get_campaign(campaign)
    reporter.step(f"estimating the last active stage of {found.name}")
    result = active_stages.stage_report(found)
    if draw:
        reporter.step(f"drawing the next active stage of {found.name}")
        try:
            result["drawn"] = active_stages.draw_stage(found, seed=seed).as_dict()
        except ActiveError as exc:
            result["drawn"], result["not_drawn"] = None, str(exc)
    return result


register(
    JobKind(
        active_stages.JOB_KIND,
        "Estimate a campaign's last active stage and draw the next",
        run_active_stage,
        ActiveStageForm,
        permission=ADMIN,
        atomic=True,
        lane="prediction",
        queue="live",
        describe=lambda a: f"active stage of {a['campaign']}",
    )
)

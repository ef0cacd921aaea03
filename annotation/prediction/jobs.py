"""The relevance predictor's job kind: its fit, which carries the active stages on."""

from django import forms

from annotation.active import stages as active_stages
from annotation.active.live import ActiveError
from annotation.campaigns.forms import bounded, campaign_names
from annotation.campaigns.lookup import get_campaign, get_campaign_or_id
from annotation.campaigns.spec import SEED
from annotation.prediction import service as prediction
from jobs.progress import Reporter
from jobs.registry import ADMIN, JobKind, register
from retrieval.forms import PickedName, found_or_invalid


class FitPredictorForm(forms.Form):
    """A campaign by name or id, and the seed of its folds and trees."""

    campaign = PickedName(campaign_names, max_length=200, help_text="Campaign name or id.")
    seed = bounded(
        SEED, required=False, help_text="Seed of the query folds and the trees (default 0)."
    )

    def clean_campaign(self) -> str:
        return found_or_invalid(get_campaign_or_id, self.cleaned_data["campaign"]).name


def run_fit_predictor(reporter: Reporter, campaign: str, seed: int = 0) -> dict:
    """Fit the campaign's relevance predictor on its resolved labels and store it. Once an
    admin has drawn a first active stage, carry the stages on: store the last stage's
    estimates when it is judged in full, then draw the next with the new predictions unless
    every score is settled (the fit follows the refits, which follow the labels, so the stages
    go on as annotators judge; a draw the stopping rule refuses is reported, not failed)."""
    found = get_campaign(campaign)
    reporter.step(f"fitting the relevance predictor of {found.name}")
    summary = prediction.fit_predictor(found, seed=seed).summary()
    stage = active_stages.estimate_stage(found)
    if stage is not None:
        summary["active_stage"] = {"number": stage.number, "estimated": stage.estimates is not None}
    if stage is not None and stage.estimates is not None:
        reporter.step(f"drawing the next active stage of {found.name}")
        try:
            summary["active_stage"]["drawn"] = active_stages.draw_stage(found).as_dict()
        except ActiveError as exc:
            summary["active_stage"]["not_drawn"] = str(exc)
    return summary


register(
    JobKind(
        prediction.JOB_KIND,
        "Fit a campaign's relevance predictor",
        run_fit_predictor,
        FitPredictorForm,
        permission=ADMIN,
        joins=True,
        lane="prediction",  # its own: a long fit never delays a refit or the figures
        queue="live",  # the refits' workers: it follows them
        # Not one transaction: the inputs are read, then the one row replaced.
        describe=lambda a: f"relevance predictor of {a['campaign']}",
    )
)

"""The adaptive label policy's job kind: the refit of a campaign's annotator models."""

from annotation.campaigns.forms import CampaignNameForm
from annotation.campaigns.lookup import get_campaign
from annotation.policy import fit as policy_fit
from jobs.progress import Reporter
from jobs.registry import ADMIN, JobKind, register


def run_refit(reporter: Reporter, campaign: str) -> dict:
    """Refit the adaptive campaign's annotator models and priors, and recompute its pairs."""
    found = get_campaign(campaign)
    reporter.step(f"refitting the label policy of {found.name}")
    return policy_fit.refit(found).summary()


register(
    JobKind(
        policy_fit.JOB_KIND,
        "Refit an adaptive campaign's annotator models",
        run_refit,
        CampaignNameForm,
        permission=ADMIN,
        joins=True,
        lane="policy",
        queue="live",
        # Not one transaction: the pairs are written in short ones (pair_state.apply_refit).
        describe=lambda a: f"label policy refit of {a['campaign']}",
    )
)

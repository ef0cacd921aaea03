"""The label set figures' job kind: what pages show of a new label set, computed once."""

from jobs.progress import Reporter
from jobs.registry import RESEARCH, JobKind, register
from retrieval.datasets.lookup import get_dataset
from retrieval.label_sets.service import WARM_JOB
from retrieval.scoring.jobs import ScoringForm, label_set_named


def run_label_set_figures(reporter: Reporter, dataset: str, labels: str = "") -> dict:
    """Compute and store what pages show of a label set (queued when the set is made)."""
    from retrieval.label_sets.figures import warm

    found = get_dataset(dataset)
    return warm(found, label_set_named(found, labels), reporter.step)


register(
    JobKind(
        WARM_JOB,
        "Compute a label set's leaderboard, report and judging-orders comparison",
        run_label_set_figures,
        ScoringForm,
        permission=RESEARCH,
        joins=True,
        lane="figures",
        queue="live",
        describe=lambda a: f"figures of {a['dataset']} under {a.get('labels') or 'original'}",
    )
)

"""The media job kind: a dataset's missing browser copies and segment clips."""

from dataclasses import asdict

from jobs.progress import Reporter
from jobs.registry import ADMIN, JobKind, register
from retrieval.datasets.lookup import get_dataset
from retrieval.forms import DatasetForm


def run_media(reporter: Reporter, dataset: str) -> dict:
    """Make the dataset's missing browser copies and segment clips (several jobs share them)."""
    from retrieval.media.service import make_missing, pending

    found = get_dataset(dataset)
    reporter.step(f"browser copies and segment clips of {found.name}", total=pending(found).count())
    return {"dataset": found.name, **asdict(make_missing(found, advance=reporter.advance))}


register(
    JobKind(
        "media",
        "Make browser copies and segment clips of a dataset's videos",
        run_media,
        DatasetForm,
        queue="media",
        permission=ADMIN,
        describe=lambda a: f"browser copies and clips of {a['dataset']}",
    )
)

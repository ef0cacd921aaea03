"""What ``make run`` builds before the server starts (the demo dataset, the quick models'
runs, the demo accounts), and the jobs it leaves to ``manage.py startup_jobs`` in order
(the other models, the demo campaign, the proxy matrices); nothing that exists is rebuilt
and no step already made by an unfinished job is recorded again.
"""

from dataclasses import dataclass

from annotation.models import Campaign
from annotation.simulation.demo import DEMO_CAMPAIGN
from config.console import Console
from jobs import runner
from jobs.models import Job
from retrieval.datasets.demo.runs import (
    DEMO_MODELS,
    QUICK_MODELS,
    build_demo_models,
    register_demo_model,
)
from retrieval.datasets.demo.service import create_demo_dataset
from retrieval.models import Dataset, Run
from retrieval.proxies import PROXIES

DEMO_DATASET = "demo"
DEMO_VIDEOS = 600


@dataclass(frozen=True)
class Deferred:
    """A deferred step: the job kind and arguments that make it, and what it makes."""

    kind: str
    arguments: dict
    product: str

    def ready(self) -> bool:
        """Whether its product exists already."""
        given = self.arguments
        if self.kind == "build_model":
            return Run.objects.filter(dataset__name=given["dataset"], name=given["model"]).exists()
        if self.kind == "demo_campaign":
            return Campaign.objects.filter(name=given["name"]).exists()
        if self.kind == "proxies":  # every matrix of the test split cached
            # Imported here: the proxies pull in spaCy, which only this check needs.
            from retrieval.proxies.service import ProxyOptions, proxy_relevance

            dataset = Dataset.objects.get(name=given["dataset"])
            return all(
                proxy_relevance(dataset, ProxyOptions(proxy, split="test"), cache_only=True)
                is not None
                for proxy in PROXIES
            )
        raise ValueError(f"unknown deferred kind {self.kind!r}")


def deferred_steps(dataset: str = DEMO_DATASET) -> tuple[Deferred, ...]:
    """The deferred steps, in the order they run."""
    return (
        *(
            Deferred("build_model", {"dataset": dataset, "model": m}, f"the {m} model")
            for m in DEMO_MODELS
            if m not in QUICK_MODELS
        ),
        Deferred("demo_campaign", {"dataset": dataset, "name": DEMO_CAMPAIGN}, "the demo campaign"),
        Deferred(
            "proxies",
            {"dataset": dataset, "proxy": "all", "split": "test"},
            "the semantic-proxy matrices",
        ),
    )


def build_quick(console: Console, *, videos: int = DEMO_VIDEOS, workers: int = 2) -> Dataset:
    """The demo dataset and what the server needs at once (see the module's docstring)."""
    dataset = Dataset.objects.filter(name=DEMO_DATASET).first()
    if dataset is None:
        console.say(f"rendering the demo world's {videos} clips ...")
        dataset = create_demo_dataset(
            DEMO_DATASET,
            n_videos=videos,
            progress=console.counter("rendering clips"),
            workers=workers,
        )
    missing = [m for m in QUICK_MODELS if not Run.objects.filter(dataset=dataset, name=m).exists()]
    if missing:
        with console.ticking(f"embedding and searching with {' and '.join(missing)}"):
            build_demo_models(dataset, models=QUICK_MODELS, say=console.say)
    for model in DEMO_MODELS:
        register_demo_model(dataset, model)
    return dataset


def record_deferred(dataset: str = DEMO_DATASET) -> list[tuple[Deferred, Job]]:
    """Record a job for each missing deferred step no unfinished job makes yet; each missing
    step with the job that makes it."""
    pending = []
    for step in deferred_steps(dataset):
        if not step.ready():
            job = runner.unfinished_job(step.kind, **step.arguments)
            pending.append((step, job or runner.record(step.kind, step.arguments, runner.STARTUP)))
    return pending

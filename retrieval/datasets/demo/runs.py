"""The demo world's runs at depth k = 20: random, minilm, mme and jpose, which overlap only
partly (as clip4clip and TeachText in FIRE Table 3), and srct on request (it adds about
three minutes to the first ``make run``, bench/RESULTS.md). Each step is idempotent, so an
interrupted build resumes."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from retrieval.encoders import service as encoding
from retrieval.encoders.registry import ENCODERS
from retrieval.models import Dataset, RetrievalModel, Run
from retrieval.scoring.evaluation import ground_truth_hits, original_hits
from retrieval.scoring.metrics import mean_correct_at_ks
from retrieval.search import service as search

DEMO_MODELS = ("random", "minilm", "mme", "jpose")
QUICK_MODELS = ("random",)
"""Built before ``make run`` serves (a second of work); the rest follow as jobs."""
OPTIONAL_MODELS = ("srct",)
"""Built on request only (``demo --with-srct``)."""
TRAINED = ("mme", "jpose", "srct")
DEMO_DEPTH = 20

Say = Callable[[str], object]


@dataclass(frozen=True)
class RunScores:
    """Correct@K of one run under the original and the exhaustive positives."""

    run: str
    original: dict[str, float]
    exhaustive: dict[str, float]


def build_demo_models(
    dataset: Dataset,
    *,
    models: Sequence[str] = DEMO_MODELS,
    k: int = DEMO_DEPTH,
    seed: int = 0,
    epochs: int | None = None,
    device: str = "auto",
    progress: bool = False,
    say: Say = print,
) -> list[Run]:
    """Register, train, embed and run the built-in ``models`` on the demo dataset (srct's
    feature experts are extracted first when it is among them and they are missing)."""
    videos = dataset.videos.exclude(media="")
    experts = "srct" in models
    root = Path(settings.MEDIA_ROOT)
    wanted = [m for m in models if not Run.objects.filter(dataset=dataset, name=m).exists()]
    needs_features = any(ENCODERS[m].uses_features or ENCODERS[m].uses_experts for m in wanted)
    if needs_features and (
        videos.filter(features="").exists()
        or (experts and any(not (root / encoding.experts_path(v)).is_file() for v in videos))
    ):
        say("Extracting video features" + (" and feature experts ..." if experts else " ..."))
        encoding.extract_dataset_features(
            dataset, device=device, experts=experts, workers=encoding.feature_workers(device)
        )
    runs = []
    for name in models:
        existing = Run.objects.filter(dataset=dataset, name=name).first()
        if existing is not None:
            runs.append(existing)
            continue
        model = register_demo_model(dataset, name, seed)
        if model.encoder in TRAINED and not model.weights:
            say(f"Training {name} ...")
            encoding.train(model, epochs=epochs, seed=seed, device=device, progress=progress)
        say(f"Embedding and searching with {name} ...")
        encoding.embed(model, device=device)
        runs.append(search.predict(model, k=k))
    return runs


def register_demo_model(dataset: Dataset, name: str, seed: int = 0) -> RetrievalModel:
    """The built-in model ``name`` of the demo dataset, registered if it is not yet."""
    model = RetrievalModel.objects.filter(dataset=dataset, name=name).first()
    if model is None:
        config = {"seed": seed} if name == "random" else {}
        model = encoding.register_encoder(dataset, name, name, config)
    return model


def score_runs(runs: list[Run]) -> list[RunScores]:
    """Correct@1/5/10 of each run against original and exhaustive ground-truth positives."""
    return [
        RunScores(
            run=run.name,
            original=mean_correct_at_ks(original_hits(run)),
            exhaustive=mean_correct_at_ks(ground_truth_hits(run)),
        )
        for run in runs
    ]

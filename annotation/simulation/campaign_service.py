"""ORM-facing: a whole campaign replayed offline on a dataset whose true relevance is known (a demo
world), under a policy and beside FIRE's on the same simulated crowd (the pure replay is
:mod:`annotation.simulation.campaign`). ``manage.py simulate_campaign`` and the benches call
:func:`simulate_campaign`.

The active policy's predictor reads what a live campaign's does: each run's ranks, the caption's
length in words, optionally the cached semantic proxies' similarities, and a simulated machine
assessor drawn per seed from the truth at a Cohen's kappa.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from annotation.campaigns.settings import DEFAULT_HALF_WIDTH, DEFAULT_SETTLE
from annotation.prediction.inputs import word_counts
from annotation.simulation.active import ActiveSettings
from annotation.simulation.campaign import POLICIES, simulate_seed, summary
from annotation.simulation.estimates import METRICS
from annotation.simulation.model import World
from annotation.simulation.offline import QUALITY_BENCH_CROWD, SimulatedCrowd
from annotation.simulation.replay_service import replay_world
from config.batches import rows_in
from config.errors import UserError
from retrieval.models import Caption, Dataset
from retrieval.prediction.features import PairFeatures, pair_features
from retrieval.prediction.synthetic import simulated_assessor

ANNOTATORS = 20
"""The quality bench's crowd size."""
PROXIES = ("bow", "pos")


class SimulationError(UserError):
    """The simulation cannot run as asked (bad crowd spec, unknown run or metric...)."""


@dataclass(frozen=True)
class SimulationSpec:
    """What to simulate: ``policy`` on ``runs`` (all the dataset's when empty) pooled at
    ``depth``, judged by ``crowd`` (a :data:`~annotation.simulation.offline.CROWD_SPEC_HELP`
    spec) of ``annotators``, for ``seeds`` seeds; the active policy's settled metrics,
    half-width (points), simulated assessor's kappa (None: none), proxies among
    :data:`PROXIES` and ``shuffle`` (features shuffled: the useless-predictor control)."""

    policy: str
    runs: tuple[str, ...] = ()
    crowd: str = QUALITY_BENCH_CROWD
    annotators: int = ANNOTATORS
    seeds: int = 1
    first_seed: int = 0
    settle: tuple[str, ...] = DEFAULT_SETTLE
    half_width: float = DEFAULT_HALF_WIDTH
    assessor_kappa: float | None = None
    proxies: tuple[str, ...] = ()
    shuffle: bool = False
    depth: int = 10

    def checked(self) -> tuple[SimulatedCrowd, ActiveSettings]:
        """The crowd and the active settings (SimulationError naming what is wrong)."""
        if self.policy not in POLICIES:
            raise SimulationError(f"policy must be one of {', '.join(POLICIES)}")
        if self.seeds < 1 or self.depth < 1 or self.first_seed < 0:
            raise SimulationError("seeds and depth must be positive, the first seed at least 0")
        if self.assessor_kappa is not None and not 0 <= self.assessor_kappa <= 1:
            raise SimulationError("--assessor-kappa must lie between 0 and 1")
        unknown = [name for name in self.proxies if name not in PROXIES]
        if unknown:
            raise SimulationError(f"unknown proxies {', '.join(unknown)} (known: bow, pos)")
        bad = [metric for metric in self.settle if metric not in METRICS]
        if bad or not self.settle:
            raise SimulationError(f"--settle takes some of {', '.join(METRICS)}, not {bad}")
        try:
            crowd = SimulatedCrowd.parse(self.crowd, self.annotators)
            settings = ActiveSettings(
                settle=self.settle, half_width=self.half_width, shuffle=self.shuffle
            )
        except ValueError as exc:
            raise SimulationError(str(exc)) from None
        return crowd, settings


def simulate_campaign(
    dataset: Dataset,
    spec: SimulationSpec,
    *,
    progress: Callable[[str], object] = lambda text: None,
) -> dict:
    """:func:`annotation.simulation.campaign.summary` of ``spec`` on ``dataset``'s truth, with
    the dataset, runs, crowd and settings beside it."""
    crowd, settings = spec.checked()
    world, dropped = replay_world(dataset, list(spec.runs) or None, spec.depth, None)
    features = world_features(dataset, world, spec.proxies) if spec.policy == "active" else None
    results = []
    for seed in range(spec.first_seed, spec.first_seed + spec.seeds):
        progress(f"seed {seed}: {spec.policy} and FIRE's policy")
        seeded = features
        if features is not None and spec.assessor_kappa is not None:
            said = simulated_assessor(
                world.labels, spec.assessor_kappa, np.random.default_rng(seed)
            )
            seeded = PairFeatures(np.c_[features.matrix, said], (*features.names, "assessor"))
        results.append(
            simulate_seed(world, crowd, spec.policy, seed, features=seeded, settings=settings)
        )
    return {
        "dataset": dataset.name,
        "runs": list(world.run_names),
        "dropped_queries": dropped,
        "crowd": {"spec": spec.crowd, "annotators": spec.annotators},
        "settle": list(spec.settle),
        "half_width": spec.half_width,
        "assessor_kappa": spec.assessor_kappa,
        "shuffled_features": spec.shuffle,
        **summary(world, spec.policy, results),
    }


def world_features(dataset: Dataset, world: World, proxies: Sequence[str] = ()) -> PairFeatures:
    """The world's pooled pairs as predictor rows: ranks, caption words and ``proxies``."""
    pool = world.pool
    captions = np.unique(pool.caption_ids)
    texts = dict(rows_in(Caption.objects.values_list("pk", "text"), "pk", captions.tolist()))
    words = word_counts([texts[int(c)] for c in captions])
    extra = {f"proxy:{name}": _proxy_column(dataset, world, name) for name in proxies}
    return pair_features(
        pool.caption_ids,
        pool.ranks,
        depth=world.depth,
        caption_words=words[np.searchsorted(captions, pool.caption_ids)],
        extra=extra,
        run_names=world.run_names,
    )


def _proxy_column(dataset: Dataset, world: World, name: str) -> np.ndarray:
    """The proxy's similarity of each pooled pair's caption to its video (Wray et al. 2021)."""
    from retrieval.proxies.service import ProxyOptions, proxy_relevance

    relevance = proxy_relevance(dataset, ProxyOptions(proxy=name))
    return relevance.pair_scores(world.pool.caption_ids, world.pool.video_ids)

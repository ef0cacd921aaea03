"""Pure: a synthetic pool with a known truth, for the predictor's tests and benchmark. Each query
has candidates of latent quality; relevance is logistic in that quality and in the caption's
generality (short captions have more positives: FIRE, Rodriguez et al. 2022, §4.1); each run
scores the candidates with its own noise and the pool is the union of the runs' top ``depth``
(FIRE §2.2.1); a proxy and a machine assessor see the quality through more noise, the assessor
on half the pairs."""

from dataclasses import dataclass

import numpy as np

from retrieval.prediction.features import PairFeatures, pair_features


@dataclass(frozen=True)
class SyntheticPool:
    """Pooled pairs grouped by query: what :func:`pair_features` reads, each pair's true chance
    of relevance and a relevance drawn from it."""

    groups: np.ndarray
    ranks: np.ndarray
    scores: np.ndarray
    caption_words: np.ndarray
    proxy: np.ndarray
    assessor: np.ndarray
    chance: np.ndarray
    relevant: np.ndarray
    depth: int

    def __len__(self) -> int:
        return int(self.groups.size)

    def features(self) -> PairFeatures:
        return pair_features(
            self.groups,
            self.ranks,
            scores=self.scores,
            depth=self.depth,
            caption_words=self.caption_words,
            extra={"proxy": self.proxy, "assessor": self.assessor},
        )

    def targets(self, share: float, seed: int, *, unsure: float = 0.05) -> np.ndarray:
        """Resolved targets for a seeded ``share`` of the queries (the rest NaN): 0.97 or 0.03
        by the drawn relevance, 0.5 on a seeded ``unsure`` share of them."""
        rng = np.random.default_rng(seed)
        queries, of = np.unique(self.groups, return_inverse=True)
        sampled = rng.random(queries.size) < share
        targets = np.where(self.relevant, 0.97, 0.03)
        targets[rng.random(targets.size) < unsure] = 0.5
        return np.where(sampled[of.ravel()], targets, np.nan)


def synthetic_pool(
    queries: int, *, runs: int = 5, depth: int = 10, candidates: int = 30, seed: int = 0
) -> SyntheticPool:
    """A pool of ``queries`` queries (about ``1.5 x depth`` pairs each with 5 runs)."""
    if queries < 1 or runs < 1 or not 1 <= depth <= candidates:
        raise ValueError("need queries and runs, and depth between 1 and candidates")
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=(queries, candidates))
    words = rng.integers(3, 21, size=queries)
    generality = (10.0 - words) / 4.0
    chance = 1.0 / (1.0 + np.exp(-(-2.5 + 1.5 * quality + 0.6 * generality[:, None])))
    noise = np.linspace(0.6, 1.6, runs)
    score = quality[:, :, None] + rng.normal(size=(queries, candidates, runs)) * noise
    rank = np.argsort(np.argsort(-score, axis=1), axis=1) + 1
    pooled = (rank <= depth).any(axis=2)
    q, c = np.nonzero(pooled)
    ranks = np.where(rank[q, c] <= depth, rank[q, c], 0)
    scores = np.where(ranks > 0, score[q, c], np.nan)
    chance_pair = chance[q, c]
    proxy = quality[q, c] + rng.normal(size=q.size) * 1.2
    proxy[rng.random(q.size) < 0.2] = np.nan
    assessor = chance_pair + rng.normal(size=q.size) * 0.3
    assessor[rng.random(q.size) < 0.5] = np.nan
    return SyntheticPool(
        groups=q.astype(np.int64),
        ranks=ranks.astype(np.int16),
        scores=scores,
        caption_words=words[q].astype(np.float64),
        proxy=proxy,
        assessor=assessor,
        chance=chance_pair,
        relevant=rng.random(q.size) < chance_pair,
        depth=depth,
    )


def flip_rate_for_kappa(base_rate: float, kappa: float) -> float:
    """The symmetric error rate e at which labels flipped from a truth with ``base_rate`` p
    positives agree with it at Cohen's ``kappa`` in expectation: agreement is 1 - e and chance
    agreement (from both margins) p^2 + (1 - p)^2 - e (1 - 2p)^2, so kappa falls from 1 at
    e = 0 to 0 at e = 1/2, and solving for e gives it in closed form."""
    if not 0 < base_rate < 1 or not 0 <= kappa <= 1:
        raise ValueError("base_rate must lie in (0, 1) and kappa in [0, 1]")
    doubt = 1 - kappa
    return 2 * base_rate * (1 - base_rate) * doubt / (1 - (1 - 2 * base_rate) ** 2 * doubt)


def simulated_assessor(truth: np.ndarray, kappa: float, rng: np.random.Generator) -> np.ndarray:
    """A machine assessor's labels (0/1 float) of pairs whose true relevance is ``truth``: the
    truth flipped at the symmetric rate that gives Cohen's ``kappa`` against it in expectation."""
    truth = np.asarray(truth, dtype=bool)
    rate = flip_rate_for_kappa(float(truth.mean()), kappa)
    return np.where(rng.random(truth.size) < rate, ~truth, truth).astype(np.float64)

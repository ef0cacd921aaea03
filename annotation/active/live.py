"""A campaign's pool read for its active stages (:mod:`.stages`): the pairs grouped by query
as a :class:`~annotation.simulation.model.World`, every pair at its rank in each pooled run's
whole list, and what is known of each pair's relevance (its label posterior, else the relevance
predictor's probability, else the labelled pairs' mean)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from annotation.campaigns.pooling import Pool
from annotation.campaigns.provenance import provenance
from annotation.judging import pair_state
from annotation.models import Campaign, CampaignRun, Judgement
from annotation.ordering.settled import status_rows
from annotation.policy import label_models
from annotation.prediction.stored import stored_predictions
from annotation.simulation.model import World
from config.batches import rows_in
from config.errors import UserError
from retrieval.ids import positions_of
from retrieval.models import Caption
from retrieval.scoring.metrics import align_rows
from retrieval.search.runs_service import load_run


class ActiveError(UserError):
    """A stage cannot be drawn now (the last one is still being judged, every score is
    settled, no labels are left to narrow an interval...)."""


@dataclass(frozen=True)
class LiveCampaign:
    """A campaign's pool as a :class:`~annotation.simulation.model.World` (pairs grouped by
    caption, its truth unknown and left all irrelevant), and what is known of each pair:
    ``known`` its probability of relevance, ``posterior`` that of its labels (certain where
    adjudicated, auto-labelled or resolved without a model), ``resolved`` how the label set
    reads it, ``labelled`` whether it has a label, ``unfinished`` whether it still needs one."""

    world: World
    pair_ids: np.ndarray
    known: np.ndarray
    posterior: np.ndarray
    resolved: np.ndarray
    labelled: np.ndarray
    unfinished: np.ndarray
    labels_spent: int
    fixed: np.ndarray
    label_counts: np.ndarray

    @property
    def queries(self) -> np.ndarray:
        return self.world.layout.caption_ids


def _full_ranks(
    campaign: Campaign, queries: np.ndarray, captions: np.ndarray, videos: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each pooled pair's rank in each pooled run's whole ranked list (0: not listed), and per
    query x run x rank whether the caption's own video is there: what a rescoring reads, so
    that AP counts a pooled pair a run ranks below the pooling depth (cutting the lists at
    the depth put every run's live AP estimate 3 to 6 points below its rescored value on the
    demo world, ``bench/crowd_bench.py --only E``)."""
    pooled = list(
        CampaignRun.objects.filter(campaign=campaign).order_by("position").select_related("run")
    )
    runs = (load_run(entry.run) for entry in pooled)  # one at a time
    lists = [align_rows(run.query_ids, run.item_ids, queries) for run in runs]
    depth = max([int(campaign.depth)] + [items.shape[1] for items in lists])
    own_of = dict(rows_in(Caption.objects.values_list("pk", "video_id"), "pk", queries.tolist()))
    own = np.array([own_of.get(int(q), -1) for q in queries], dtype=np.int64)
    query_of = np.searchsorted(queries, captions)
    ranks = np.zeros((captions.size, len(lists)), dtype=np.int64)
    known_positive = np.zeros((queries.size, len(lists), depth), dtype=bool)
    for r, items in enumerate(lists):
        known_positive[:, r, : items.shape[1]] = (items == own[:, None]) & (items >= 0)
        row, rank = np.nonzero(items >= 0)
        keys = row * (1 << 32) + items[row, rank]
        at = positions_of(keys, query_of * (1 << 32) + videos)
        ranks[:, r] = np.where(at >= 0, rank[at] + 1, 0)
    return ranks, known_positive


def live_campaign(campaign: Campaign) -> LiveCampaign:
    """The campaign's pool and each pair's probabilities, in a constant number of queries."""
    names = campaign.run_names()
    source = provenance(campaign)
    if not names or source.ranks.shape[1] != len(names):
        raise ActiveError(f"campaign {campaign.name!r} has no pooled runs to estimate")
    rows = status_rows(campaign)
    rows = rows[np.lexsort((rows["id"], rows["pool_row"], rows["caption_id"]))]
    if not len(rows):
        raise ActiveError(f"campaign {campaign.name!r} has no pooled pairs")
    queries = np.unique(rows["caption_id"])
    ranks, known_positive = _full_ranks(campaign, queries, rows["caption_id"], rows["video_id"])
    pool = Pool(rows["caption_id"], rows["video_id"], ranks)
    world = World(
        pool,
        np.zeros(len(pool), bool),
        tuple(names),
        known_positive.shape[2],
        known_positive,
        np.ones(queries.size, np.int64),
    )
    fixed = rows["adjudicated_any"] | rows["auto"]
    relevant = rows["status_relevant"].astype(np.float64)
    labelled = (rows["label_count"] > 0) | fixed
    posterior = relevant.copy()
    if campaign.settings.label_policy.adaptive:  # FIRE's policy resolves without a label model
        seen = label_models.snapshot(
            campaign,
            zip(rows["id"].tolist(), rows["pool_row"].tolist(), strict=True),
            Judgement.objects.filter(pair__campaign=campaign),
        )
        posterior = np.where(labelled & ~fixed, seen.posterior, relevant)
    prior = float(posterior[labelled].mean()) if labelled.any() else 0.5
    predicted = np.full(len(rows), prior)
    stored = stored_predictions(campaign)
    if stored is not None:
        where = positions_of(stored[0], rows["id"])
        found = where >= 0
        predicted[found] = np.clip(stored[1][where[found]].astype(np.float64), 0.0, 1.0)
    known = np.where(labelled, posterior, predicted)
    unfinished = pair_state.unfinished(rows["needed"], labelled)
    return LiveCampaign(
        world,
        rows["id"],
        known,
        np.where(labelled, posterior, known),
        relevant,
        labelled,
        unfinished,
        int(rows["label_count"].sum()),
        fixed,
        rows["label_count"],
    )

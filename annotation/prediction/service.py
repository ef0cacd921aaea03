"""Fit, store and read a campaign's relevance predictor.

:func:`fit_predictor` reads what is known of every pooled pair in bulk (a constant number of
queries, whatever the pool's size), pairs in pool order: the runs' ranks (the provenance) and
scores, the caption's length in words, the semantic proxies' S(video, caption) where the
dataset's proxy matrix is already cached (Wray et al., CVPR 2021, §4.4), and each machine
assessor's score; its targets are the pairs' resolved probabilities of relevance
(:func:`annotation.prediction.inputs.label_targets`). It cross-fits over queries
(:func:`retrieval.prediction.model.cross_fit`: no query's prediction depends on its own
labels, what keeps active inference unbiased, Zrnic & Candès, ICML 2024, §3) and replaces the
campaign's one stored row. It runs in the background only, as the ``fit-predictor`` job
(queued after each adaptive-policy refit, :func:`request_fit`) or ``manage.py fit_predictor``;
nothing on the judging path imports it.
"""

from __future__ import annotations

import dataclasses
import io
import time
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.db import transaction
from django.utils import timezone

from annotation.assessors.service import machine_judgements
from annotation.campaign_read.labels import load_campaign_labels
from annotation.campaigns.provenance import provenance
from annotation.campaigns.service import campaign_split
from annotation.models import Assessor, Campaign, CampaignRun, Pair, RelevancePredictor
from annotation.ordering.settled import status_rows
from annotation.policy import label_models
from annotation.prediction import inputs
from jobs import runner
from retrieval.ids import positions_of
from retrieval.models import Caption
from retrieval.prediction.features import PairFeatures, pair_features, run_scores
from retrieval.prediction.model import cross_fit
from retrieval.proxies import PROXIES
from retrieval.proxies.service import (
    ProxyError,
    ProxyOptions,
    cache_files,
    proxy_relevance,
    split_captions,
)
from retrieval.search.runs_service import load_run

JOB_KIND = "fit-predictor"
"""The job kind that fits a campaign's predictor (declared in :mod:`annotation.prediction.jobs`)."""
DUTY = 0.05
"""Fits hold at most a twentieth of a core: at a tenth, a 3 s fit every 30 s beside 250
annotators at 600,000 pairs put it behind most judging requests over 50 ms (``bench/load.py``)."""


@dataclass(frozen=True)
class PredictorInputs:
    """Every pooled pair in pool order: its id, caption and video, its features and its target
    (NaN: unlabelled)."""

    pair_ids: np.ndarray
    caption_ids: np.ndarray
    video_ids: np.ndarray
    features: PairFeatures
    targets: np.ndarray


@dataclass(frozen=True)
class PredictorFit:
    """What a fit stored: pairs predicted, pairs with a target, the feature columns, what
    predicted them, the out-of-fold quality (None without labels) and how long it took."""

    campaign: str
    pairs: int
    labelled: int
    features: tuple[str, ...]
    method: str
    quality: dict | None
    seconds: float
    fitted_at: datetime

    def summary(self) -> dict:
        """JSON-ready: the job's result and the command's output."""
        return {
            **dataclasses.asdict(self),
            "features": list(self.features),
            "seconds": round(self.seconds, 3),
            "fitted_at": self.fitted_at.isoformat(),
        }


def predictor_inputs(campaign: Campaign) -> PredictorInputs:
    """The features and targets of the campaign's pooled pairs, read in bulk (gold pairs are
    not pooled pairs: they stay out)."""
    pairs = status_rows(campaign)
    # Sorted here: the server's sort of 600,000 rows spilled to disk (0.1 s of its CPU).
    pairs = pairs[np.lexsort((pairs["id"], pairs["pool_row"]))]
    captions, videos = pairs["caption_id"], pairs["video_id"]
    ranks, scores, names = _run_signals(campaign, pairs)
    extra = _proxy_columns(campaign, captions, videos)
    extra.update(_assessor_columns(campaign, pairs["id"]))
    features = pair_features(
        captions,
        ranks,
        scores=scores,
        caption_words=_caption_words(campaign, captions),
        extra=extra,
        run_names=names,
    )
    labels = load_campaign_labels(campaign)
    targets = inputs.label_targets(
        pairs["id"] - labels.first_pair_id,
        labels.pair_index,
        labels.labels,
        np.where(pairs["adjudicated_any"], pairs["adjudicated_relevant"], inputs.NO_VERDICT),
        labels.n_pairs,
        labels.posterior,
    )
    return PredictorInputs(pairs["id"], captions, videos, features, targets)


def _run_signals(
    campaign: Campaign, pairs: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None, list[str] | None]:
    """(ranks, scores, run names): each pair's provenance row (zeros for a row it lacks) and
    each pooled run's score of it from the run's ranked lists (None without runs)."""
    ranked = provenance(campaign).ranks
    rows = pairs["pool_row"]
    inside = rows < ranked.shape[0]
    ranks = np.zeros((len(pairs), ranked.shape[1]), dtype=np.int64)
    ranks[inside] = ranked[rows[inside]]
    pooled = list(
        CampaignRun.objects.filter(campaign=campaign).order_by("position").select_related("run")
    )
    if len(pooled) != ranks.shape[1]:  # a provenance without its runs' columns: ranks only
        return ranks, None, None
    names = [entry.run.name for entry in pooled]
    scores = np.full(ranks.shape, np.nan)
    stored = [r for r, entry in enumerate(pooled) if len(entry.run.arrays or b"")]
    if stored:
        lists = [load_run(pooled[r].run) for r in stored]
        scores[:, stored] = run_scores(pairs["caption_id"], pairs["video_id"], lists)
    return ranks, scores, names


def _caption_words(campaign: Campaign, captions: np.ndarray) -> np.ndarray:
    """Each pair's caption length in words (one query over the pooled captions)."""
    rows = list(
        Caption.objects.filter(pk__in=Pair.objects.filter(campaign=campaign).values("caption_id"))
        .order_by("pk")
        .values_list("pk", "text")
    )
    ids = np.array([pk for pk, _ in rows], dtype=np.int64)
    words = np.append(inputs.word_counts([text for _, text in rows]), np.nan)
    at = positions_of(ids, captions)
    return words[np.where(at >= 0, at, ids.size)]


def _proxy_columns(
    campaign: Campaign, captions: np.ndarray, videos: np.ndarray
) -> dict[str, np.ndarray]:
    """``proxy:<name>`` for each default proxy: S(video, caption) where the dataset's matrix
    is cached on disk, NaN otherwise (never computed here)."""
    columns = {f"proxy:{name}": np.full(captions.size, np.nan) for name in PROXIES}
    if not cache_files():  # nothing cached anywhere: no need to read and hash the split
        return columns
    split = campaign_split(campaign)
    try:
        read = split_captions(campaign.dataset, split)
    except ProxyError:
        return columns
    for name in PROXIES:
        options = ProxyOptions(name, split=split)
        relevance = proxy_relevance(campaign.dataset, options, cache_only=True, captions=read)
        if relevance is not None:
            columns[f"proxy:{name}"] = relevance.pair_scores(captions, videos)
    return columns


def _assessor_columns(campaign: Campaign, pair_ids: np.ndarray) -> dict[str, np.ndarray]:
    """``assessor:<name>`` for each machine assessor of the campaign (by name): its score of
    each pair, else its label as 1/0, NaN where it said nothing."""
    assessors = list(
        Assessor.objects.filter(campaign=campaign).order_by("name").values_list("pk", "name")
    )
    if not assessors:
        return {}
    rows = machine_judgements(campaign)
    rows = rows[rows["pooled_id"] >= 0]
    ids = np.array([pk for pk, _ in assessors], dtype=np.int64)
    return inputs.assessor_columns(
        [name for _, name in assessors],
        positions_of(ids, rows["assessor_id"]),
        positions_of(pair_ids, rows["pooled_id"]),
        rows["given"],
        rows["said"],
        pair_ids.size,
    )


def fit_predictor(
    campaign: Campaign, *, seed: int = 0, now: datetime | None = None
) -> PredictorFit:
    """Cross-fit the campaign's predictor on its resolved labels and replace its stored row
    (one transaction). Slow at FIRE's scale (tens of seconds): a job's work, never a request's."""
    started = time.monotonic()
    read = predictor_inputs(campaign)
    predicted = cross_fit(read.features, read.caption_ids, read.targets, seed=seed)
    quality = dataclasses.asdict(predicted.quality) if predicted.quality is not None else None
    labelled = int(np.count_nonzero(~np.isnan(read.targets)))
    buffer = io.BytesIO()
    # Compressed in the job: 8.4 MB took the server 0.3 s to write at 600,000 pairs, 1 MB 0.01 s.
    np.savez_compressed(
        buffer,
        pair_ids=read.pair_ids.astype(np.int64),
        probability=predicted.probability.astype(np.float32),
        fold=predicted.fold.astype(np.int16),
    )
    now = now or timezone.now()
    seconds = time.monotonic() - started
    with transaction.atomic():
        RelevancePredictor.objects.update_or_create(
            campaign=campaign,
            defaults={
                "arrays": buffer.getvalue(),
                "feature_names": list(read.features.names),
                "quality": quality,
                "labelled": labelled,
                "method": predicted.method[:255],
                "fitted_at": now,
                "seconds": seconds,
            },
        )
    return PredictorFit(
        campaign=campaign.name,
        pairs=len(read.pair_ids),
        labelled=labelled,
        features=read.features.names,
        method=predicted.method,
        quality=quality,
        seconds=seconds,
        fitted_at=now,
    )


def request_fit(campaign: Campaign, now: datetime | None = None) -> bool:
    """Queue a ``fit-predictor`` job for the campaign once the current transaction commits,
    joining one already queued (one waiting fit per campaign; a running one read older
    labels, so it does not count); whether one was asked for. Paced by its own cost as the
    refit is (:func:`annotation.policy.label_models.pause`): a fit that took s seconds lets
    the next start s / :data:`DUTY` later (one calibrated fit at FIRE's scale is about a
    minute of a core: ``bench/predictor_bench.py``)."""
    last = (
        RelevancePredictor.objects.filter(campaign=campaign)
        .values_list("fitted_at", "seconds")
        .first()
    )
    if last is not None and (now or timezone.now()) < last[0] + label_models.pause(last[1], DUTY):
        return False
    name = campaign.name
    transaction.on_commit(lambda: runner.submit(JOB_KIND, {"campaign": name}, join_running=False))
    return True

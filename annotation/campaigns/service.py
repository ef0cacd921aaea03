"""Create a judging campaign: gather pooling's inputs from the database (runs, each query's
own video, pairs judged before or by the label set it completes) and write the pairs with
one bulk insert (:func:`annotation.judging.statements.insert`), far faster than the ORM.
"""

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from django.db import IntegrityError, transaction

from annotation.campaigns import pooling
from annotation.campaigns.spec import COLUMN_VALUES, NAME_LENGTH, CampaignSpec, spec_errors
from annotation.judging import pair_state, statements
from annotation.judging.statements import queryset_array
from annotation.models import Campaign, CampaignRun, Pair, PolicyFit
from annotation.ordering import priorities
from annotation.policy import rules as policy
from config.batches import id_filters
from config.errors import UserError
from retrieval.datasets.names import derived_name
from retrieval.datasets.roles_service import fill_role_spans
from retrieval.ids import contains
from retrieval.label_sets.service import load_judged
from retrieval.models import Caption, Dataset, LabelSet, Run
from retrieval.search.runs import RankedLists
from retrieval.search.runs_service import load_run


class CampaignError(UserError):
    """The campaign cannot be created as asked; nothing was written."""


_ID_PAIR = np.dtype([("caption_id", np.int64), ("video_id", np.int64)])
"""Rows read straight into numpy (:func:`queryset_array`): 550,000 pairs as Python tuples
first held the judge-missing page at 1.6 s and +195 MB at FIRE's scale."""


def judged_pairs(
    dataset: Dataset, captions: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(caption ids, video ids) of pairs already judged in the dataset's campaigns (on the
    ``captions`` given only, when given)."""
    judged = Pair.objects.filter(campaign__dataset=dataset).exclude(label_count=0, adjudicated="")
    judged = judged.order_by().values_list("caption_id", "video_id")
    if captions is None:
        rows = queryset_array(judged, _ID_PAIR)
    else:  # filters whose parameters do not grow with the captions
        parts = id_filters("caption_id", np.unique(captions).tolist())
        rows = np.concatenate(
            [np.empty(0, _ID_PAIR)]
            + [queryset_array(judged.filter(**where), _ID_PAIR) for where in parts]
        )
    return rows["caption_id"].copy(), rows["video_id"].copy()


def extended_label_set(dataset: Dataset, spec: CampaignSpec) -> LabelSet | None:
    """The label set ``spec`` completes (None when it completes none); CampaignError if the
    dataset has no set of that name."""
    if not spec.extends:
        return None
    found = LabelSet.objects.filter(dataset=dataset, name=spec.extends).first()
    if found is None:
        raise CampaignError(
            f"dataset {dataset.name!r} has no label set named {spec.extends[:60]!r} to complete"
        )
    return found


def origin_videos(query_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(caption ids, their own video ids) for the pooled queries."""
    query_ids = np.unique(np.asarray(query_ids, dtype=np.int64))
    if query_ids.size == 0:
        return query_ids, query_ids.copy()
    # The id range, then the wanted ones in numpy: an IN list of 27,763 ids took 0.66 s of
    # the judge-missing page at FIRE's scale (PostgreSQL parsing the parameters).
    rows = queryset_array(
        Caption.objects.filter(pk__gte=int(query_ids[0]), pk__lte=int(query_ids[-1]))
        .order_by()
        .values_list("id", "video_id"),
        np.dtype([("id", np.int64), ("video_id", np.int64)]),
    )
    rows = rows[contains(query_ids, rows["id"])]
    return rows["id"].copy(), rows["video_id"].copy()


def check_spec(dataset: Dataset, spec: CampaignSpec, runs: Sequence[Run]) -> None:
    """Raise CampaignError unless the spec is in bounds and the runs and name fit the dataset."""
    if not runs:
        raise CampaignError("a campaign needs at least one run")
    if len({run.pk for run in runs}) != len(runs):
        raise CampaignError("a run is listed twice")
    foreign = [run.name for run in runs if run.dataset_id != dataset.pk]
    if foreign:
        raise CampaignError(f"runs {foreign} belong to another dataset than {dataset.name!r}")
    errors = spec_errors(spec)
    if errors:
        raise CampaignError("; ".join(f"{field}: {message}" for field, message in errors.items()))
    shallow = [run.name for run in runs if run.depth < spec.depth]
    if shallow:
        raise CampaignError(f"runs {shallow} are shallower than depth {spec.depth}")
    if Campaign._base_manager.filter(name=spec.name).exists():
        raise CampaignError(f"a campaign named {spec.name!r} already exists")
    extended_label_set(dataset, spec)


@dataclass(frozen=True)
class MissingPairs:
    """What a campaign completing ``label_set`` for one run's top ``depth`` would pool, and
    the lacking pairs another campaign already judged (never pooled again)."""

    run: str
    label_set: str
    depth: int
    pairs: int
    queries: int
    judged_elsewhere: int
    suggested_name: str


def missing_pairs(dataset: Dataset, run: Run, base: LabelSet, depth: int) -> MissingPairs:
    """Count the pairs of ``run``'s top ``depth`` that ``base`` does not judge (reads only)."""
    lists = [load_run(run).truncated(depth)]
    origin = origin_videos(np.unique(lists[0].query_ids))
    judged = load_judged(base)
    lacking = pooling.pool(
        lists, depth, origin=origin, exclude=(judged.caption_ids, judged.video_ids)
    )
    # Those judged in no other campaign either (half the cost of pooling twice), read by the
    # lacking captions when they are few (all 550,000 judged pairs took 0.6 s at FIRE's scale).
    few = np.unique(lacking.caption_ids).size <= FEW_CAPTIONS
    in_captions, in_videos = judged_pairs(dataset, lacking.caption_ids if few else None)
    span = int(max(lacking.video_ids.max(initial=0), in_videos.max(initial=0))) + 1  # packed
    elsewhere = np.isin(
        lacking.caption_ids * span + lacking.video_ids, in_captions * span + in_videos
    )
    pooled = lacking.caption_ids[~elsewhere]
    return MissingPairs(
        run=run.name,
        label_set=base.name,
        depth=depth,
        pairs=len(pooled),
        queries=len(np.unique(pooled)),
        judged_elsewhere=int(elsewhere.sum()),
        suggested_name=free_campaign_name(f"{run.name} missing from {base.name}"),
    )


FEW_CAPTIONS = 2_000
"""Up to this many captions a query names them (an ``IN`` list); more read every pair."""


def free_campaign_name(wanted: str) -> str:
    """``wanted`` made a valid name, or with " 2", " 3", ... if it is taken."""
    stem = derived_name(" ".join(wanted.split()))
    taken = set(
        Campaign._base_manager.filter(name__startswith=stem[: NAME_LENGTH - 4]).values_list(
            "name", flat=True
        )
    )
    if stem not in taken:
        return stem
    numbered = (f"{stem[: NAME_LENGTH - 1 - len(str(n))]} {n}" for n in itertools.count(2))
    return next(name for name in numbered if name not in taken)


@dataclass(frozen=True)
class PooledRuns:
    """A pool and its provenance (the ranks of each query's own video, deep to the deepest
    Correct@K when that lies below the pooling depth)."""

    pool: pooling.Pool
    provenance: priorities.Provenance


def build_pool(dataset: Dataset, runs: Sequence[Run], spec: CampaignSpec) -> PooledRuns:
    """Pool the runs' top-``depth`` per query, leaving out own videos and judged pairs."""
    settle = max(spec.depth, *spec.settings.judging.ks)
    full: list[RankedLists] = [load_run(run).truncated(settle) for run in runs]
    lists = [lst.truncated(spec.depth) for lst in full]
    all_queries = np.unique(np.concatenate([lst.query_ids for lst in lists]))
    queries = None
    if spec.query_sample is not None:
        queries = pooling.sample_queries(all_queries, spec.query_sample, spec.seed)
    origin = origin_videos(all_queries)
    # Never pooled again: pairs judged in the dataset's campaigns and, for a campaign that
    # completes a label set, every pair that set already judges.
    captions, videos = judged_pairs(dataset)
    base = extended_label_set(dataset, spec)
    if base is not None:
        judged = load_judged(base)
        captions = np.concatenate([captions, judged.caption_ids])
        videos = np.concatenate([videos, judged.video_ids])
    pool = pooling.pool(
        lists, spec.depth, origin=origin, exclude=(captions, videos), queries=queries
    )
    pooled = np.unique(pool.caption_ids)
    own = dict(zip(origin[0].tolist(), origin[1].tolist(), strict=True))
    own_videos = np.array([own.get(int(q), -1) for q in pooled], dtype=np.int64)
    deep_known = priorities.known_positive_ranks(full, pooled, own_videos)
    known = np.where(deep_known <= spec.depth, deep_known, 0).astype(np.int16)
    # Down to the deepest Correct@K, when that lies below the pooling depth.
    deep = () if settle == spec.depth else (pooling.ranks_within(pool, full, settle), deep_known)
    return PooledRuns(pool, priorities.Provenance(pool.ranks, pooled, known, *deep))


def load_provenance(campaign: Campaign) -> np.ndarray:
    """Ranks int16 [pairs x runs] by ``Pair.pool_row`` (1-based; 0: the run missed the pair)."""
    return priorities.Provenance.from_bytes(campaign.provenance).ranks


def checked_pool(dataset: Dataset, runs: Sequence[Run], spec: CampaignSpec) -> PooledRuns:
    """Check the request and pool it; an empty pool is an error (nothing left to judge)."""
    check_spec(dataset, spec, runs)
    pooled = build_pool(dataset, runs, spec)
    if len(pooled.pool) == 0:
        raise CampaignError("pooling found no pair left to judge")
    return pooled


@transaction.atomic
def create_campaign(
    dataset: Dataset,
    runs: Sequence[Run],
    spec: CampaignSpec,
    created_by=None,
    pool: PooledRuns | None = None,
) -> Campaign:
    """Pool ``runs`` into a new campaign's pairs, all or nothing (``pool``: from
    :func:`checked_pool` when the caller already did)."""
    pooled = checked_pool(dataset, runs, spec) if pool is None else pool
    pool = pooled.pool
    base = extended_label_set(dataset, spec)
    settings = replace(spec.settings, extends=None if base is None else base.pk)
    columns = {name: getattr(spec, name) for name in COLUMN_VALUES}
    if not spec.guidelines:  # the column's default: FIRE's guidelines
        del columns["guidelines"]
    campaign = Campaign(
        dataset=dataset, created_by=created_by, provenance=pooled.provenance.to_bytes(), **columns
    )
    campaign.set_settings(settings, save=False)
    try:
        with transaction.atomic():
            campaign.save(force_insert=True)
    except IntegrityError:  # the name was free when checked; another pool job took it since
        raise CampaignError(f"a campaign named {spec.name!r} already exists") from None
    if settings.label_policy.adaptive:  # the adaptive policy's fit record, none fitted yet
        PolicyFit.objects.create(campaign=campaign)
    CampaignRun.objects.bulk_create(
        [CampaignRun(campaign=campaign, run=run, position=i) for i, run in enumerate(runs)]
    )
    double = policy.second_label_sample(len(pool), spec.second_label_rate, spec.seed)
    position, parked = priorities.initial_queue(
        settings.judging, pool, pooled.provenance, spec.seed
    )
    rows = list(range(len(pool)))  # pool_row: the pair's row of the provenance array
    statements.insert(
        Pair,
        {
            "campaign_id": campaign.pk,
            "caption_id": pool.caption_ids.tolist(),
            "video_id": pool.video_ids.tolist(),
            "position": np.asarray(position).tolist(),
            "pool_row": rows,
            "double": double.tolist(),
            **pair_state.initial(pair_state.first_needed(double, parked)),
        },
    )
    if settings.show_roles:
        fill_role_spans(np.unique(pool.caption_ids).tolist())
    return campaign


def campaign_split(campaign: Campaign) -> str:
    """The split of the campaign's videos, whose proxy matrices score its pairs."""
    # By id: the pairs' own order joins the campaign and sorts every pair (0.29 s at 600,000).
    split = (
        Pair.objects.filter(campaign=campaign)
        .order_by("pk")
        .values_list("video__split", flat=True)
        .first()
    )
    return split or "test"

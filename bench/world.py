"""The one world builder of the benchmarks: a synthetic dataset, runs, a campaign and its pool
of pairs, annotators, gold pairs and labels, at any size, loaded by the backend's one bulk
load (``COPY`` on PostgreSQL) by field name. Django must be set up first.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

import numpy as np
from harness import log, once

if TYPE_CHECKING:  # the models load only once Django is set up
    from django.db.models import Model, QuerySet

    from annotation.campaigns.pooling import Pool
    from annotation.models import Campaign
    from retrieval.models import Dataset, Run

MAX_LABELS = 6
"""Labels of a pair at most (FIRE's MSVD collection: a few pairs with up to six)."""
SESSION_LABELS = 300
"""Labels an annotator gives in one sitting before a break of hours."""
FIRST_DAY = np.datetime64("2024-03-04T08:00:00", "ms")


def load(model: type[Model], columns: Mapping[str, object]) -> None:
    """Insert rows into ``model``'s table in one bulk load, given by field name (or
    attname): a list or array for a field that varies, one value for one the same in every
    row. Every other field takes its default, as ``bulk_create`` gives it."""
    from django.db import connection
    from django.utils import timezone

    from config.backends import backend

    meta = model._meta
    given = {}
    for name, value in columns.items():
        field = meta.get_field(name)
        if isinstance(value, np.ndarray):
            value = value.tolist()
        elif not isinstance(value, list):  # one value: prepared as the ORM would
            value = field.get_db_prep_save(value, connection)
        given[field.column] = value
    for field in meta.concrete_fields:
        if field.column in given or field.primary_key:
            continue
        stamped = getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False)
        value = timezone.now() if stamped else field.get_default()  # as bulk_create's
        given[field.column] = field.get_db_prep_save(value, connection)
    lengths = {len(v) for v in given.values() if isinstance(v, list)}
    if len(lengths) != 1:
        raise ValueError(f"columns given as lists must have one length, not {sorted(lengths)}")
    (n,) = lengths
    values = [v if isinstance(v, list) else [v] * n for v in given.values()]
    backend().bulk_load(meta.db_table, list(given), zip(*values, strict=True))


def pks(queryset: QuerySet) -> np.ndarray:
    """The primary keys of ``queryset`` in their order (the order rows were loaded in)."""
    return np.array(queryset.order_by("pk").values_list("pk", flat=True))


# -- the dataset and its runs --------------------------------------------------------------


@dataclass
class Media:
    """A dataset's videos and query captions, primary keys in loading order."""

    dataset: Dataset
    video_pks: np.ndarray
    caption_pks: np.ndarray


def media(
    dataset: Dataset,
    n_videos: int,
    own: np.ndarray,
    texts: Sequence[str] | str = "x",
    video_key: str = "v{}",
    caption_key: str = "c{}",
    videos: Mapping[str, object] | None = None,
) -> Media:
    """``n_videos`` videos and one test-split query caption per entry of ``own`` (the index
    of its video) in ``dataset``. ``video_key``/``caption_key`` format each row's index;
    ``videos`` gives more of the videos' fields (``duration``, ``url``...)."""
    from retrieval.models import Caption, Video

    load(
        Video,
        {
            "dataset_id": dataset.pk,
            "key": [video_key.format(i) for i in range(n_videos)],
            "split": "test",
            **(videos or {}),
        },
    )
    video_pks = pks(Video.objects.filter(dataset=dataset))[-n_videos:]
    load(
        Caption,
        {
            "dataset_id": dataset.pk,
            "key": [caption_key.format(i) for i in range(len(own))],
            "text": texts if isinstance(texts, str) else list(texts),
            "video_id": video_pks[np.asarray(own)],
            "split": "test",
            "is_query": True,
        },
    )
    caption_pks = pks(Caption.objects.filter(dataset=dataset))[-len(own) :]
    return Media(dataset, video_pks, caption_pks)


SUBJECTS = (
    ("man", "guy", "person", "gentleman"),
    ("woman", "lady", "girl"),
    ("boy", "kid", "child"),
    ("cat", "kitten"),
    ("dog", "puppy"),
    ("chef", "cook"),
    ("player", "athlete"),
    ("baby", "toddler"),
    ("monkey", "ape"),
    ("band", "group of musicians"),
)
ACTIONS = tuple(
    (
        "is playing a guitar|is slicing a tomato|is riding a bicycle|is cutting an onion|"
        "is swimming in a pool|is dancing on a stage|is playing the piano|"
        "is pouring water into a glass|is riding a horse|is eating a banana|is peeling a potato|"
        "is driving a car|is talking on a phone|is singing into a microphone|is frying an egg|"
        "is jumping on a trampoline|is throwing a ball|is mixing flour in a bowl|"
        "is climbing a wall|is walking along a beach|is playing the drums|is slicing bread|"
        "is feeding a bird|is brushing its hair|is skating on ice|is reading a book|"
        "is washing a plate|is chopping garlic|is kicking a football|is opening a door"
    ).split("|")
)
PLACES = ("", "", " in a kitchen", " outside", " on the street", " in a park", " at home")
MANNERS = ("", "", "", " quickly", " slowly", " carefully")


def caption_texts(
    own: np.ndarray, action: np.ndarray, subject: np.ndarray, rng: np.random.Generator
) -> list[str]:
    """MSVD-like captions of the videos ``own`` whose ``action`` and ``subject`` (indices in
    :data:`ACTIONS` and :data:`SUBJECTS`) are given: most say what their video shows, in
    varied words."""
    n = len(own)
    drift = rng.random(n) < 0.15  # some describe another action (annotators' noise)
    acts = np.where(drift, rng.integers(0, len(ACTIONS), n), action[own])
    synonym = rng.integers(0, 4, n)
    place = rng.integers(0, len(PLACES), n)
    manner = rng.integers(0, len(MANNERS), n)
    nouns = [SUBJECTS[s][k % len(SUBJECTS[s])] for s, k in zip(subject[own], synonym, strict=True)]
    return [
        f"{'an' if noun[0] in 'aeiou' else 'a'} {noun} {ACTIONS[a]}{MANNERS[m]}{PLACES[p]}"
        for noun, a, m, p in zip(nouns, acts, manner, place, strict=True)
    ]


def runs(
    media: Media, items: Sequence[np.ndarray], scores: Sequence[np.ndarray], names: Sequence[str]
) -> list[Run]:
    """One stored run per (video pks [queries x depth], scores) of ``items``/``scores``,
    named by ``names``, each of a model of its own, through the project's ``store_run``."""
    from retrieval.models import RetrievalModel
    from retrieval.search.runs import RankedLists
    from retrieval.search.runs_service import store_run

    stored = []
    for name, ranked, score in zip(names, items, scores, strict=True):
        model = RetrievalModel.objects.create(dataset=media.dataset, name=name, source="run")
        stored.append(store_run(model, name, RankedLists(media.caption_pks, ranked, score)))
    return stored


# -- the campaign --------------------------------------------------------------------------


def pairs(
    campaign: Campaign,
    pool: Pool,
    double: np.ndarray,
    position: np.ndarray | None = None,
    parked: np.ndarray | None = None,
) -> np.ndarray:
    """The pool's pairs of ``campaign`` at their queue ``position`` (pool order by default),
    as the campaign service writes them (``parked`` ones needing nothing); their pks."""
    from annotation.judging import pair_state
    from annotation.models import Pair

    rows = list(range(len(pool)))
    load(
        Pair,
        {
            "campaign_id": campaign.pk,
            "caption_id": pool.caption_ids,
            "video_id": pool.video_ids,
            "position": rows if position is None else np.asarray(position),
            "pool_row": rows,
            "double": np.asarray(double, dtype=bool),
            **pair_state.initial(pair_state.first_needed(double, parked)),
        },
    )
    return pks(Pair.objects.filter(campaign=campaign))


def synthetic_campaign(
    media: Media,
    depth: int,
    runs: int = 3,
    name: str = "load",
    lease_seconds: int = 300,
    judging_order: str = "depth",
    label_policy: str = "fire",
    confidence: float = 0.95,
) -> tuple[Campaign, np.ndarray]:
    """An active campaign of each query caption's top-``depth`` videos in ``runs`` synthetic
    runs (pair s of a query at rank (s + 3r) % depth + 1 of run r, so every run retrieves
    every pooled pair and adaptive orders have arms to choose), queued in ``judging_order``
    as the campaign service queues them; (campaign, pair pks)."""
    from annotation.campaigns.pooling import Pool
    from annotation.campaigns.settings import CampaignSettings, JudgingSettings, LabelPolicy
    from annotation.models import Campaign, PolicyFit
    from annotation.ordering import priorities
    from annotation.policy import rules as policy

    n_queries, n_videos = len(media.caption_pks), len(media.video_pks)
    query = np.repeat(np.arange(n_queries), depth)
    rank = np.tile(np.arange(depth), n_queries)
    videos = media.video_pks[(query * 7 + rank * 13) % n_videos]
    ranks = np.stack([(rank + 3 * r) % depth + 1 for r in range(runs)], axis=1)
    pool = Pool(media.caption_pks[query], videos, ranks.astype(np.int16))
    settings = CampaignSettings(
        judging=JudgingSettings(strategy=judging_order),
        label_policy=LabelPolicy(label_policy, confidence),
    )
    adaptive = settings.label_policy.adaptive
    known = np.zeros((n_queries, runs), np.int16)
    source = priorities.Provenance(pool.ranks, media.caption_pks.astype(np.int64), known)
    campaign = Campaign(
        dataset=media.dataset,
        name=name,
        depth=depth,
        lease_seconds=lease_seconds,
        provenance=source.to_bytes(),
        second_label_rate=0.0 if adaptive else policy.DEFAULT_SECOND_LABEL_RATE,
        max_labels=policy.DEFAULT_ADAPTIVE_CAP if adaptive else policy.DEFAULT_CAP,
    )
    campaign.set_settings(settings, save=False)
    campaign.save(force_insert=True)
    if adaptive:
        PolicyFit.objects.create(campaign=campaign)
    double = policy.second_label_sample(len(pool), campaign.second_label_rate, campaign.seed)
    took, (position, parked) = once(
        priorities.initial_queue, settings.judging, pool, source, campaign.seed
    )
    log(f"initial {judging_order} order of {len(pool):,} pairs: {took:.2f} s")
    return campaign, pairs(campaign, pool, double, position, parked)


def kitchen_campaign(
    name: str, n_pairs: int, depth: int, urls: bool = False, **settings
) -> tuple[Campaign, np.ndarray]:
    """The world of ``bench/load.py``: a dataset ``name`` of ``n_pairs // depth`` query
    captions over ``max(200, n_pairs // 30)`` videos (``urls``: each with a URL) and its
    :func:`synthetic_campaign` ``name`` at ``depth`` with ``settings``; (campaign, pair pks)."""
    from django.db import transaction

    from retrieval.models import Dataset

    n_queries, n_videos = max(1, n_pairs // depth), max(200, n_pairs // 30)
    videos = {"url": [f"https://example.org/v/{i}.mp4" for i in range(n_videos)]} if urls else None
    with transaction.atomic():
        made = media(
            Dataset.objects.create(name=name, source_format="jsonl"),
            n_videos,
            np.arange(n_queries) % n_videos,
            [f"a person slices vegetable {q} in a small kitchen" for q in range(n_queries)],
            video_key="v{:06d}",
            caption_key="c{:06d}",
            videos=videos,
        )
        return synthetic_campaign(made, depth, name=name, **settings)


def gold(campaign: Campaign, n_gold: int, rate: float, qualification: bool, seed: int = 1) -> None:
    """``n_gold`` gold pairs (15% relevant) on the first query captions and their own videos,
    served at ``rate``, their hidden task pairs made now; ``qualification``: the campaign asks
    for it (see :func:`admit`)."""
    from dataclasses import replace

    from annotation.campaigns.settings import GoldSettings
    from annotation.gold import tasks as gold_queue
    from annotation.models import GoldPair
    from retrieval.models import Caption

    captions = (
        Caption.objects.filter(dataset_id=campaign.dataset_id)
        .order_by("pk")
        .values_list("pk", "video_id")[:n_gold]
    )
    caption_ids, video_ids = np.array(list(captions)).reshape(-1, 2).T
    relevant = np.random.default_rng(seed).random(len(caption_ids)) < 0.15
    load(
        GoldPair,
        {
            "campaign_id": campaign.pk,
            "caption_id": caption_ids,
            "video_id": video_ids,
            "label": ["relevant" if r else "irrelevant" for r in relevant.tolist()],
            "explanation": "synthetic gold pair of the benchmarks",
            "source": GoldPair.Source.IMPORTED,
        },
    )
    campaign.set_settings(
        replace(campaign.settings, gold=GoldSettings(rate=rate, qualification=qualification))
    )
    gold_queue.ensure_tasks(campaign)


def admit(campaign: Campaign, user_pks: np.ndarray) -> None:
    """Every one of ``user_pks`` has passed the campaign's qualification (20 of 20)."""
    from django.utils import timezone

    from annotation.models import QualificationAttempt

    load(
        QualificationAttempt,
        {
            "campaign_id": campaign.pk,
            "annotator_id": np.asarray(user_pks),
            "finished_at": timezone.now(),
            "correct": 20,
            "total": 20,
            "passed": True,
        },
    )


# -- people --------------------------------------------------------------------------------


def annotators(
    usernames: Sequence[str], password: str | None = None, role: bool = True
) -> np.ndarray:
    """Accounts named ``usernames`` (``password`` hashed once; none: unusable), in the
    annotator role unless ``role`` is false; their pks in the order of ``usernames``."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password

    from config import roles

    User = get_user_model()
    load(User, {"username": list(usernames), "password": make_password(password)})
    found = dict(User.objects.filter(username__in=usernames).values_list("username", "pk"))
    user_pks = np.array([found[name] for name in usernames])
    if role:
        group = roles.ensure_groups()[roles.ANNOTATOR]
        load(User.groups.through, {"user_id": user_pks, "group_id": group.pk})
    return user_pks


def sessions(user_pks: np.ndarray) -> list[str]:
    """A live login session per user, written as the session store would: their keys."""
    from django.conf import settings
    from django.contrib.auth import (
        BACKEND_SESSION_KEY,
        HASH_SESSION_KEY,
        SESSION_KEY,
        get_user_model,
    )
    from django.contrib.sessions.backends.db import SessionStore
    from django.contrib.sessions.models import Session
    from django.utils import timezone
    from django.utils.crypto import get_random_string

    users = get_user_model().objects.in_bulk(user_pks.tolist())
    store = SessionStore()
    keys = [get_random_string(32, "abcdefghijklmnopqrstuvwxyz0123456789") for _ in users]
    data = [
        store.encode(
            {
                SESSION_KEY: str(pk),
                BACKEND_SESSION_KEY: settings.AUTHENTICATION_BACKENDS[0],
                HASH_SESSION_KEY: users[pk].get_session_auth_hash(),
            }
        )
        for pk in user_pks.tolist()
    ]
    expires = timezone.now() + timedelta(seconds=settings.SESSION_COOKIE_AGE)
    load(Session, {"session_key": keys, "session_data": data, "expire_date": expires})
    return keys


# -- labels --------------------------------------------------------------------------------


@dataclass
class LabelPlan:
    """Who labels which pair, how and when: arrays per label, in pair order."""

    pair: np.ndarray
    annotator: np.ndarray
    relevant: np.ndarray
    seconds: np.ndarray
    at: np.ndarray
    """Seconds since :data:`FIRST_DAY`."""


def labels_per_pair(
    votes: np.ndarray, double: np.ndarray, n_labels: int, rng: np.random.Generator
) -> np.ndarray:
    """FIRE's policy: one label a pair, two in the second-label sample ``double``, a third
    where those two disagree, then 2-5 more on some single-labelled pairs (FIRE's MSVD
    duplicates) up to ``n_labels`` in all; ``votes[p, i]`` is the ``i``-th label of ``p``."""
    per_pair = np.where(double, 2, 1)
    per_pair[double & (votes[:, 0] != votes[:, 1])] = 3
    spare = n_labels - int(per_pair.sum())
    if spare > 0:
        singles = np.flatnonzero(per_pair == 1)
        rng.shuffle(singles)
        extra = rng.integers(2, MAX_LABELS, len(singles))
        used = min(int(np.searchsorted(np.cumsum(extra), spare)), len(extra) - 1)
        extra = extra[: used + 1]
        extra[-1] = max(0, extra[-1] - (int(extra.sum()) - spare))
        per_pair[singles[: len(extra)]] += extra
    return per_pair


def label_plan(
    truth: np.ndarray,
    double: np.ndarray,
    n_labels: int,
    error: np.ndarray,
    rng: np.random.Generator,
    share: np.ndarray | None = None,
    pace_spread: float = 0.0,
) -> LabelPlan:
    """Labels of annotators who each say the pair's ``truth`` but with their ``error``
    rate, ``share`` of the pairs (even by default) and a pace of their own (log-normal of
    ``pace_spread``; none by default), counted by
    :func:`labels_per_pair`; each works through their labels (first labels before later
    ones) in sittings of :data:`SESSION_LABELS` with hours between, from a start of their own."""
    n_pairs, n_ann = len(truth), len(error)
    if share is None:
        start = rng.integers(0, n_ann, n_pairs)
    else:
        start = rng.choice(n_ann, n_pairs, p=share / share.sum())
    step = rng.integers(1, max(1, (n_ann - 1) // (MAX_LABELS - 1)) + 1, n_pairs)
    slots = np.arange(MAX_LABELS)
    annotator = (start[:, None] + slots[None, :] * step[:, None]) % n_ann
    votes = truth[:, None] ^ (rng.random((n_pairs, MAX_LABELS)) < error[annotator])
    per_pair = labels_per_pair(votes, double, n_labels, rng)
    pair = np.repeat(np.arange(n_pairs), per_pair)
    slot = np.arange(len(pair)) - np.repeat(np.cumsum(per_pair) - per_pair, per_pair)
    who = annotator[pair, slot]
    pace = rng.lognormal(0.0, pace_spread, n_ann) if pace_spread else np.ones(n_ann)
    seconds = np.round(rng.lognormal(np.log(5.0), 0.6, len(pair)) * pace[who], 2)
    order = np.lexsort((rng.random(len(pair)), slot, who))
    who_sorted = who[order]
    first = np.searchsorted(who_sorted, np.arange(n_ann))
    index_in_own = np.arange(len(order)) - first[who_sorted]
    breaks = np.where(
        (index_in_own % SESSION_LABELS == 0) & (index_in_own > 0),
        rng.uniform(2 * 3600, 20 * 3600, len(order)),
        0.0,
    )
    elapsed = np.cumsum(seconds[order] + 1.5 + breaks)
    elapsed -= np.concatenate([[0.0], elapsed])[first][who_sorted]
    offset = rng.uniform(0, 5 * 86400, n_ann)
    at = np.empty(len(pair))
    at[order] = offset[who_sorted] + elapsed
    return LabelPlan(pair, who, votes[pair, slot], seconds, at)


def stamps(seconds_since: np.ndarray) -> list[str]:
    """UTC times ``seconds_since`` :data:`FIRST_DAY` as both databases read them in a load."""
    moments = FIRST_DAY + (seconds_since * 1000).astype("timedelta64[ms]")
    return [text.replace("T", " ") for text in np.datetime_as_string(moments, unit="ms")]


def judgements(
    plan: LabelPlan,
    pair_pks: np.ndarray,
    user_pks: np.ndarray,
    rng: np.random.Generator,
    undone_rate: float = 0.01,
    no_seconds_rate: float = 0.005,
) -> int:
    """The labels as an import writes them, in one bulk load (the tally triggers fire as for
    any insert): ``undone_rate`` of them first said the opposite and undid it, a few have no
    time. The rows written."""
    from annotation.models import Judgement

    n = len(plan.pair)
    undone = rng.random(n) < undone_rate
    missing = rng.random(n) < no_seconds_rate
    # The undone rows: each first said the opposite, 30 s before, and took it back 10 s on.
    before = np.flatnonzero(undone)
    row_of = np.arange(n) + np.cumsum(undone)  # the live row after its undone one
    rows = n + len(before)
    label = np.empty(rows, dtype=bool)
    label[row_of] = plan.relevant
    label[row_of[before] - 1] = ~plan.relevant[before]
    index = np.repeat(np.arange(n), 1 + undone)
    created = plan.at[index]
    created[row_of[before] - 1] -= 30.0
    seconds = plan.seconds[index].astype(object)
    seconds[row_of[before] - 1] = 3.0
    seconds[row_of[missing]] = None
    undone_at = np.full(rows, None, dtype=object)
    undone_at[row_of[before] - 1] = stamps(plan.at[before] - 20.0)
    load(
        Judgement,
        {
            "uuid": [uuid.uuid4().hex for _ in range(rows)],
            "pair_id": pair_pks[plan.pair[index]],
            "annotator_id": user_pks[plan.annotator[index]],
            "label": np.where(label, "relevant", "irrelevant"),
            "seconds": seconds.tolist(),
            "created_at": stamps(created),
            "undone_at": undone_at.tolist(),
        },
    )
    return rows

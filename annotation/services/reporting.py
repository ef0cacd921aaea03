"""Agreement reports from the database or a labels file (FIRE §3.2, Table 2, Fig. 7).

The ORM side of :mod:`annotation.agreement`: gather a campaign's live judgements into the
plain arrays the pure module takes, resolve each pair under the labelling policy
(:mod:`annotation.policy`, FIRE §3.1), and return the report as frozen dataclasses that the
agreement page reads and whose ``to_json()`` the ``agreement`` command prints.

At FIRE's scale (660,000 labels over 555,000 pairs) the per-object ORM would dominate, so
the judgements come from one raw query (:func:`annotation.services.sql.judgement_keys`)
whose rows go straight into numpy, and a pair's
dense index is its id minus the campaign's first pair id (a campaign's pairs are written
in bulk, so their ids are contiguous; a mask covers the rare case where they are not).
"""

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from django.contrib.auth import get_user_model
from django.db.models import Case, Max, Min, Q, Value, When

from annotation import agreement, policy
from annotation.models import Campaign, Pair
from annotation.proxy_agreement import ProxyAgreement, agreement_by_threshold, proxy_agreement
from annotation.services.campaigns import campaign_split
from annotation.services.resolution import campaign_judged
from annotation.services.sql import ANNOTATOR_SPAN, judgement_keys, queryset_array
from retrieval import label_status
from retrieval.formats.labels import RawLabel
from retrieval.json_data import JsonData, omitted_if_none, plain
from retrieval.proxies import PROXIES, PROXY_LABELS


@dataclass
class CampaignLabels:
    """A campaign's live labels as arrays, one entry per label, and each pair's resolution.

    ``pair_index`` is dense (pair id minus ``first_pair_id``) over ``n_pairs`` slots;
    ``in_campaign`` marks the slots that are the campaign's pairs (all of them unless its
    pair ids have gaps). ``resolved`` is 1/0 for a pair resolved to relevant/irrelevant and
    -1 (DISAGREEMENT) otherwise; ``status`` holds :class:`retrieval.label_status.LabelStatus` codes.
    """

    pair_index: np.ndarray
    annotator_index: np.ndarray
    labels: np.ndarray
    seconds: np.ndarray
    annotators: list[str]
    n_pairs: int
    resolved: np.ndarray
    status: np.ndarray
    in_campaign: np.ndarray
    pool_pairs: int
    first_pair_id: int = 0


@dataclass(frozen=True)
class LabelCountRow:
    """Pairs with ``labels`` labels and their percent agreement (FIRE Fig. 7)."""

    labels: int
    pairs: int
    percent_agreement: float | None


@dataclass(frozen=True)
class AnnotatorRow:
    """One annotator: labels given, share relevant, agreement and median seconds per label."""

    annotator: str
    labels: int
    relevant_share: float | None
    agreement_with_resolved: float | None
    agreement_with_coannotators: float | None
    median_seconds: float | None


@dataclass(frozen=True)
class Intervals:
    """95% bootstrap intervals ``(low, high)``; None where the figure has none."""

    percent_agreement: tuple[float, float] | None = omitted_if_none()
    krippendorff_alpha: tuple[float, float] | None = omitted_if_none()


@dataclass(frozen=True)
class AgreementReport(JsonData):
    """Agreement between annotators (FIRE §3.2): :func:`annotation.agreement.report` typed.

    ``resolved_share`` is the share of labelled pairs with a resolved label; ``notes`` say
    why a figure is missing (None when nothing is).
    """

    pairs: int
    labels: int
    labels_per_pair: float
    resolved_share: float
    multiply_labelled_pairs: int
    by_label_count: tuple[LabelCountRow, ...]
    annotators: tuple[AnnotatorRow, ...]
    percent_agreement: float | None
    krippendorff_alpha: float | None
    notes: list[str] | None = omitted_if_none()
    intervals: Intervals

    @classmethod
    def from_plain(cls, result: dict) -> "AgreementReport":
        """The typed form of the pure module's plain report."""
        return cls(
            pairs=result["pairs"],
            labels=result["labels"],
            labels_per_pair=result["labels_per_pair"],
            resolved_share=result["resolved_share"],
            multiply_labelled_pairs=result["multiply_labelled_pairs"],
            by_label_count=tuple(LabelCountRow(**row) for row in result["by_label_count"]),
            annotators=tuple(
                AnnotatorRow(
                    annotator=row["annotator"],
                    labels=row["labels"],
                    relevant_share=row.get("relevant_share"),
                    agreement_with_resolved=row.get("agreement_with_resolved"),
                    agreement_with_coannotators=row.get("agreement_with_coannotators"),
                    median_seconds=row.get("median_seconds"),
                )
                for row in result["annotators"]
            ),
            percent_agreement=result["percent_agreement"],
            krippendorff_alpha=result["krippendorff_alpha"],
            notes=result.get("notes"),
            intervals=Intervals(
                percent_agreement=_bounds(result["intervals"], "percent_agreement"),
                krippendorff_alpha=_bounds(result["intervals"], "krippendorff_alpha"),
            ),
        )


def _bounds(intervals: dict, name: str) -> tuple[float, float] | None:
    bounds = intervals.get(name)
    return None if bounds is None else tuple(bounds)


@dataclass(frozen=True)
class PairStatus:
    """A campaign's pairs per status; ``resolved_share`` is FIRE Table 2's "Percent"."""

    pairs: int
    irrelevant: int
    relevant: int
    disagreement: int
    pending: int
    resolved_share: float


@dataclass(frozen=True)
class CampaignAgreement(JsonData):
    """A campaign's agreement report with its pool size and pair statuses."""

    campaign: str
    pool_pairs: int
    agreement: AgreementReport
    status: PairStatus

    def to_json(self) -> dict:
        """One flat object: the campaign, its pool, the agreement figures, then the statuses."""
        return {
            "campaign": self.campaign,
            "pool_pairs": self.pool_pairs,
            **self.agreement.to_json(),
            "status": plain(self.status),
        }


@dataclass(frozen=True)
class ProxyRow:
    """One semantic proxy against the human labels, or why it could not be scored."""

    proxy: str
    result: ProxyAgreement | None
    error: str = ""

    @property
    def label(self) -> str:
        return PROXY_LABELS[self.proxy]


@dataclass(frozen=True)
class ProxyReport:
    """Every proxy against a campaign's final human labels, and alpha by threshold.

    ``curves`` maps a proxy to its alpha at each of ``curve_thresholds`` (None where
    undefined); ``missing`` lists proxies not cached yet (pages do not compute them).
    """

    campaign: str
    split: str
    pairs: int
    relevant: int
    proxies: tuple[ProxyRow, ...]
    missing: list[str]
    curve_thresholds: list[float]
    curves: dict[str, list[float | None]]

    @property
    def missing_labels(self) -> list[str]:
        return [PROXY_LABELS[name] for name in self.missing]


def _fetch_judgements(
    campaign: Campaign, first: int, last: int, contiguous: bool, packed: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Live judgements as arrays: dense pair index, annotator id, label (1 relevant), seconds.

    Unpacks the rows of :func:`annotation.services.sql.judgement_keys`; missing or negative
    times read back as NaN.
    """
    rows = judgement_keys(campaign.pk, first, last, contiguous, packed)
    key = rows["key"]
    if packed:
        key, annotators = np.divmod(key, ANNOTATOR_SPAN)
    else:
        annotators = rows["annotator"]
    seconds = np.where(rows["seconds"] < 0, np.nan, rows["seconds"])
    return key >> 1, annotators, key & 1, seconds


def load_campaign_labels(campaign: Campaign) -> CampaignLabels:
    """The campaign's live judgements as arrays, and each pair resolved under FIRE §3.1.

    Undone judgements are left out. A pair's status comes from :func:`policy.resolve` with
    its live label counts, its second-label flag, the campaign's ``max_labels`` and any
    adjudicated label (which always wins).
    """
    pairs = Pair.objects.filter(campaign=campaign)
    pool_pairs = pairs.count()
    if not pool_pairs:
        empty = np.zeros(0, dtype=np.int64)
        return CampaignLabels(
            pair_index=empty,
            annotator_index=empty,
            labels=empty,
            seconds=np.zeros(0),
            annotators=[],
            n_pairs=0,
            resolved=empty,
            status=np.zeros(0, dtype=np.int8),
            in_campaign=np.zeros(0, dtype=bool),
            pool_pairs=0,
        )
    # Apart, not in one aggregate: SQLite answers a lone MIN or MAX with one index seek.
    first = pairs.aggregate(first=Min("id"))["first"]
    last = pairs.aggregate(last=Max("id"))["last"]
    n_pairs = last - first + 1
    contiguous = n_pairs == pool_pairs
    in_campaign = np.full(n_pairs, contiguous)
    if not contiguous:
        ids = queryset_array(pairs.values_list("id"), np.dtype([("id", np.int64)]))["id"]
        in_campaign[ids - first] = True

    User = get_user_model()
    top_user = User.objects.aggregate(top=Max("pk"))["top"] or 0
    # Packing needs (2 * n_pairs) * ANNOTATOR_SPAN to fit in 63 bits.
    packed = n_pairs < 2**30 and 0 <= top_user < ANNOTATOR_SPAN
    pair_index, annotator_ids, labels, seconds = _fetch_judgements(
        campaign, first, last, contiguous, packed
    )

    annotators, annotator_index = _annotators(annotator_ids, User)

    # Only the few pairs whose flags matter: second-label ones and adjudicated ones.
    flagged = queryset_array(
        pairs.filter(Q(double=True) | ~Q(adjudicated=""))
        .annotate(
            verdict=Case(
                When(adjudicated=Pair.Status.RELEVANT, then=Value(1)),
                When(adjudicated=Pair.Status.IRRELEVANT, then=Value(0)),
                default=Value(policy.NOT_ADJUDICATED),
            )
        )
        .values_list("id", "double", "verdict"),
        np.dtype([("id", np.int64), ("double", np.bool_), ("verdict", np.int64)]),
    )
    double = np.zeros(n_pairs, dtype=bool)
    double[flagged["id"] - first] = flagged["double"]
    adjudicated = np.full(n_pairs, policy.NOT_ADJUDICATED, dtype=np.int64)
    adjudicated[flagged["id"] - first] = flagged["verdict"]

    counts = agreement.value_counts(pair_index, labels, n_pairs)
    status = policy.resolve(
        counts[:, 1], counts[:, 0] + counts[:, 1], double, campaign.max_labels, adjudicated
    )
    return CampaignLabels(
        pair_index=pair_index,
        annotator_index=annotator_index,
        labels=labels,
        seconds=seconds,
        annotators=annotators,
        n_pairs=n_pairs,
        resolved=resolved_labels(status, in_campaign),
        status=status,
        in_campaign=in_campaign,
        pool_pairs=pool_pairs,
        first_pair_id=first,
    )


def _annotators(annotator_ids: np.ndarray, User) -> tuple[list[str], np.ndarray]:
    """Usernames in alphabetical order, and each label's index into them."""
    if annotator_ids.size and annotator_ids.min() >= 0 and annotator_ids.max() < 1 << 24:
        seen = np.bincount(annotator_ids) > 0  # small ids: a lookup table beats sorting
        present, dense = np.flatnonzero(seen), (np.cumsum(seen) - 1)[annotator_ids]
    else:
        present, dense = np.unique(annotator_ids, return_inverse=True)
    names = dict(
        User.objects.filter(pk__in=present.tolist()).values_list("pk", User.USERNAME_FIELD)
    )
    labels = [str(names.get(pk, pk)) for pk in present.tolist()]
    order = sorted(range(len(present)), key=lambda i: labels[i])
    rank = np.empty(len(present), dtype=np.int64)
    rank[order] = np.arange(len(present))
    return [labels[i] for i in order], rank[dense]


def resolved_labels(status: np.ndarray, in_campaign: np.ndarray | None = None) -> np.ndarray:
    """Each pair's final label (1, 0), or DISAGREEMENT (-1) for pending and disagreeing pairs
    and pairs outside the campaign: what agreement with "the resolved label" compares to."""
    status = np.asarray(status, dtype=np.int64)
    resolved = np.where(status >= 0, status, label_status.DISAGREEMENT)
    if in_campaign is not None:
        resolved[~in_campaign] = label_status.DISAGREEMENT
    return resolved


def campaign_report(
    campaign: Campaign, *, resamples: int = 1000, seed: int = 0
) -> CampaignAgreement:
    """The agreement report of a campaign (FIRE §3.2), plus its pool size and pair statuses.

    ``status`` is :func:`policy.summary` over the campaign's pairs: its ``resolved_share`` is
    FIRE Table 2's "Percent" (complete pairs resolved to a label).
    """
    data = load_campaign_labels(campaign)
    result = agreement.report(
        data.pair_index,
        data.annotator_index,
        data.labels,
        data.n_pairs,
        data.annotators,
        resolved=data.resolved,
        seconds=data.seconds,
        resamples=resamples,
        seed=seed,
    )
    return CampaignAgreement(
        campaign=campaign.name,
        pool_pairs=data.pool_pairs,
        agreement=AgreementReport.from_plain(result),
        status=PairStatus(**policy.summary(data.status[data.in_campaign])),
    )


def file_report(
    records: Iterable[RawLabel], *, resamples: int = 1000, seed: int = 0
) -> AgreementReport:
    """The agreement report of labels read from a file; pairs resolve by strict majority.

    A pair is a distinct (caption key, video key) and every record one label (the reader,
    ``retrieval.formats.labels.read_raw_jsonl``, refuses a second label by the same
    annotator on a pair). Annotators are listed by name.
    """
    pairs: dict[tuple[str, str], int] = {}
    names: dict[str, int] = {}
    pair_index, annotator_index, labels, seconds = [], [], [], []
    for record in records:
        pair_index.append(pairs.setdefault((record.caption_key, record.video_key), len(pairs)))
        annotator_index.append(names.setdefault(record.annotator, len(names)))
        labels.append(record.label)
        seconds.append(np.nan if record.seconds is None else record.seconds)
    ordered = sorted(names)
    rank = np.empty(len(names), dtype=np.int64)
    rank[[names[name] for name in ordered]] = np.arange(len(ordered))
    result = agreement.report(
        np.array(pair_index, dtype=np.int64),
        rank[np.array(annotator_index, dtype=np.int64)],
        np.array(labels, dtype=np.int64),
        len(pairs),
        ordered,
        seconds=np.array(seconds, dtype=np.float64),
        resamples=resamples,
        seed=seed,
    )
    return AgreementReport.from_plain(result)


def campaign_proxy_report(campaign: Campaign, *, cache_only: bool = False) -> ProxyReport:
    """Each semantic proxy against the campaign's final human labels
    (proxies of Wray et al., CVPR 2021, §4.4).

    Proxy matrices come from the dataset split holding the campaign's videos. With
    ``cache_only`` (pages) a proxy not cached yet is listed under ``missing``.
    """
    # Imported here: the proxies pull in spaCy, which every page need not load.
    from retrieval.services.proxies import ProxyError, ProxyOptions, proxy_relevance

    # Pairs a proxy labelled itself (proxy_queue.auto_label) would grade the proxy on its
    # own answers: only human labels count.
    judged = campaign_judged(campaign, humans_only=True)
    decided = judged.relevance >= 0
    caption_ids, video_ids = judged.caption_ids[decided], judged.video_ids[decided]
    labels = judged.relevance[decided] == 1
    split = campaign_split(campaign)
    rows, missing, curves = [], [], {}
    for proxy in PROXIES:
        try:
            relevance = proxy_relevance(
                campaign.dataset, ProxyOptions(proxy, split=split), cache_only=cache_only
            )
        except ProxyError as exc:
            rows.append(ProxyRow(proxy, None, str(exc)))
            continue
        if relevance is None:
            missing.append(proxy)
            continue
        scores = relevance.pair_scores(caption_ids, video_ids)
        result = proxy_agreement(scores, labels)
        rows.append(ProxyRow(proxy, result))
        known = ~np.isnan(scores)
        thresholds, agree, alphas = agreement_by_threshold(scores[known], labels[known])
        if not len(agree):
            continue
        grid = np.linspace(0.0, 1.0, 21)
        # Past the top score nothing is predicted relevant: the last threshold's figure.
        at = np.minimum(np.searchsorted(thresholds, grid, side="left"), len(agree) - 1)
        curves[proxy] = [None if np.isnan(alphas[i]) else float(alphas[i]) for i in at.tolist()]
    return ProxyReport(
        campaign=campaign.name,
        split=split,
        pairs=int(decided.sum()),
        relevant=int(labels.sum()),
        proxies=tuple(rows),
        missing=missing,
        curve_thresholds=[round(x, 2) for x in np.linspace(0.0, 1.0, 21).tolist()],
        curves=curves,
    )

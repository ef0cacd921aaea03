"""Agreement reports from the database or a labels file (FIRE §3.2, Table 2, Fig. 7): the
arrays of :func:`~annotation.campaign_read.labels.load_campaign_labels` through
:mod:`annotation.campaign_read.agreement`, as frozen dataclasses for pages and commands.
"""

from collections.abc import Iterable
from dataclasses import dataclass, fields

import numpy as np

from annotation.campaign_read import agreement
from annotation.campaign_read.labels import campaign_judged, load_campaign_labels
from annotation.campaign_read.proxy_agreement import (
    ProxyAgreement,
    agreement_by_threshold,
    proxy_agreement,
)
from annotation.campaigns.service import campaign_split
from annotation.models import Campaign
from annotation.people.quality import index_raw
from annotation.policy import rules as policy
from retrieval.formats.labels import RawLabel
from retrieval.json_data import JsonData, omitted_if_none, plain
from retrieval.proxies import PROXIES, PROXY_LABELS


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
    """:func:`annotation.campaign_read.agreement.report` typed; ``notes`` say why a figure is
    missing (None when nothing is)."""

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
        annotator_fields = [field.name for field in fields(AnnotatorRow)]
        bounds = {name: tuple(value) for name, value in result["intervals"].items()}
        return cls(
            **{
                **result,
                "by_label_count": tuple(LabelCountRow(**row) for row in result["by_label_count"]),
                "annotators": tuple(
                    AnnotatorRow(*(row.get(name) for name in annotator_fields))
                    for row in result["annotators"]
                ),
                "notes": result.get("notes"),
                "intervals": Intervals(*(bounds.get(field.name) for field in fields(Intervals))),
            }
        )


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
    """Every proxy against a campaign's final human labels, ``curves`` of alpha at each of
    ``curve_thresholds`` (None where undefined), and the proxies not cached yet."""

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


def campaign_report(
    campaign: Campaign, *, resamples: int = 1000, seed: int = 0
) -> CampaignAgreement:
    """The agreement report of a campaign (FIRE §3.2), its pool size and pair statuses
    (:func:`policy.summary`, whose ``resolved_share`` is FIRE Table 2's "Percent")."""
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
    """The agreement report of labels read from a file, a pair per (caption key, video key)
    resolved by strict majority; annotators listed by name."""
    records = list(records)
    pairs, names, pair_index, annotator_index, labels = index_raw(records)
    ordered = sorted(names)
    rank = np.empty(len(names), dtype=np.int64)
    rank[[names[name] for name in ordered]] = np.arange(len(ordered))
    result = agreement.report(
        pair_index,
        rank[annotator_index],
        labels,
        len(pairs),
        ordered,
        seconds=np.array([record.seconds for record in records], dtype=np.float64),  # None: NaN
        resamples=resamples,
        seed=seed,
    )
    return AgreementReport.from_plain(result)


CURVE_GRID = np.linspace(0.0, 1.0, 21)
"""The thresholds at which a proxy's alpha curve is read."""


def campaign_proxy_report(campaign: Campaign, *, cache_only: bool = False) -> ProxyReport:
    """Each semantic proxy (Wray et al., CVPR 2021, §4.4) on the campaign's split against its
    final human labels; with ``cache_only`` (pages) a proxy not cached is ``missing``."""
    # Imported here: the proxies pull in spaCy, which every page need not load.
    from retrieval.proxies.service import (
        ProxyError,
        ProxyOptions,
        cache_files,
        proxy_relevance,
        split_captions,
    )

    # Pairs a proxy labelled itself (proxy_queue.auto_label) would grade the proxy on its
    # own answers: only human labels count.
    judged = campaign_judged(campaign, humans_only=True)
    decided = judged.relevance >= 0
    caption_ids, video_ids = judged.caption_ids[decided], judged.video_ids[decided]
    labels = judged.relevance[decided] == 1
    split = campaign_split(campaign)
    rows, missing, curves = [], [], {}
    # Nothing cached for any dataset: reading and hashing the split's captions (0.6 s at
    # 60,000 captions, on every figures refresh) would only find that out.
    if cache_only and not cache_files():
        missing, proxies = list(PROXIES), ()
    else:
        proxies, captions, failed = PROXIES, None, None
        try:
            captions = split_captions(campaign.dataset, split)
        except ProxyError as exc:
            failed = exc
    for proxy in proxies:
        try:
            if failed is not None:
                raise failed
            relevance = proxy_relevance(
                campaign.dataset,
                ProxyOptions(proxy, split=split),
                cache_only=cache_only,
                captions=captions,
            )
        except ProxyError as exc:
            rows.append(ProxyRow(proxy, None, str(exc)))
            continue
        if relevance is None:
            missing.append(proxy)
            continue
        scores = relevance.pair_scores(caption_ids, video_ids)
        rows.append(ProxyRow(proxy, proxy_agreement(scores, labels)))
        known = ~np.isnan(scores)
        thresholds, agree, alphas = agreement_by_threshold(scores[known], labels[known])
        if not len(agree):
            continue
        # Past the top score nothing is predicted relevant: the last threshold's figure.
        at = np.minimum(np.searchsorted(thresholds, CURVE_GRID, side="left"), len(agree) - 1)
        curves[proxy] = [None if np.isnan(alphas[i]) else float(alphas[i]) for i in at.tolist()]
    return ProxyReport(
        campaign=campaign.name,
        split=split,
        pairs=int(decided.sum()),
        relevant=int(labels.sum()),
        proxies=tuple(rows),
        missing=missing,
        curve_thresholds=[round(x, 2) for x in CURVE_GRID.tolist()],
        curves=curves,
    )

"""Turn a campaign's resolved pairs into a retrieval label set (FIRE §3.1-3.2).

A pair's final label is its single label, or the strict majority of its labels; a pair
with no majority once the policy stops asking is a disagreement, kept apart and never a
positive (as in FIRE's released data). An admin's adjudicated label wins over both.
Pending pairs (still waiting for labels) are left out.
"""

import numpy as np

from annotation.models import Campaign, Pair
from annotation.services import judging_queue
from retrieval.judged import Judged
from retrieval.label_status import CODES
from retrieval.models import LabelSet
from retrieval.services.labelsets import LabelSetError, store_label_set


def campaign_judged(campaign: Campaign, *, humans_only: bool = False) -> Judged:
    """The campaign's pairs that have a final label or are disagreements, as arrays.

    ``humans_only`` leaves out pairs a proxy rule labelled (``Pair.auto_label``).
    """
    pairs = Pair.objects.filter(campaign=campaign).exclude(status=Pair.Status.PENDING)
    if humans_only:
        pairs = pairs.filter(auto_label="")
    rows = list(pairs.values_list("caption_id", "video_id", "status", "label_count", "adjudicated"))
    return Judged.build(
        np.fromiter((row[0] for row in rows), np.int64, len(rows)),
        np.fromiter((row[1] for row in rows), np.int64, len(rows)),
        np.fromiter((CODES[row[2]] for row in rows), np.int64, len(rows)),
        np.fromiter((row[3] for row in rows), np.int64, len(rows)),
        np.fromiter((bool(row[4]) for row in rows), bool, len(rows)),
    )


def resolve_campaign(campaign: Campaign, name: str | None = None) -> LabelSet:
    """Store the campaign's resolved pairs as a label set (replacing an earlier resolution).

    Without ``name`` the set keeps the name of the campaign's last resolution (an admin may
    have renamed it), else takes the campaign's. Resolving never moves the dataset's default
    label set, unless the dataset has none (see :mod:`retrieval.services.labelsets`).
    """
    if not name:
        previous = (
            LabelSet.objects.filter(dataset=campaign.dataset, metadata__campaign_id=campaign.pk)
            .order_by("-created_at", "-pk")
            .values_list("name", flat=True)
            .first()
        )
        name = previous or campaign.name
    clash = LabelSet.objects.filter(dataset=campaign.dataset, name=name).first()
    if clash is not None and clash.metadata.get("campaign_id") != campaign.pk:
        raise LabelSetError(
            f"dataset {campaign.dataset.name!r} already has a label set named {name!r} that "
            f"does not come from campaign {campaign.name!r}; choose another name"
        )
    pairs = campaign_judged(campaign)
    pending = Pair.objects.filter(campaign=campaign, status=Pair.Status.PENDING).count()
    return store_label_set(
        campaign.dataset,
        name,
        pairs,
        source=LabelSet.Source.CAMPAIGN,
        description=f"Resolved from campaign {campaign.name!r}",
        metadata={
            "campaign": campaign.name,
            "campaign_id": campaign.pk,
            "pending": pending,
            # What leave-one-run-out needs: which runs were pooled, and how deep.
            "pooled_runs": campaign.run_names(),
            "pool_depth": campaign.depth,
        },
        replace=True,
        pool_state=judging_queue.pool_state(campaign),
    )

"""Read a campaign's stored relevance predictions: apart from :mod:`.service`, which fits them
from the campaign's label reads, so that readers of the predictions (the active stages) need not
depend on those."""

import io

import numpy as np

from annotation.models import Campaign, RelevancePredictor


def stored_predictions(campaign: Campaign) -> tuple[np.ndarray, np.ndarray] | None:
    """The last fit's (pair ids, probability of relevance) in pool order; None before any."""
    data = (
        RelevancePredictor.objects.filter(campaign=campaign)
        .values_list("arrays", flat=True)
        .first()
    )
    if data is None:
        return None
    with np.load(io.BytesIO(bytes(data))) as arrays:
        return arrays["pair_ids"], arrays["probability"]

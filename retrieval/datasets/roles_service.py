"""ORM-facing: store each caption's semantic-role spans (:mod:`retrieval.datasets.roles`),
which the judging page underlines, once per caption when a campaign pools it, so that no
annotator waits for a parse."""

from collections.abc import Iterable

from retrieval.datasets.roles import role_graphs, role_spans
from retrieval.encoders.text import load_spacy
from retrieval.models import Caption

BATCH = 2_000
"""Captions parsed and written per round."""


def fill_role_spans(caption_ids: Iterable[int], progress=None) -> int:
    """Parse and store the role spans of those captions that have none yet; how many."""
    ids = sorted(set(caption_ids))
    filled = 0
    for start in range(0, len(ids), BATCH):
        missing = list(
            Caption.objects.filter(pk__in=ids[start : start + BATCH], role_spans__isnull=True)
            .order_by("pk")
            .values_list("pk", "text")
        )
        if not missing:
            continue
        graphs = role_graphs([text for _, text in missing], nlp=load_spacy())
        Caption.objects.bulk_update(
            [
                Caption(pk=pk, role_spans=[list(span) for span in role_spans(graph)])
                for (pk, _), graph in zip(missing, graphs, strict=True)
            ],
            ["role_spans"],
        )
        filled += len(missing)
        if progress is not None:
            progress(len(missing))
    return filled

"""ORM-facing: a dataset's leaderboard (:mod:`retrieval.scoring.leaderboard`) under one of its label
sets; which runs were pooled (and how deep) is what a campaign's label set records in
``metadata["pooled_runs"]`` and ``"pool_depth"``, else "pooled" is unknown."""

from dataclasses import dataclass, replace

from config.errors import UserError
from jobs import figures
from retrieval.label_sets.service import default_label_set, lineage
from retrieval.models import Dataset, LabelSet, Run
from retrieval.scoring import leaderboard
from retrieval.scoring.circularity import recorded_families
from retrieval.scoring.leaderboard import Leaderboard, SortError
from retrieval.scoring.rescoring_service import pooled_runs, rescore_dataset, rescoring_inputs


class LeaderboardError(UserError):
    """The leaderboard cannot be built as asked (a bad sort key, an unknown label set)."""


@dataclass(frozen=True)
class LeaderboardRequest:
    """What a leaderboard request names: the dataset, its label sets, the chosen set and sort."""

    dataset: Dataset
    label_sets: tuple[LabelSet, ...]
    label_set: LabelSet | None
    sort: str

    @property
    def versions(self) -> tuple[LabelSet, ...]:
        """The chosen set's versions (ancestors, descendants), oldest first; empty if none other."""
        if self.label_set is None:
            return ()
        family = lineage(self.label_set, self.label_sets)
        return tuple(family) if len(family) > 1 else ()


def read_request(dataset: Dataset, labels: str | None, sort: str | None) -> LeaderboardRequest:
    """The label set ``labels`` names (None or empty: the default, else the newest) and the sort key
    (None: C@1); LeaderboardError (404 unknown set, 400 bad key) otherwise."""
    label_sets = tuple(dataset.label_sets.defer("arrays").order_by("-created_at", "-pk"))
    sort = _checked_sort(sort or "C@1")
    if not labels:
        chosen = default_label_set(label_sets) or next(iter(label_sets), None)
    elif (chosen := next((s for s in label_sets if s.name == labels), None)) is None:
        known = ", ".join(s.name for s in label_sets) or "none"
        raise LeaderboardError(
            f"dataset {dataset.name!r} has no label set named {labels[:60]!r} (known: {known})",
            code="not_found",
            status=404,
        )
    return LeaderboardRequest(dataset, label_sets, chosen, sort)


def _checked_sort(sort: str) -> str:
    try:
        leaderboard.sort_key(sort)
    except SortError as exc:
        raise LeaderboardError(str(exc)) from None
    return sort


def build_leaderboard(
    dataset: Dataset,
    label_set: LabelSet | None,
    *,
    sort: str = "C@1",
    resamples: int = leaderboard.DEFAULT_RESAMPLES,
    permutations: int = leaderboard.DEFAULT_PERMUTATIONS,
    seed: int = 0,
    circularity: bool = True,
) -> Leaderboard:
    """One row per run of ``dataset`` under ``label_set`` (original positives only if None),
    each run judged partly by its own model family flagged (:func:`with_circularity`) unless
    ``circularity`` is False (what is stored: the flags are read live)."""
    scored = rescore_dataset(dataset, label_set)
    models = dict(Run.objects.filter(dataset=dataset).values_list("name", "model__name"))
    board = leaderboard.build(
        scored.result,
        dataset=dataset.name,
        label_set=label_set.name if label_set else None,
        models=models,
        pooled_runs=pooled_runs(label_set),
        sort=_checked_sort(sort),
        resamples=resamples,
        permutations=permutations,
        seed=seed,
    )
    return with_circularity(board, dataset, label_set) if circularity else board


def with_circularity(
    board: Leaderboard, dataset: Dataset, label_set: LabelSet | None
) -> Leaderboard:
    """``board`` with the runs flagged whose model shares a family with a machine assessor
    that fed ``label_set`` (its ``metadata["assessor_families"]``; none for a set without the
    key), read live (one query for the runs' models) so a stored board is never stale."""
    families = recorded_families(label_set.metadata if label_set is not None else None)
    runs = Run.objects.filter(dataset=dataset).values_list("name", "model__encoder", "model__name")
    models = {run: (encoder, name) for run, encoder, name in runs} if families else {}
    return leaderboard.mark_circular(board, families, models)


FIGURE = "leaderboard"
FIGURE_VERSION = 1
"""Bump when what :func:`build_leaderboard` computes changes, so stored boards are redone
(the circularity flags are added on reading, never stored)."""


def stored_leaderboard(
    dataset: Dataset, label_set: LabelSet | None, *, sort: str = "C@1"
) -> figures.Figure[Leaderboard]:
    """The board of :func:`build_leaderboard`, computed once per set of inputs, served from storage
    sorted by ``sort``: the bootstrap and tests took 4.1 s of the page's 5.3 s at FIRE's scale."""
    sort = _checked_sort(sort)
    # The inputs' fingerprint (:func:`rescoring_inputs`) holds the resampling options too.
    options = (leaderboard.DEFAULT_RESAMPLES, leaderboard.DEFAULT_PERMUTATIONS, 0)
    found = figures.exact(
        FIGURE,
        f"dataset {dataset.pk} labels {label_set.pk if label_set else 'original'}",
        rescoring_inputs(dataset, label_set, FIGURE, FIGURE_VERSION, *options),
        lambda: build_leaderboard(dataset, label_set, circularity=False),
    )
    return replace(found, value=with_circularity(found.value, dataset, label_set).sorted_by(sort))

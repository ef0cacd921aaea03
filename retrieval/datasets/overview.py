"""ORM-facing: what a dataset holds, for the dataset pages: splits, models and runs, label sets
and the campaigns judging it (read through the reverse relation ``dataset.campaigns``, since
this app does not import the annotation app)."""

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Prefetch, Q

from retrieval.media.service import MediaTable, media_table
from retrieval.models import Caption, Dataset, LabelSet, RetrievalModel, Run, Video


@dataclass(frozen=True)
class SplitCounts:
    """One split: its videos, its captions and how many of those are queries."""

    name: str
    videos: int
    captions: int
    queries: int


@dataclass(frozen=True)
class RunRow:
    name: str
    depth: int
    queries: int
    created_at: datetime


@dataclass(frozen=True)
class ModelRow:
    """A model with where it came from (a built-in encoder, embeddings, a run file) and its runs."""

    name: str
    source: str
    encoder: str
    runs: tuple[RunRow, ...]


@dataclass(frozen=True)
class CampaignRow:
    pk: int
    name: str
    status: str


@dataclass(frozen=True)
class LabelSetRow:
    name: str
    source: str
    pairs: int
    relevant: int
    is_default: bool
    created_at: datetime


@dataclass(frozen=True)
class DatasetOverview:
    """Everything the dataset page lists, each part in a stable order."""

    name: str
    description: str
    source_format: str
    has_ground_truth: bool
    splits: tuple[SplitCounts, ...]
    models: tuple[ModelRow, ...]
    campaigns: tuple[CampaignRow, ...]
    label_sets: tuple[LabelSetRow, ...]
    media: MediaTable | None = None

    @property
    def run_count(self) -> int:
        return sum(len(model.runs) for model in self.models)


@dataclass(frozen=True)
class DatasetSummary:
    """One row of the dataset list."""

    name: str
    source_format: str
    videos: int
    captions: int
    models: int
    label_sets: int


def split_counts(
    dataset: Dataset, media_states: dict[str, int] | None = None
) -> tuple[SplitCounts, ...]:
    """Videos, captions and query captions per split, splits by name ("" for none); fills
    ``media_states`` with the videos with files per media state, from the same query."""
    with_file = ~Q(media="")
    states = [state for state, _ in Video.MediaState.choices]
    rows = (
        Video.objects.filter(dataset=dataset)
        .values("split")
        .annotate(
            n=Count("pk"),
            **{state: Count("pk", filter=with_file & Q(media_state=state)) for state in states},
        )
    )
    videos = {}
    for row in rows:
        videos[row["split"]] = row["n"]
        if media_states is not None:
            for state in states:
                media_states[state] = media_states.get(state, 0) + row[state]
    captions = {
        split: (n, queries)
        for split, n, queries in Caption.objects.filter(dataset=dataset)
        .values("split")
        .annotate(n=Count("pk"), queries=Count("pk", filter=Q(is_query=True)))
        .values_list("split", "n", "queries")
    }
    return tuple(
        SplitCounts(split, videos.get(split, 0), *captions.get(split, (0, 0)))
        for split in sorted(set(videos) | set(captions))
    )


def dataset_overview(dataset: Dataset) -> DatasetOverview:
    """The dataset's splits, models with their runs, campaigns and label sets."""
    runs = Prefetch("runs", queryset=Run.objects.defer("arrays").order_by("name"))
    models = RetrievalModel.objects.filter(dataset=dataset).prefetch_related(runs).order_by("name")
    label_sets = LabelSet.objects.filter(dataset=dataset).defer("arrays").order_by("name")
    states: dict[str, int] = {}
    splits = split_counts(dataset, states)
    campaigns = getattr(dataset, "campaigns", None)  # None when no app judges datasets
    if campaigns is not None:
        campaigns = campaigns.order_by("-pk").values_list("pk", "name", "status")
    return DatasetOverview(
        name=dataset.name,
        description=dataset.description,
        source_format=dataset.source_format,
        has_ground_truth=dataset.has_ground_truth,
        splits=splits,
        models=tuple(
            ModelRow(
                model.name,
                model.get_source_display(),
                model.encoder,
                tuple(
                    RunRow(run.name, run.depth, run.query_count, run.created_at)
                    for run in model.runs.all()
                ),
            )
            for model in models
        ),
        campaigns=tuple(CampaignRow(*row) for row in campaigns or ()),  # newest first
        label_sets=tuple(
            LabelSetRow(
                s.name,
                s.get_source_display(),
                s.pair_count,
                s.relevant_count,
                s.is_default,
                s.created_at,
            )
            for s in label_sets
        ),
        media=media_table(dataset, states),
    )


def _per_dataset(model) -> dict[int, int]:
    """Rows of ``model`` per dataset id: one grouped query (joining all four tables at once
    would count videos times captions times ...)."""
    rows = model.objects.values("dataset").annotate(n=Count("pk")).values_list("dataset", "n")
    return dict(rows)


def dataset_summaries() -> list[DatasetSummary]:
    """Every dataset with its sizes, by name."""
    counts = [_per_dataset(model) for model in (Video, Caption, RetrievalModel, LabelSet)]
    datasets = Dataset.objects.order_by("name").values_list("pk", "name", "source_format")
    return [
        DatasetSummary(name, source_format, *(count.get(pk, 0) for count in counts))
        for pk, name, source_format in datasets
    ]


def datasets_with_label_sets():
    """Every dataset (name, whether it has a ground truth) with its label sets by name, their
    arrays left unread: what the reports index lists."""
    sets = LabelSet.objects.defer("arrays").order_by("name")
    return Dataset.objects.only("name", "has_ground_truth").prefetch_related(
        Prefetch("label_sets", queryset=sets)
    )

"""Gold pairs of a campaign: import them from a file, promote decided pairs, list, export.

Admins add gold by importing a gold file (:mod:`annotation.gold.file`; errors name the
file, line and field, and nothing is written) or by promoting decided pairs: adjudicated,
or labelled unanimously by at least :data:`MIN_UNANIMOUS` annotators.
"""

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Exists, F, OuterRef, Q
from django.utils import timezone

from annotation.gold import file as gold_file
from annotation.gold import tasks as gold_queue
from annotation.judging import statements as sql
from annotation.models import Campaign, GoldJudgement, GoldPair, Judgement, Pair
from config.batches import rows_in
from config.errors import UserError
from config.text_rule import text_problem
from retrieval.datasets.uploads import Steps, estimate_records
from retrieval.formats.records import FormatError
from retrieval.label_sets.status import CODES, NAMES
from retrieval.models import Dataset
from retrieval.search.runs_service import KeyIndex

MIN_UNANIMOUS = 2
"""Labels a pair needs, all the same, to count as decided without an admin."""


class GoldError(UserError):
    """Gold pairs cannot be added as asked; nothing was written."""


@dataclass(frozen=True)
class GoldImport:
    """What an import added: gold pairs read and stored, relevant among them."""

    campaign: str
    file: str
    created: int
    relevant: int


@dataclass(frozen=True)
class Promotion:
    """Pairs promoted to gold, and decided pairs skipped because they already were gold."""

    campaign: str
    promoted: int
    already_gold: int

    @property
    def summary(self) -> str:
        """What it did, in words (the pages' message)."""
        return f"{self.promoted} pair{'s' if self.promoted != 1 else ''} promoted to gold" + (
            f" ({self.already_gold} already gold)." if self.already_gold else "."
        )


@dataclass(frozen=True)
class GoldSummary:
    """One gold pair with how often it was answered, and how often rightly."""

    id: int
    caption_key: str
    video_key: str
    label: str
    explanation: str
    guideline: str
    source: str
    pair_id: int | None
    answers: int
    correct: int


@dataclass(frozen=True)
class GoldRows:
    """A gold file read against a dataset: its pairs as rows to store."""

    file: str
    rows: tuple[GoldPair, ...]

    @property
    def relevant(self) -> int:
        return sum(row.label == Judgement.Label.RELEVANT for row in self.rows)

    @property
    def irrelevant(self) -> int:
        return len(self.rows) - self.relevant


def read_gold_rows(
    dataset: Dataset,
    path: Path | str,
    fmt: str | None = None,
    *,
    shown: str | None = None,
    campaign: Campaign | None = None,
    user=None,
    progress: Callable[[int], None] | None = None,
) -> GoldRows:
    """The gold pairs of a CSV or JSONL file as rows for ``campaign`` (or one not made yet),
    writing nothing. Keys must name captions and videos of ``dataset``, and a pair may not
    be gold already (errors name the line and field); ``shown`` names the file in errors."""
    path = Path(path)
    indexes = {
        "caption": KeyIndex.captions(dataset).by_key,
        "video": KeyIndex.videos(dataset).by_key,
    }
    gold = GoldPair.objects.none() if campaign is None else campaign.gold_pairs.all()
    existing = set(gold.values_list("caption_id", "video_id"))
    rows = []
    try:
        for record in gold_file.read_gold(path, fmt):
            caption, video = (
                _key_id(path, record, indexes, what, dataset) for what in ("caption", "video")
            )
            if (caption, video) in existing:
                raise FormatError(
                    path,
                    record.line,
                    "video_key",
                    f"({record.caption_key!r}, {record.video_key!r}) is already a gold pair of "
                    f"campaign {campaign.name!r}",
                )
            rows.append(
                GoldPair(
                    campaign=campaign,
                    caption_id=caption,
                    video_id=video,
                    label=NAMES[record.label],
                    explanation=record.explanation,
                    guideline=record.guideline,
                    source=GoldPair.Source.IMPORTED,
                    created_by=user,
                )
            )
            if progress is not None:
                progress(1)
    except FormatError as exc:
        if shown is None or Path(str(exc.path)) != path:
            raise
        raise FormatError(shown, exc.line, exc.field, exc.message, where=exc.where) from None
    return GoldRows(file=shown or path.name, rows=tuple(rows))


def _key_id(path: Path, record: gold_file.GoldRecord, indexes, what: str, dataset) -> int:
    """The id of the record's caption or video (``what``) in the dataset, else FormatError."""
    key = getattr(record, f"{what}_key")
    found = indexes[what].get(key)
    if found is None:
        message = f"no {what} with key {key!r} in dataset {dataset.name!r}"
        raise FormatError(path, record.line, f"{what}_key", message)
    return found


class _Quiet:
    """Steps nobody watches (an import called without a job or a command around it)."""

    def step(self, message: str, total: int | None = None, done: int = 0) -> None:
        pass

    def advance(self, units: int = 1) -> None:
        pass


def import_gold(
    campaign: Campaign,
    path: Path | str,
    fmt: str | None = None,
    *,
    user=None,
    shown: str | None = None,
    steps: Steps | None = None,
) -> GoldImport:
    """Add the gold pairs of a CSV or JSONL file to ``campaign``, all or nothing, telling
    ``steps`` how far it got. The file is read and checked before the one write transaction:
    reading 100,000 rows under SQLite's write lock failed the start-up jobs (``database is
    locked``)."""
    steps = steps or _Quiet()
    path = Path(path)
    name = shown or path.name
    steps.step(f"reading {name}", total=estimate_records(path, "csv"))
    read = read_gold_rows(
        campaign.dataset,
        path,
        fmt,
        shown=shown,
        campaign=campaign,
        user=user,
        progress=steps.advance,
    )
    return write_gold_rows(campaign, read, user=user, steps=steps)


_GOLD_COLUMNS = ("caption_id", "video_id", "label", "explanation", "guideline")


def write_gold_rows(
    campaign: Campaign, read: GoldRows, *, user=None, steps: Steps | None = None
) -> GoldImport:
    """Store checked gold rows as ``campaign``'s with their hidden tasks, in one transaction
    (the same pairs imported meanwhile: GoldError, nothing written)."""
    steps = steps or _Quiet()
    rows = read.rows
    # Columns, read before the write transaction (bulk_create's instances were most of the
    # lock's time).
    columns = {
        "campaign_id": campaign.pk,
        **{name: [getattr(row, name) for row in rows] for name in _GOLD_COLUMNS},
        "source": GoldPair.Source.IMPORTED.value,
        "created_by_id": user.pk if user is not None else None,
        "created_at": connection.ops.adapt_datetimefield_value(timezone.now()),
    }
    steps.step(f"writing {len(read.rows):,} gold pairs and their tasks", total=len(read.rows))
    try:
        with transaction.atomic():
            sql.insert(GoldPair, columns)
            gold_queue.ensure_tasks(campaign)  # now, not in the request that first serves one
    except IntegrityError:  # gold_pair_once: the same pairs imported meanwhile
        raise GoldError(
            f"{read.file}: some of its pairs became gold pairs of campaign {campaign.name!r} while "
            "it was read; nothing was imported, import it again to be told which"
        ) from None
    steps.advance(len(read.rows))
    return GoldImport(
        campaign=campaign.name, file=read.file, created=len(read.rows), relevant=read.relevant
    )


def decided() -> Q:
    """Pairs whose label is settled: adjudicated, or unanimous with enough labels."""
    unanimous = Q(label_count__gte=MIN_UNANIMOUS) & (
        Q(relevant_count=0) | Q(relevant_count=F("label_count"))
    )
    resolved = Q(status__in=(Pair.Status.RELEVANT, Pair.Status.IRRELEVANT))
    return resolved & (~Q(adjudicated="") | (unanimous & Q(auto_label="")))


def _promotable(campaign: Campaign):
    """Decided pairs of ``campaign`` that are not gold pairs yet."""
    gold = GoldPair.objects.filter(
        campaign=campaign, caption_id=OuterRef("caption_id"), video_id=OuterRef("video_id")
    )
    return Pair.objects.filter(campaign=campaign).filter(decided()).exclude(Exists(gold))


def promotable(campaign: Campaign) -> int:
    """How many pairs promoting every decided pair adds (one query)."""
    return _promotable(campaign).count()


def promote(
    campaign: Campaign,
    *,
    pair_ids: Sequence[int] | None = None,
    all_decided: bool = False,
    explanation: str = "",
    guideline: str = "",
    user=None,
    expected: int | None = None,
) -> Promotion:
    """Make decided pairs of ``campaign`` (``pair_ids``, each decided, or ``all_decided``)
    gold pairs with their settled label; pairs already gold are skipped and counted. With
    ``expected`` (:func:`promotable`'s count) nothing is promoted unless that many would be;
    promoting nothing is refused."""
    if (pair_ids is None) == (not all_decided):
        raise GoldError("name the pairs to promote, or ask for every decided pair")
    pairs = Pair.objects.filter(campaign=campaign)
    rows = pairs.filter(decided()).values_list("pk", "caption_id", "video_id", *_SETTLED)
    if pair_ids is None:
        rows = list(rows.order_by("pk"))
    else:
        wanted = sorted(set(int(pk) for pk in pair_ids))
        if not wanted:
            raise GoldError("no pairs named")
        rows = sorted(rows_in(rows, "pk", wanted))
        missing = sorted(set(wanted) - {row[0] for row in rows})
        if missing:
            known = set(rows_in(pairs.values_list("pk", flat=True), "pk", missing))
            unknown = [pk for pk in missing if pk not in known]
            if unknown:
                raise GoldError(
                    f"pairs {_ids(unknown)} are not in campaign {campaign.name!r}; nothing promoted"
                )
            raise GoldError(
                f"pairs {_ids(missing)} are not decided (adjudicated, or unanimous with at "
                f"least {MIN_UNANIMOUS} labels); nothing promoted"
            )
    existing = set(GoldPair.objects.filter(campaign=campaign).values_list("caption_id", "video_id"))
    explanation = explanation.strip()
    for what, text, lines in (("explanation", explanation, True), ("guideline", guideline, False)):
        problem = text_problem(text, gold_file.TEXT_LENGTH, lines=lines)
        if problem is not None:
            raise GoldError(f"the {what} {problem}")
    created = []
    for pk, caption, video, *settled in rows:
        if (caption, video) in existing:
            continue
        label, how = _settled(*settled)
        created.append(
            GoldPair(
                campaign=campaign,
                caption_id=caption,
                video_id=video,
                label=label,
                explanation=explanation or how,
                guideline=guideline.strip(),
                source=GoldPair.Source.PROMOTED,
                pair_id=pk,
                created_by=user,
            )
        )
    if expected is not None and expected != len(created):
        raise GoldError(
            f"the count changed from {expected} to {len(created)} since you looked (pairs "
            "were decided, undone or promoted meanwhile): nothing promoted; confirm again",
            code="count_changed",
            status=409,
        )
    if not created:
        raise GoldError(
            "nothing to promote: "
            + (
                f"every decided pair of {campaign.name!r} is gold already"
                if rows
                else f"campaign {campaign.name!r} has no decided pair"
            ),
            code="nothing_to_promote",
            status=409,
        )
    with transaction.atomic():
        GoldPair.objects.bulk_create(created, batch_size=1000)
        gold_queue.ensure_tasks(campaign)  # now, not in the request that first serves one
    return Promotion(campaign.name, len(created), len(rows) - len(created))


_SETTLED = ("status", "adjudicated", "adjudicated_by__username", "label_count")
"""The columns :func:`_settled` reads."""


def _settled(status: str, adjudicated: str, admin: str | None, count: int) -> tuple[str, str]:
    """A decided pair's label, and the explanation it gets promoted when the admin gives none."""
    if adjudicated:
        return adjudicated, f"Adjudicated {adjudicated} by {admin or 'an admin'}."
    return status, f"All {count} annotators judged it {status}."


def gold_template_rows(campaign: Campaign) -> Iterator[gold_file.GoldTemplateRow]:
    """The decided pairs of ``campaign`` not gold yet as rows of a gold file to edit and import
    (one query, read in batches), as promoting every decided pair would make them."""
    rows = (
        _promotable(campaign)
        .order_by("pk")
        .values_list("caption__key", "video__key", "caption__text", *_SETTLED)
    )
    for caption_key, video_key, text, *settled in rows.iterator(chunk_size=5000):
        label, how = _settled(*settled)
        yield gold_file.GoldTemplateRow(caption_key, video_key, text, CODES[label], how)


def _ids(ids: Sequence[int]) -> str:
    shown = ", ".join(str(pk) for pk in ids[:10])
    return shown + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")


def gold_summaries(campaign: Campaign) -> list[GoldSummary]:
    """The campaign's gold pairs in the order they were added, with answer counts."""
    rows = (
        GoldPair.objects.filter(campaign=campaign)
        .annotate(
            answers=Count("judgements"),
            correct=Count("judgements", filter=Q(judgements__label=F("label"))),
        )
        .values_list(
            "pk",
            "caption__key",
            "video__key",
            "label",
            "explanation",
            "guideline",
            "source",
            "pair_id",
            "answers",
            "correct",
        )
        .order_by("pk")
    )
    return [GoldSummary(*row) for row in rows]


def gold_export_rows(campaign: Campaign) -> Iterator[gold_file.GoldExportRow]:
    """Every gold pair of ``campaign`` with every answer on it, in order (two queries)."""
    usernames = dict(get_user_model().objects.values_list("pk", "username"))
    answers: dict[int, list[gold_file.GoldAnswer]] = {}
    judgements = (
        GoldJudgement.objects.filter(gold_pair__campaign=campaign)
        .order_by("gold_pair_id", "created_at", "pk")
        .values_list(
            "gold_pair_id",
            "annotator_id",
            "label",
            "seconds",
            "created_at",
            "purpose",
            "attempt_id",
        )
    )
    for gold, annotator, label, seconds, created, purpose, attempt in judgements.iterator():
        answers.setdefault(gold, []).append(
            gold_file.GoldAnswer(
                annotator=usernames.get(annotator, str(annotator)),
                label=CODES[label],
                seconds=seconds,
                judged_at=created.isoformat(),
                purpose=purpose,
                attempt=attempt,
            )
        )
    pairs = (
        GoldPair.objects.filter(campaign=campaign)
        .order_by("pk")
        .values_list(
            "pk",
            "caption__key",
            "video__key",
            "caption__text",
            "label",
            "explanation",
            "guideline",
            "source",
            "created_by_id",
            "created_at",
        )
    )
    for pk, caption_key, video_key, text, label, why, guideline, source, by, at in pairs.iterator():
        yield gold_file.GoldExportRow(
            caption_key=caption_key,
            video_key=video_key,
            caption=text,
            label=CODES[label],
            explanation=why,
            guideline=guideline,
            source=source,
            created_by=usernames.get(by, "") if by is not None else "",
            created_at=at.isoformat(),
            answers=tuple(answers.get(pk, ())),
        )

"""Import a caption file (and optionally its videos) into a Dataset, all or nothing.

Records are checked and written in batches inside one transaction, so a problem on the last
line leaves the database as it was. Importing into an existing dataset reuses videos by key;
a caption key already there is an error. A record's own split wins over ``split``; a caption
is a query when its record says so, else when its split is ``test``. With ``videos_dir``
every video resolves to a file by ``video_path`` or ``<key>.<ext>`` (up to two folders
down; an EPIC clip by its parent video) that must be a video by extension and signature and
stay inside the folder; outside ``MEDIA_ROOT`` a link ``MEDIA_ROOT/datasets/<slug>`` is made
for it. Each new file is probed once (with ``skip_broken`` a broken one's records are left
out and listed) and a ``media`` job queued after commit. ``video_url_template`` takes
``{video_id}`` (the media file's id), ``{key}``, ``{start}`` and ``{end}``.
"""

import os
import string
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from config.batches import batches, rows_in
from config.errors import UserError
from retrieval.datasets.demo.service import stored_assertion, stored_scene
from retrieval.datasets.names import check_name
from retrieval.formats import CAPTION_FORMATS, CaptionFormat
from retrieval.formats.records import URL_MAX_LENGTH, CaptionRecord, FormatError, check_chars
from retrieval.media.probe import Probe, ProbeError, check_span, probe
from retrieval.media.service import attach_derived, copy_settings, queue_media
from retrieval.models import Caption, Dataset, Video

BATCH_SIZE = 5000
VIDEO_EXTENSIONS = ("mp4", "webm", "mkv", "avi", "mov")
TEMPLATE_FIELDS = frozenset({"video_id", "key", "start", "end"})
MEDIA_MAX_LENGTH = Video._meta.get_field("media").max_length
LINK_DIR = "datasets"
SCAN_DEPTH = 2
EBML_MAGIC = b"\x1a\x45\xdf\xa3"
ISO_BOX_TYPES = frozenset({b"ftyp", b"moov", b"mdat", b"free", b"skip", b"wide", b"pnot"})

# Attributes that must agree between records of one video, with the column that sets each.
VIDEO_ATTRIBUTES = ("video_path", "video_url", "start", "end", "duration", "media_key")


class ImportOptionError(UserError):
    """An argument to the import is unusable (unknown format, bad template or directory)."""


@dataclass
class ImportSummary:
    """What an import wrote."""

    dataset: str
    format: str
    dataset_created: bool = False
    videos_created: int = 0
    videos_reused: int = 0
    captions: int = 0
    queries: int = 0
    splits: dict[str, int] = field(default_factory=dict)
    media_link: str = ""
    seconds: float = 0.0
    broken: list[dict] = field(default_factory=list)
    skipped_captions: int = 0
    derived_pending: int = 0


def import_dataset(
    name: str,
    fmt: str,
    captions_path: Path | str,
    videos_dir: Path | str | None = None,
    video_url_template: str | None = None,
    split: str | None = None,
    progress: Callable[[int], None] | None = None,
    skip_broken: bool = False,
) -> ImportSummary:
    """Import ``captions_path`` in format ``fmt`` into the dataset ``name`` (module doc).

    Raises :class:`FormatError` for a bad file, :class:`~retrieval.datasets.names.InvalidName`
    and :class:`ImportOptionError` for bad arguments; ``progress`` gets records handled since
    its previous call.
    """
    began = time.perf_counter()
    check_name(name, "dataset")
    caption_format = format_named(fmt)
    if video_url_template is not None:
        check_url_template(video_url_template)
    media = MediaResolver(Path(videos_dir), name) if videos_dir is not None else None
    path = Path(captions_path)
    summary = ImportSummary(dataset=name, format=fmt)
    linked = False
    try:
        with transaction.atomic():
            importer = _Importer(
                summary, path, caption_format, media, video_url_template, split or "", skip_broken
            )
            importer.run(caption_format.parse(path), progress)
            if media is not None:
                linked = media.link()
                summary.media_link = media.link_path
            if summary.derived_pending or media is not None:
                queue_media(importer.dataset)  # copies, clips, or only posters to make
    except BaseException:
        if linked:
            media.unlink()
        raise
    summary.seconds = time.perf_counter() - began
    return summary


def format_named(fmt: str) -> CaptionFormat:
    """The caption format called ``fmt``, or :class:`ImportOptionError`."""
    if fmt not in CAPTION_FORMATS:
        raise ImportOptionError(
            f"unknown format {fmt!r}; choose one of {', '.join(CAPTION_FORMATS)}"
        )
    return CAPTION_FORMATS[fmt]


def check_url_template(template: str) -> set[str]:
    """Return the placeholders a URL template uses; reject unknown or unformattable ones."""
    try:
        check_chars(template)
    except ValueError as exc:
        raise ImportOptionError(f"the --video-url template {exc}") from None
    if len(template) > URL_MAX_LENGTH:
        raise ImportOptionError(f"--video-url template is longer than {URL_MAX_LENGTH}")
    try:
        names = {
            parsed[1] for parsed in string.Formatter().parse(template) if parsed[1] is not None
        }
    except ValueError as exc:
        raise ImportOptionError(f"invalid --video-url template: {exc}") from None
    unknown = names - TEMPLATE_FIELDS
    if unknown:
        raise ImportOptionError(
            f"--video-url template uses unknown placeholder(s) {', '.join(sorted(unknown))}; "
            f"available: {', '.join(sorted(TEMPLATE_FIELDS))}"
        )
    try:
        template.format(video_id="v", key="v", start=1.5, end=2.5)
    except (ValueError, IndexError, KeyError, OverflowError, MemoryError) as exc:
        raise ImportOptionError(f"invalid --video-url template: {exc}") from None
    return names


@dataclass
class _VideoEntry:
    """A video the import has seen: its row id (once written) and the record that set it."""

    attributes: tuple
    line: int
    id: int | None = None
    broken: bool = False


@dataclass
class _Importer:
    """One import: its options, the keys seen so far, videos to create and captions to write."""

    summary: ImportSummary
    path: Path
    format: CaptionFormat
    media: "MediaResolver | None"
    url_template: str | None
    default_split: str
    skip_broken: bool
    dataset: Dataset | None = None
    caption_lines: dict[str, int] = field(default_factory=dict)
    existing_captions: set[str] = field(default_factory=set)
    videos: dict[str, _VideoEntry] = field(default_factory=dict)
    existing_videos: dict[str, Video] = field(default_factory=dict)
    new_videos: list[Video] = field(default_factory=list)
    pending: list[tuple[CaptionRecord, str, bool]] = field(default_factory=list)
    splits: Counter[str] = field(default_factory=Counter)
    probes: dict[str, Probe | str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.name = self.summary.dataset
        template = self.url_template
        self.url_fields = check_url_template(template) if template is not None else set()
        self.copy = copy_settings() if self.media is not None else None

    def error(self, record: CaptionRecord, field: str | None, message: str) -> FormatError:
        """A FormatError located at ``record``."""
        return FormatError(self.path, record.line, field, message, where=self.format.where)

    def _dataset(self) -> Dataset | None:
        """The dataset to import into, locked until the import's transaction ends."""
        return Dataset.objects.select_for_update().filter(name=self.name).first()

    def run(self, records: Iterable[CaptionRecord], progress: Callable[[int], None] | None) -> None:
        """Check and write every record, in batches; create the dataset if needed."""
        dataset = self._dataset()
        if dataset is None:
            try:
                with transaction.atomic():  # a savepoint: the import goes on if it fails
                    dataset = Dataset.objects.create(
                        name=self.name, source_format=self.summary.format
                    )
                self.summary.dataset_created = True
            except IntegrityError:
                # Another import created it meanwhile and committed: add to it.
                dataset = self._dataset()
                if dataset is None:
                    raise
        if not self.summary.dataset_created:
            self.existing_captions = set(
                Caption.objects.filter(dataset=dataset).values_list("key", flat=True)
            )
            self.existing_videos = {video.key: video for video in dataset.videos.all()}
        self.dataset = dataset
        for batch in batches(records, BATCH_SIZE):
            written = self.summary.captions
            for record in batch:
                self.add(record)
            self.flush()
            if progress is not None and self.summary.captions > written:
                progress(self.summary.captions - written)
        if not self.summary.captions:
            raise FormatError(self.path, None, None, "no captions found")
        self.summary.splits = dict(sorted(self.splits.items()))
        imports = dataset.metadata.setdefault("imports", [])
        entry = {
            "file": self.path.name,
            "format": self.summary.format,
            "captions": self.summary.captions,
            "videos_created": self.summary.videos_created,
            "at": timezone.now().isoformat(timespec="seconds"),
        }
        if self.summary.broken:
            entry["broken"] = self.summary.broken
            entry["skipped_captions"] = self.summary.skipped_captions
        imports.append(entry)
        dataset.save(update_fields=["metadata"])

    def add(self, record: CaptionRecord) -> None:
        """Check one record against everything seen so far and queue it for writing."""
        key = record.caption_key
        first = self.caption_lines.get(key)
        if first is not None or key in self.existing_captions:
            seen = f"already in dataset {self.name!r}"
            if first is not None:
                seen = f"first seen on {self.format.where.format(first)}"
            raise self.error(record, self.format.caption_field, f"duplicate key {key!r} ({seen})")
        if self.dataset is not None and self.dataset.has_ground_truth:
            self.check_ground_truth(record)
        self.caption_lines[key] = record.line
        split = record.split or self.default_split
        is_query = record.is_query if record.is_query is not None else split == "test"
        if not self.add_video(record, split):
            self.summary.skipped_captions += 1
            return
        self.pending.append((record, split, is_query))

    def check_ground_truth(self, record: CaptionRecord) -> None:
        """Refuse a caption without a stored assertion or a new video without a stored scene
        in a synthetic world, whose ground truth (FIRE §3.1) judges one against the other."""
        world = (
            f"dataset {self.name!r} has exhaustive ground truth (a synthetic world); "
            "import the file into another dataset"
        )
        if stored_assertion(record.metadata) is None:
            message = f"caption {record.caption_key!r} has no assertion to judge it by and {world}"
            raise self.error(record, self.format.caption_field, message)
        known = record.video_key in self.existing_videos or record.video_key in self.videos
        if not known and stored_scene(record.video_metadata) is None:
            message = f"video {record.video_key!r} has no scene to judge it by and {world}"
            raise self.error(record, self.format.video_field, message)

    def add_video(self, record: CaptionRecord, split: str) -> bool:
        """Register the record's video: reuse it, check it agrees, or queue it for creation.
        False when its file is broken and the import skips broken files."""
        attributes = tuple(getattr(record, name) for name in VIDEO_ATTRIBUTES)
        entry = self.videos.get(record.video_key)
        if entry is not None:
            if attributes != entry.attributes:
                pairs = zip(VIDEO_ATTRIBUTES, attributes, entry.attributes, strict=True)
                self.check_agrees(record, pairs, f"on {self.format.where.format(entry.line)}")
            return not entry.broken
        media = self.resolve_media(record)
        url = self.video_url(record)
        existing = self.existing_videos.get(record.video_key)
        if existing is not None:
            stored = (
                ("start", record.start, existing.start),
                ("end", record.end, existing.end),
                ("duration", record.duration, existing.duration),
                ("video_url", url, existing.url),
                ("video_path", media, existing.media.name),
            )
            self.check_agrees(record, stored, f"in dataset {self.name!r}", blanks_agree=True)
            self.videos[record.video_key] = _VideoEntry(attributes, record.line, id=existing.pk)
            self.summary.videos_reused += 1
            return True
        probed = self.probe_media(record, media) if media else None
        if probed is None and media:
            self.videos[record.video_key] = _VideoEntry(attributes, record.line, broken=True)
            return False
        self.videos[record.video_key] = _VideoEntry(attributes, record.line)
        self.new_videos.append(
            Video(
                dataset=self.dataset,
                key=record.video_key,
                media=media,
                url=url,
                duration=record.duration,
                start=record.start,
                end=record.end,
                split=split,
                metadata=record.video_metadata,
                probe=probed.to_json() if probed is not None else None,
            )
        )
        return True

    def probe_media(self, record: CaptionRecord, media: str) -> Probe | None:
        """The probe of the record's file (once per file): an error if it does not decode
        (None when broken files are skipped) or the segment does not fit it."""
        found = self.probes.get(media)
        if found is None:
            try:
                found = probe(self.media.paths[media])  # type: ignore[union-attr]
            except ProbeError as exc:
                found = str(exc)
                if self.skip_broken:
                    self.summary.broken.append(
                        {"file": media, "line": record.line, "reason": found}
                    )
            self.probes[media] = found
        if isinstance(found, str):
            if self.skip_broken:
                return None
            field_name = "video_path" if record.video_path else self.format.media_field
            raise self.error(record, field_name, f"video file {media!r} does not decode: {found}")
        problem = check_span(record.start, record.end, found.duration)
        if problem is not None:
            fmt = self.format
            field_name = fmt.start_field if problem.startswith("start") else fmt.end_field
            message = f"video {record.video_key!r}: {problem} (video file {media!r})"
            raise self.error(record, field_name, message)
        return found

    def check_agrees(
        self, record: CaptionRecord, values: Iterable[tuple], there: str, blanks_agree: bool = False
    ) -> None:
        """Raise for the first ``(attribute, value here, value there)`` whose values differ;
        with ``blanks_agree`` a missing value on either side never conflicts."""
        for name, new, old in values:
            blank = blanks_agree and (new in (None, "") or old in (None, ""))
            if new != old and not blank:
                field_name = self.format.media_field if name == "media_key" else name
                message = (
                    f"video {record.video_key!r} has {name} {_show(new)} here but {_show(old)}"
                )
                raise self.error(record, field_name, f"{message} {there}")

    def resolve_media(self, record: CaptionRecord) -> str:
        """The MEDIA_ROOT-relative path of the record's video file ("" without a directory)."""
        if self.media is None:
            return ""
        try:
            media = self.media.resolve(record)
        except LookupError as exc:
            fmt = self.format
            field_name = fmt.media_field if record.media_key else fmt.video_field
            field_name = "video_path" if record.video_path else field_name
            raise self.error(record, field_name, str(exc)) from None
        if len(media) > MEDIA_MAX_LENGTH:
            raise self.error(record, "video_path", f"path longer than {MEDIA_MAX_LENGTH}")
        return media

    def video_url(self, record: CaptionRecord) -> str:
        """The URL from the template if one was given, else the record's own URL."""
        if self.url_template is None:
            return record.video_url
        values = {
            "video_id": record.media_key or record.video_key,
            "key": record.video_key,
            "start": record.start,
            "end": record.end,
        }
        for name in ("start", "end"):
            if values[name] is None and name in self.url_fields:
                raise self.error(
                    record, name, f"--video-url uses {{{name}}} but the record has no {name}"
                )
        url = self.url_template.format(**values)
        if len(url) > URL_MAX_LENGTH:
            raise self.error(record, "video_url", f"URL longer than {URL_MAX_LENGTH}")
        return url

    def flush(self) -> None:
        """Write the queued videos, then the queued captions that point at them."""
        if self.new_videos:
            if self.copy is not None:
                self.summary.derived_pending += attach_derived(self.new_videos, self.copy)
            created = Video.objects.bulk_create(self.new_videos, batch_size=BATCH_SIZE)
            ids = {video.key: video.pk for video in created if video.pk is not None}
            missing = [video.key for video in created if video.pk is None]
            keys = Video.objects.filter(dataset=self.dataset).values_list("key", "id")
            ids.update(rows_in(keys, "key", missing))
            for key, pk in ids.items():
                self.videos[key].id = pk
            self.summary.videos_created += len(created)
            self.new_videos = []
        captions = [
            Caption(
                dataset=self.dataset,
                key=record.caption_key,
                text=record.text,
                video_id=self.videos[record.video_key].id,
                split=split,
                is_query=is_query,
                metadata=record.metadata,
            )
            for record, split, is_query in self.pending
        ]
        self.splits.update(split for _, split, _ in self.pending)
        self.summary.queries += sum(is_query for _, _, is_query in self.pending)
        Caption.objects.bulk_create(captions, batch_size=BATCH_SIZE)
        self.summary.captions += len(captions)
        self.pending = []


def _show(value: object) -> str:
    """Render an attribute value in an error message."""
    if value in (None, ""):
        return "(none)"
    if isinstance(value, float):
        return f"{value:g}"
    return repr(value)


class MediaResolver:
    """Finds each video's file under a videos directory and names it relative to MEDIA_ROOT."""

    def __init__(self, videos_dir: Path, dataset_name: str) -> None:
        if not videos_dir.is_dir():
            raise ImportOptionError(f"{videos_dir}: not a directory")
        self.base = videos_dir.resolve()
        self.media_root = Path(settings.MEDIA_ROOT).resolve()
        self.link_path = ""
        if self.base.is_relative_to(self.media_root):
            self.prefix = self.base.relative_to(self.media_root).as_posix()
        else:
            slug = slugify(dataset_name)
            if not slug:
                raise ImportOptionError(
                    f"cannot name a media link after dataset {dataset_name!r}; "
                    "use letters or digits in the name"
                )
            self.link_path = f"{LINK_DIR}/{slug}"
            self.prefix = self.link_path
            link = self.media_root / self.link_path
            if (link.exists() or link.is_symlink()) and link.resolve() != self.base:
                raise ImportOptionError(
                    f"{link} already exists and does not point to {self.base}; "
                    "import under another dataset name or remove the link"
                )
        self._index: dict[str, list[str]] | None = None
        self._escaping: dict[str, str] = {}
        self.paths: dict[str, Path] = {}
        """The file each name :meth:`resolve` returned stands for (the link that makes it
        reachable under MEDIA_ROOT is only made once the import succeeds)."""

    def resolve(self, record: CaptionRecord) -> str:
        """The record's file relative to MEDIA_ROOT, a video (by extension and signature)
        inside the videos directory once links are followed; LookupError when there is none."""
        if record.video_path:
            relative = record.video_path
            _, dot, extension = relative.rpartition("/")[2].rpartition(".")
            if not dot or extension.lower() not in VIDEO_EXTENSIONS:
                raise LookupError(
                    f"{relative!r} is not a video file name (expected one of "
                    f".{', .'.join(VIDEO_EXTENSIONS)})"
                )
            try:
                found = (self.base / relative).is_file()
            except OSError as exc:
                raise LookupError(f"cannot look up {relative[:80]!r}: {exc.strerror}") from None
            if not found:
                raise LookupError(f"unknown video: no file {relative!r} in {self.base}")
        else:
            relative = self.find(record.media_key or record.video_key)
        self.check_file(relative)
        name = f"{self.prefix}/{relative}" if self.prefix and self.prefix != "." else relative
        self.paths[name] = self.base / relative
        return name

    def check_file(self, relative: str) -> None:
        """Refuse a file that leaves the videos directory through a symlink or is no video."""
        path = self.base / relative
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            raise LookupError(f"cannot resolve {relative!r}: {exc}") from None
        if not target.is_relative_to(self.base):
            raise LookupError(f"{relative!r} is a link that leads outside {self.base}")
        try:
            with open(target, "rb") as handle:
                head = handle.read(16)
        except OSError as exc:
            raise LookupError(f"cannot read {relative!r}: {exc.strerror}") from None
        if not is_video_container(head):
            raise LookupError(
                f"{relative!r} is not a video: no MP4/QuickTime, Matroska/WebM or AVI signature"
            )

    def find(self, key: str) -> str:
        """The file named ``<key>.<ext>``, preferring the shallowest and the earlier extension."""
        if self._index is None:
            self._index = self._scan()
        candidates = self._index.get(key)
        if not candidates and key in self._escaping:
            raise LookupError(
                f"{self._escaping[key]!r} is a link that leads outside {self.base}; "
                "copy the video into the directory instead"
            )
        if not candidates:
            raise LookupError(
                f"unknown video {key!r}: no {key}.{{{','.join(VIDEO_EXTENSIONS)}}} in {self.base}"
            )
        ranked = sorted(candidates, key=_rank)
        best = ranked[0]
        for other in ranked[1:]:
            same_depth = other.count("/") == best.count("/")
            if same_depth and os.path.dirname(other) != os.path.dirname(best):
                raise LookupError(f"ambiguous video {key!r}: both {best!r} and {other!r} match")
        return best

    def _scan(self) -> dict[str, list[str]]:
        """Index video files by stem in the directory and two levels below it."""
        index: dict[str, list[str]] = {}
        stack: list[tuple[str, str, int]] = [(str(self.base), "", 0)]
        while stack:
            directory, prefix, depth = stack.pop()
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                relative = prefix + entry.name
                if entry.is_symlink() and not self._inside(entry.path):
                    # Never follow a link out of the videos directory; remember a video
                    # name so that find() can say why it is refused.
                    self._escaping.setdefault(entry.name.rpartition(".")[0], relative)
                    continue
                if entry.is_dir():
                    if depth < SCAN_DEPTH:
                        stack.append((entry.path, relative + "/", depth + 1))
                    continue
                stem, dot, extension = entry.name.rpartition(".")
                if dot and extension.lower() in VIDEO_EXTENSIONS and entry.is_file():
                    index.setdefault(stem, []).append(relative)
        return index

    def _inside(self, path: str) -> bool:
        """True when ``path``, links followed, lies inside the videos directory."""
        try:
            return Path(path).resolve(strict=True).is_relative_to(self.base)
        except (OSError, RuntimeError):
            return False

    def link(self) -> bool:
        """Create the MEDIA_ROOT symlink if one is needed and missing; True if created."""
        if not self.link_path:
            return False
        link = self.media_root / self.link_path
        if link.is_symlink():
            return False
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(self.base, target_is_directory=True)
        return True

    def unlink(self) -> None:
        """Remove the symlink this import created (after a failed import)."""
        link = self.media_root / self.link_path
        if link.is_symlink():
            link.unlink()


def is_video_container(head: bytes) -> bool:
    """True when a file's first bytes are an ISO media box type (mp4, mov), the EBML magic
    (Matroska, WebM) or a RIFF header of form type ``AVI ``."""
    avi = head[:4] == b"RIFF" and head[8:12] == b"AVI "
    return head[4:8] in ISO_BOX_TYPES or head.startswith(EBML_MAGIC) or avi


def _rank(relative: str) -> tuple[int, int, str]:
    """Sort key for candidate files: shallower first, then by extension preference."""
    extension = relative.rpartition(".")[2].lower()
    return relative.count("/"), VIDEO_EXTENSIONS.index(extension), relative

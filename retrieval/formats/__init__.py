"""File formats, one module each; caption formats are registered here by their CLI name."""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from retrieval.formats import epic, generic, msrvtt
from retrieval.formats.records import CaptionRecord


@dataclass(frozen=True)
class CaptionFormat:
    """A caption-file parser, how it locates a record and what it calls the key fields, so
    errors found after parsing (duplicate keys, missing files) name the column to fix."""

    parse: Callable[[Path], Iterator[CaptionRecord]]
    where: str = "line {}"
    caption_field: str = "caption_id"
    video_field: str = "video_id"
    media_field: str = "video_id"
    start_field: str = "start"
    end_field: str = "end"


CAPTION_FORMATS: dict[str, CaptionFormat] = {
    "jsonl": CaptionFormat(generic.parse_jsonl),
    "csv": CaptionFormat(generic.parse_csv),
    "msrvtt-json": CaptionFormat(
        msrvtt.parse_msrvtt_json, where=msrvtt.SENTENCE, caption_field="sen_id"
    ),
    "msrvtt-csv": CaptionFormat(msrvtt.parse_msrvtt_csv, caption_field="key"),
    "epic-csv": CaptionFormat(
        epic.parse_epic_csv,
        caption_field="narration_id",
        video_field="narration_id",
        start_field="start_timestamp",
        end_field="stop_timestamp",
    ),
}

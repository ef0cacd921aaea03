"""EPIC-KITCHENS-100 multi-instance retrieval annotations (``EPIC_100_retrieval_*.csv``).

Each narration is a clip keyed by ``narration_id`` (video and caption), timed by its
``HH:MM:SS.ff`` timestamps and played from its parent video (``video_id``); verb and noun
classes (EPIC's semantic relevance) go to the caption's metadata, parent video and frames
to the video's.
"""

from collections.abc import Iterator
from pathlib import Path

from retrieval.formats.generic import csv_rows
from retrieval.formats.records import (
    CaptionRecord,
    check_clip,
    field_reader,
    parse_class_ids,
    parse_int,
    parse_key,
    parse_optional_str,
    parse_str_list,
    parse_text,
    parse_timestamp,
)

REQUIRED = ("narration_id", "narration", "verb_class", "all_noun_classes")


def parse_epic_csv(path: Path) -> Iterator[CaptionRecord]:
    """Yield one clip-and-caption record per narration row."""
    for line, row in csv_rows(path, REQUIRED):
        value = field_reader(path, line, row)
        key = value("narration_id", parse_key)
        start = value("start_timestamp", parse_timestamp)
        end = value("stop_timestamp", parse_timestamp)
        check_clip(path, line, start, end)
        verb_class = value("verb_class", parse_int)
        metadata: dict = {
            "verb_classes": [verb_class],
            "noun_classes": value("all_noun_classes", parse_class_ids),
        }
        if verb := value("verb", parse_optional_str):
            metadata["verb"] = verb
        nouns = value("all_nouns", parse_str_list)
        if not nouns and (noun := value("noun", parse_optional_str)):
            nouns = [noun]
        if nouns:
            metadata["nouns"] = nouns
        parent = value("video_id", parse_optional_str)
        video_metadata: dict = {}
        if parent:
            video_metadata["parent_video"] = parent
        if participant := value("participant_id", parse_optional_str):
            video_metadata["participant_id"] = participant
        for name in ("start_frame", "stop_frame"):
            if row.get(name, "").strip():
                video_metadata[name] = value(name, parse_int)
        yield CaptionRecord(
            video_key=key,
            caption_key=key,
            text=value("narration", parse_text),
            start=start,
            end=end,
            metadata=metadata,
            video_metadata=video_metadata,
            media_key=parent,
            line=line,
        )

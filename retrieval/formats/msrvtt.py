"""MSR-VTT annotations: the full ``MSRVTT_data.json`` and the 1k-A test CSV.

``MSRVTT_data.json`` holds ``videos`` (id, split, category, YouTube URL and the clip's
``start time``/``end time`` in it) and ``sentences`` (caption, video_id, sen_id). The
``videoN.mp4`` files are already cut to the clip, so the YouTube times go to the video's
metadata (``source_start``/``source_end``, the URL as ``youtube_url``) and only their
difference becomes ``duration``. Errors are located as ``videos[i]`` or ``sentences[i]``.
The 1k-A test file (``key,vid_key,video_id,sentence``) holds one query of split ``test``
per test video.
"""

from collections.abc import Iterator
from pathlib import Path

from retrieval.formats.generic import csv_rows
from retrieval.formats.records import (
    CaptionRecord,
    FormatError,
    check_clip,
    entry_reader,
    parse_field,
    parse_int,
    parse_key,
    parse_optional_str,
    parse_seconds,
    parse_split,
    parse_text,
    read_json_document,
)

SENTENCE = "sentences[{}]"
VIDEO = "videos[{}]"


def parse_msrvtt_json(path: Path) -> Iterator[CaptionRecord]:
    """Yield one record per sentence of an ``MSRVTT_data.json`` file (caption key
    ``str(sen_id)``); a sentence of an unlisted video is an error."""
    document = read_json_document(path)
    if not isinstance(document, dict):
        raise FormatError(path, None, None, "expected a JSON object with videos and sentences")
    for name in ("videos", "sentences"):
        if not isinstance(document.get(name), list):
            raise FormatError(path, None, name, "missing or not a list")
    videos = _videos(path, document["videos"])
    for index, entry in enumerate(document["sentences"]):
        read = entry_reader(path, index, entry, ("caption", "video_id", "sen_id"), where=SENTENCE)
        video_key = read("video_id", parse_key)
        video = videos.get(video_key)
        if video is None:
            raise FormatError(
                path, index, "video_id", f"unknown video {video_key!r}", where=SENTENCE
            )
        yield CaptionRecord(
            video_key=video_key,
            caption_key=str(read("sen_id", parse_int)),
            text=read("caption", parse_text),
            split=video["split"],
            duration=video["duration"],
            video_metadata=video["metadata"],
            line=index,
        )


def _videos(path: Path, entries: list) -> dict[str, dict]:
    """Index the ``videos`` array by video id, validating each entry."""
    videos: dict[str, dict] = {}
    for index, entry in enumerate(entries):
        read = entry_reader(path, index, entry, ("video_id",), where=VIDEO)
        key = read("video_id", parse_key)
        if key in videos:
            message = f"duplicate video {key!r} (first seen at videos[{videos[key]['index']}])"
            raise FormatError(path, index, "video_id", message, where=VIDEO)
        start, end = read("start time", parse_seconds), read("end time", parse_seconds)
        check_clip(path, index, start, end, "end time", where=VIDEO)
        metadata: dict = {}
        if entry.get("category") is not None:
            metadata["category"] = read("category", parse_int)
        if url := read("url", parse_optional_str):
            metadata["youtube_url"] = url
        if start is not None:
            metadata["source_start"] = start
        if end is not None:
            metadata["source_end"] = end
        videos[key] = {
            "index": index,
            "split": read("split", parse_split),
            "duration": round(end - start, 3) if start is not None and end is not None else None,
            "metadata": metadata,
        }
    return videos


def parse_msrvtt_csv(path: Path) -> Iterator[CaptionRecord]:
    """Yield one query record per row of the MSR-VTT 1k-A test CSV (caption key ``key``)."""
    for line, row in csv_rows(path, ("key", "video_id", "sentence")):
        video_metadata = {"vid_key": row["vid_key"].strip()} if row.get("vid_key") else {}
        yield CaptionRecord(
            video_key=parse_field(path, line, "video_id", parse_key, row["video_id"]),
            caption_key=parse_field(path, line, "key", parse_key, row["key"]),
            text=parse_field(path, line, "sentence", parse_text, row["sentence"]),
            split="test",
            is_query=True,
            video_metadata=video_metadata,
            line=line,
        )

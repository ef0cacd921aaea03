"""MSR-VTT annotations: the full ``MSRVTT_data.json`` and the 1k-A test CSV.

``MSRVTT_data.json`` holds ``videos`` (id, split, category, YouTube URL and the clip's
``start time``/``end time`` within that YouTube video) and ``sentences`` (caption,
video_id, sen_id). The distributed ``videoN.mp4`` files are already cut to the clip, so the
YouTube times are kept in the video's metadata (``source_start``/``source_end``, with the
URL as ``youtube_url``) and only their difference becomes ``duration``; ``start``/``end``
stay empty because they would be offsets into the local file. Errors inside the JSON are
located as ``videos[i]`` or ``sentences[i]``.

The 1k-A test file (``key,vid_key,video_id,sentence``) lists one query caption per test
video; its rows are all queries of split ``test``.
"""

from collections.abc import Iterator
from pathlib import Path

from retrieval.formats.generic import csv_rows
from retrieval.formats.records import (
    CaptionRecord,
    FormatError,
    json_type,
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
    """Yield one record per sentence of an ``MSRVTT_data.json`` file.

    The caption key is ``str(sen_id)``; a sentence whose video is not listed under
    ``videos`` is an error located at ``sentences[i]``, field ``video_id``.
    """
    document = read_json_document(path)
    if not isinstance(document, dict):
        raise FormatError(path, None, None, "expected a JSON object with videos and sentences")
    for name in ("videos", "sentences"):
        if not isinstance(document.get(name), list):
            raise FormatError(path, None, name, "missing or not a list")
    videos = _videos(path, document["videos"])
    for index, sentence in enumerate(document["sentences"]):
        if not isinstance(sentence, dict):
            raise FormatError(
                path, index, None, f"expected an object, got {json_type(sentence)}", where=SENTENCE
            )
        for name in ("caption", "video_id", "sen_id"):
            if name not in sentence:
                raise FormatError(path, index, name, "missing required field", where=SENTENCE)
        video_key = parse_field(
            path, index, "video_id", parse_key, sentence["video_id"], where=SENTENCE
        )
        video = videos.get(video_key)
        if video is None:
            raise FormatError(
                path, index, "video_id", f"unknown video {video_key!r}", where=SENTENCE
            )
        yield CaptionRecord(
            video_key=video_key,
            caption_key=str(
                parse_field(path, index, "sen_id", parse_int, sentence["sen_id"], where=SENTENCE)
            ),
            text=parse_field(
                path, index, "caption", parse_text, sentence["caption"], where=SENTENCE
            ),
            split=video["split"],
            duration=video["duration"],
            video_metadata=video["metadata"],
            line=index,
        )


def _videos(path: Path, entries: list) -> dict[str, dict]:
    """Index the ``videos`` array by video id, validating each entry."""
    videos: dict[str, dict] = {}
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise FormatError(
                path, index, None, f"expected an object, got {json_type(entry)}", where=VIDEO
            )
        if "video_id" not in entry:
            raise FormatError(path, index, "video_id", "missing required field", where=VIDEO)
        key = parse_field(path, index, "video_id", parse_key, entry["video_id"], where=VIDEO)
        if key in videos:
            raise FormatError(
                path,
                index,
                "video_id",
                f"duplicate video {key!r} (first seen at videos[{videos[key]['index']}])",
                where=VIDEO,
            )
        start = parse_field(
            path, index, "start time", parse_seconds, entry.get("start time"), where=VIDEO
        )
        end = parse_field(
            path, index, "end time", parse_seconds, entry.get("end time"), where=VIDEO
        )
        if start is not None and end is not None and end <= start:
            raise FormatError(
                path, index, "end time", f"end {end:g} is not after start {start:g}", where=VIDEO
            )
        metadata: dict = {}
        if entry.get("category") is not None:
            metadata["category"] = parse_field(
                path, index, "category", parse_int, entry["category"], where=VIDEO
            )
        url = parse_field(path, index, "url", parse_optional_str, entry.get("url"), where=VIDEO)
        if url:
            metadata["youtube_url"] = url
        if start is not None:
            metadata["source_start"] = start
        if end is not None:
            metadata["source_end"] = end
        videos[key] = {
            "index": index,
            "split": parse_field(
                path, index, "split", parse_split, entry.get("split"), where=VIDEO
            ),
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

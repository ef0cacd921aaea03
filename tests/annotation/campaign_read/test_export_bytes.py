"""Every label export, byte for byte, against a straightforward rendering read row by row.

The exports read hand-written joins and write plain rows with cached escaping (for speed at
FIRE's scale); this renders the same campaign through the ORM, one pair and one label at a
time, with the record writers (``LabelRecord``, ``RawLabel``, ``FireEntry``), and asserts
the bytes are identical: labels, a discounted annotator, an adjudication, proxy auto labels,
awkward text (quotes, a line break, non-ASCII, a spreadsheet trigger) and a Dawid-Skene
resolution's confidences.
"""

import uuid
from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model

from annotation.campaign_read import exports
from annotation.campaign_read.resolution import (
    DAWID_SKENE,
    MAJORITY,
    campaign_resolution,
    resolve_campaign,
)
from annotation.campaigns.service import load_provenance
from annotation.judging import queue, submit
from annotation.models import Judgement, Pair
from annotation.people import service as people
from retrieval.formats import fire_json, labels, trec
from retrieval.label_sets.status import CODES, names
from retrieval.models import Caption
from tests.annotation.campaign_read.test_exports import campaign  # noqa: F401 (the fixture)

NOW = datetime(2025, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)
PAIR_FORMATS = ("csv", "jsonl", "qrels", "raw", "fire-json")


@pytest.fixture
def rich(campaign):  # noqa: F811 (the fixture imported above)
    """The export test's campaign, plus a third annotator whose labels were discounted, a
    spreadsheet trigger in a caption, and two pairs a proxy labelled."""
    Caption.objects.filter(pk=Pair.objects.filter(campaign=campaign).first().caption_id).update(
        text='=SUM(A1) "x", \\ tab\tend'
    )
    third = get_user_model().objects.create_user("zoë", password="pw-annotator-3")
    campaign.max_labels = 3
    campaign.save(update_fields=["max_labels"])
    Pair.objects.filter(campaign=campaign).update(open_slots=1, needed=1)
    for _ in range(4):
        current = queue.assign(campaign, third).current
        if current is None:
            break
        submit.submit(third, current.pair.pk, "relevant", uuid.uuid4(), seconds=1.25, played=0.75)
    assert Judgement.objects.filter(annotator=third).exists()
    people.discount(campaign, third)
    later = list(Pair.objects.filter(campaign=campaign).order_by("-pk")[:2])
    Pair.objects.filter(pk__in=[pair.pk for pair in later]).update(
        auto_label="bow>=0.90", status="relevant"
    )
    # Seconds of video played on a few live labels (the judging page sends it; scripts may not).
    played = Judgement.objects.filter(undone_at__isnull=True).order_by("pk")[:3]
    Judgement.objects.filter(pk__in=[j.pk for j in played]).update(seconds_played=2.5)
    # A time with whole seconds, as well as the ones with a fraction.
    Judgement.objects.filter(pk=Judgement.objects.order_by("pk").first().pk).update(
        created_at=datetime(2024, 5, 1, 10, 0, 0, tzinfo=UTC)
    )
    return campaign


def reference(target, fmt: str, method: str) -> str:
    """The export as the record writers render it from the ORM, row by row."""
    run_names = target.run_names()
    ranks = load_provenance(target)
    override = None
    if method != MAJORITY:
        resolution = campaign_resolution(target, method)
        override = {
            int(pk): (str(status), float(conf))
            for pk, status, conf in zip(
                resolution.pair_ids, names(resolution.status), resolution.confidence, strict=True
            )
        }
    auto = Pair.objects.filter(campaign=target).exclude(auto_label="").exists()
    pairs = []
    for pair in Pair.objects.filter(campaign=target).order_by("pk"):
        status, confidence = pair.status, None
        if override is not None:
            status, confidence = override.get(pair.pk, ("pending", None))
        live = list(
            Judgement.objects.filter(pair=pair, undone_at__isnull=True).order_by("created_at", "pk")
        )
        runs = {
            name: int(rank)
            for name, rank in zip(run_names, ranks[pair.pool_row], strict=True)
            if rank
        }
        pairs.append((pair, status, confidence, live, runs))
    finished = ("relevant", "irrelevant", "disagreement")
    if fmt in ("csv", "jsonl"):
        records = [
            labels.LabelRecord(
                caption_key=pair.caption.key,
                video_key=pair.video.key,
                label=CODES[status],
                votes=len(live),
                adjudicated=bool(pair.adjudicated),
                caption=pair.caption.text,
                annotators=tuple(j.annotator.username for j in live),
                runs=runs,
                auto_label=pair.auto_label,
                confidence=confidence,
            )
            for pair, status, confidence, live, runs in pairs
            if status in finished
        ]
        options = {"auto_label": True} if auto else {}
        if fmt == "jsonl":
            return "".join(labels.jsonl_lines(records, **options))
        if override is not None:
            options["confidence"] = True
        return "".join(labels.csv_lines(records, run_names, **options))
    if fmt == "qrels":
        originals = {
            c.pk: (c.key, c.video.key)
            for c in Caption.objects.filter(
                pk__in={pair.caption_id for pair, *_ in pairs}
            ).order_by("pk")
        }
        rows, written = [], set()
        for pair, status, _, _, _ in pairs:
            if status in ("relevant", "irrelevant"):
                original = pair.caption.video_id == pair.video_id
                if original:
                    written.add(pair.caption_id)
                rows.append(
                    (pair.caption.key, pair.video.key, int(original or status == "relevant"))
                )
        rows += [(key, video, 1) for pk, (key, video) in originals.items() if pk not in written]
        return "".join(trec.qrels_lines(rows))
    if fmt == "raw":

        def raw(j: Judgement, discounted: bool = False) -> labels.RawLabel:
            return labels.RawLabel(
                caption_key=j.pair.caption.key,
                video_key=j.pair.video.key,
                annotator=j.annotator.username,
                label=CODES[j.label],
                seconds=j.seconds,
                created_at=j.created_at.isoformat(),
                discounted=discounted,
                seconds_played=j.seconds_played,
            )

        records = [raw(j) for _, _, _, live, _ in pairs for j in live]
        gone = Judgement.objects.filter(pair__campaign=target, discounted_at__isnull=False)
        records += [raw(j, True) for j in gone.order_by("pair_id", "created_at", "pk")]
        return "".join(labels.raw_lines(records))
    metadata = exports._fire_metadata(target)
    if override is not None:
        metadata["method"] = method
        statuses = [status for status, _ in override.values()]
        metadata["counts"].update(
            annotations=sum(status != "disagreement" for status in statuses),
            relevant=statuses.count("relevant"),
            irrelevant=statuses.count("irrelevant"),
            disagreements=statuses.count("disagreement"),
        )

    def entries(wanted: tuple[str, ...]) -> list[fire_json.FireEntry]:
        return [
            fire_json.FireEntry(
                query=pair.caption.text,
                video_id=pair.video.key,
                label=None if status == "disagreement" else CODES[status],
                annotator_ids=tuple(j.annotator.username for j in live),
                annotator_labels=tuple(CODES[j.label] for j in live),
                response_ids=tuple(str(j.uuid) for j in live),
                queue_ids=(str(pair.pk),),
                models=tuple(runs),
                dataset=target.dataset.name,
                auto_label=pair.auto_label,
                confidence=confidence,
            )
            for pair, status, confidence, live, runs in pairs
            if status in wanted
        ]

    return "".join(
        fire_json.fire_json_chunks(
            metadata, entries(("relevant", "irrelevant")), entries(("disagreement",))
        )
    )


@pytest.mark.parametrize("method", [MAJORITY, DAWID_SKENE])
@pytest.mark.parametrize("fmt", PAIR_FORMATS)
def test_export_bytes_equal_a_row_by_row_rendering(rich, fmt, method, monkeypatch):
    monkeypatch.setattr("django.utils.timezone.now", lambda: NOW)
    if method == DAWID_SKENE:
        resolve_campaign(rich, method=DAWID_SKENE)  # and the default method becomes it
    got = "".join(exports.export_chunks(rich, fmt, method))
    assert got == reference(rich, fmt, method)
    if method == DAWID_SKENE:
        assert got == "".join(exports.export_chunks(rich, fmt))


def test_the_campaign_covers_what_the_comparison_needs(rich):
    pairs = Pair.objects.filter(campaign=rich)
    assert pairs.exclude(auto_label="").count() == 2
    assert pairs.exclude(adjudicated="").exists()
    assert pairs.filter(status="disagreement").exists()
    assert Judgement.objects.filter(pair__campaign=rich, discounted_at__isnull=False).exists()
    raw = "".join(exports.export_chunks(rich, "raw"))
    assert '"discounted": true' in raw and "zoë" in raw
    assert "T10:00:00+00:00" in raw and ".000000+00:00" not in raw


@pytest.mark.parametrize("fmt", PAIR_FORMATS)
def test_export_bytes_are_the_same_read_in_small_windows(rich, fmt, monkeypatch):
    """Many id windows: on PostgreSQL each is read ahead of its writing (pipeline mode)."""
    monkeypatch.setattr("django.utils.timezone.now", lambda: NOW)
    whole = "".join(exports.export_chunks(rich, fmt))
    monkeypatch.setattr(exports, "FIRST_BATCH", 1)
    monkeypatch.setattr(exports, "BATCH", 2)
    assert len(list(exports._windows(rich))) > 3
    assert "".join(exports.export_chunks(rich, fmt)) == whole == reference(rich, fmt, MAJORITY)


def test_queries_between_windows_see_an_ordinary_connection(rich, monkeypatch):
    """Another query while a window is read ahead collects it first: an update counts its
    rows, and the windows read on (what a caller between two chunks, or after abandoning
    an export half-way, may do)."""
    from django.db import connection

    from annotation.campaign_read import export_rows

    sent = []
    send = export_rows._ReadAhead.send
    monkeypatch.setattr(
        export_rows._ReadAhead, "send", lambda self, *a: sent.append(send(self, *a)) or sent[-1]
    )
    windows = [(low, low + 2) for low, _ in exports._windows(rich)]
    windows = [(low, low + 2) for low in range(windows[0][0], windows[0][0] + 12, 2)]
    expected = [export_rows.export_rows(low, high, "labels", rich.pk) for low, high in windows]
    read = export_rows.export_windows(windows, "labels", rich.pk)
    got = [next(read), next(read)]
    first = Pair.objects.filter(campaign=rich).order_by("pk").first()
    assert Pair.objects.filter(pk=first.pk).update(adjudicated=first.adjudicated) == 1
    got += list(read)
    assert got == expected
    # Read ahead on PostgreSQL until the update, plainly after it.
    assert (True in sent and False in sent) == (connection.vendor == "postgresql")
    abandoned = export_rows.export_windows(windows, "labels", rich.pk)
    next(abandoned), next(abandoned)
    assert Pair.objects.filter(campaign=rich).count() == len(list(exports._pair_ids(rich, "pk")))
    del abandoned
    assert Pair.objects.filter(pk=first.pk).update(adjudicated=first.adjudicated) == 1


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "fire-json"])
def test_captions_are_read_per_window_inside_the_read_ahead(rich, fmt, monkeypatch):
    """Each id window reads only the captions its pairs name, one query per window, and on
    PostgreSQL those queries go with the windows' own, so every window is read ahead."""
    from django.db import connection

    from annotation.campaign_read import export_rows

    monkeypatch.setattr("django.utils.timezone.now", lambda: NOW)
    monkeypatch.setattr(exports, "FIRST_BATCH", 1)
    monkeypatch.setattr(exports, "BATCH", 2)
    sent, reads, given = [], [], []
    send = export_rows._ReadAhead.send
    monkeypatch.setattr(
        export_rows._ReadAhead, "send", lambda self, *a: sent.append(send(self, *a)) or sent[-1]
    )
    read, give = exports._WindowCaptions._read, exports._WindowCaptions.next
    monkeypatch.setattr(
        exports._WindowCaptions, "_read", lambda self, *w: reads.append(w) or read(self, *w)
    )
    monkeypatch.setattr(
        exports._WindowCaptions, "next", lambda self: given.append(give(self)) or given[-1]
    )
    assert "".join(exports.export_chunks(rich, fmt)) == reference(rich, fmt, MAJORITY)
    windows = list(exports._windows(rich))
    if fmt == "fire-json":
        windows += list(exports._windows(rich, Pair.Status.DISAGREEMENT))
    assert reads == windows and len(given) == len(windows) > 3
    captions = {
        pk: (key, text) for pk, key, text in Caption.objects.values_list("pk", "key", "text")
    }
    for (low, high), held in zip(windows, given, strict=True):
        named = Pair.objects.filter(campaign=rich, pk__gte=low, pk__lt=high)
        assert held == {pk: captions[pk] for pk in named.values_list("caption_id", flat=True)}
    assert all(sent) and bool(sent) == (connection.vendor == "postgresql")


def test_an_export_abandoned_half_way_leaves_an_ordinary_connection(rich, monkeypatch):
    """A download stopped after its first chunk: the windows' captions queries in flight are
    collected and closed, and the next query runs as usual."""
    from django.db import connection

    monkeypatch.setattr(exports, "FIRST_BATCH", 1)
    monkeypatch.setattr(exports, "BATCH", 2)
    monkeypatch.setattr(exports, "FIRST_LINES", 1)
    chunks = exports.export_chunks(rich, "jsonl")
    assert next(chunks).count("\n") == 1

    def in_pipeline():
        return bool(getattr(getattr(connection.connection, "pgconn", None), "pipeline_status", 0))

    assert in_pipeline() == (connection.vendor == "postgresql")  # the next window in flight
    chunks.close()
    assert not in_pipeline()
    first = Pair.objects.filter(campaign=rich).order_by("pk").first()
    assert Pair.objects.filter(pk=first.pk).update(adjudicated=first.adjudicated) == 1


def test_a_query_between_chunks_keeps_the_windows_captions(rich, monkeypatch):
    """A query between two chunks ends the read-ahead: the captions queries already sent are
    collected with it, and the export reads on, the same bytes."""
    monkeypatch.setattr("django.utils.timezone.now", lambda: NOW)
    monkeypatch.setattr(exports, "FIRST_BATCH", 1)
    monkeypatch.setattr(exports, "BATCH", 2)
    monkeypatch.setattr(exports, "CHUNK_BYTES", 1)
    monkeypatch.setattr(exports, "FIRST_LINES", 1)
    first = Pair.objects.filter(campaign=rich).order_by("pk").first()
    for fmt in ("csv", "jsonl"):
        chunks = []
        for chunk in exports.export_chunks(rich, fmt):
            chunks.append(chunk)
            if len(chunks) == 3:
                assert Pair.objects.filter(pk=first.pk).update(adjudicated=first.adjudicated) == 1
        assert len(chunks) > 4 and "".join(chunks) == reference(rich, fmt, MAJORITY)

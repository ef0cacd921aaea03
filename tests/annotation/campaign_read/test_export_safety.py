"""Campaign exports are safe to open in a spreadsheet: captions, annotator names, gold
explanations and file keys that a spreadsheet would run as formulas are neutralised in every
CSV the campaign pages, export jobs and commands write, numbers stay numbers, and the files
firepool reads back (label CSV, gold CSV) come back as they were stored."""

import csv
import io
import json
import math
import uuid

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotation.gold import service as gold
from annotation.judging import queue, submit
from annotation.models import GoldJudgement, GoldPair, Pair
from jobs.models import Job
from retrieval.formats import labels
from retrieval.formats.csv_safety import unescape
from retrieval.label_sets.service import import_label_file, load_judged
from retrieval.models import Caption, Run
from tests.factories import make_campaign

HOSTILE = ('=HYPERLINK("http://x","y")', "+1", "-1+2", "@SUM(A1)", "\tx", "\rx")
"""Text a spreadsheet would evaluate (OWASP's triggers), stored as names and captions."""


def parse(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


def assert_numeric(value: str) -> None:
    assert not value.startswith("'"), value
    assert math.isfinite(float(value)), value


def download(response) -> str:
    assert response.status_code == 200, response.status_code
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return body.decode("utf-8")


@pytest.fixture
def hostile(people):
    """Six queries captioned with hostile text, every pair labelled by two annotators whose
    names, like the run's, are hostile; the decided pairs promoted to gold by an admin with a
    hostile name and a hostile explanation, and answered by the annotators."""
    campaign = make_campaign(n_queries=len(HOSTILE), depth=2, rate=1.0)
    for caption, text in zip(
        Caption.objects.filter(dataset=campaign.dataset).order_by("pk"), HOSTILE, strict=True
    ):
        Caption.objects.filter(pk=caption.pk).update(text=text)
    Run.objects.filter(dataset=campaign.dataset).update(name="@SUM(A1)")
    first, second = people["annotator"], people["other"]
    for user in (first, second):
        while (current := queue.assign(campaign, user).current) is not None:
            relevant = current.pair.video.key in ("v0", "v1", "v2")  # they agree
            label = "relevant" if relevant else "irrelevant"
            submit.submit(user, current.pair.pk, label, uuid.uuid4(), 3.0)
    gold.promote(
        campaign, all_decided=True, explanation=HOSTILE[0], guideline=HOSTILE[1], user=first
    )
    for gold_pair in GoldPair.objects.filter(campaign=campaign):
        GoldJudgement.objects.create(
            gold_pair=gold_pair, annotator=second, label="irrelevant", seconds=2.5
        )
    User = get_user_model()
    User.objects.filter(pk=first.pk).update(username=HOSTILE[2])
    User.objects.filter(pk=second.pk).update(username=HOSTILE[3])
    campaign.refresh_from_db()
    return campaign


def check_label_csv(text: str, tmp_path, campaign) -> None:
    rows = parse(text)
    assert rows and {row["caption"] for row in rows} == {"'" + t for t in HOSTILE}
    for row in rows:
        names = unescape(row["annotators"]).split(";")
        assert set(names) <= {HOSTILE[2], HOSTILE[3]} and names
        assert row["annotators"].startswith("'")  # both names start with a trigger
        assert_numeric(row["labels"])
        if row["rank:@SUM(A1)"]:
            assert_numeric(row["rank:@SUM(A1)"])
    # firepool reads its own file back as stored.
    path = tmp_path / "back.csv"
    path.write_text(text, encoding="utf-8", newline="")
    records = list(labels.read_csv(path))
    assert {r.caption for r in records} == set(HOSTILE)
    assert {name for r in records for name in r.annotators} == {HOSTILE[2], HOSTILE[3]}
    assert {name for r in records for name in r.runs} == {"@SUM(A1)"}
    back = load_judged(import_label_file(campaign.dataset, path, "csv", name="back").label_set)
    assert (
        len(back.relevance)
        == Pair.objects.filter(campaign=campaign).exclude(status="pending").count()
    )


def test_campaign_csv_export_neutralises_text(hostile, people, client, tmp_path):
    client.force_login(people["admin"])
    text = download(client.get(f"/campaigns/{hostile.pk}/export/csv/"))
    check_label_csv(text, tmp_path, hostile)


def test_export_job_csv_neutralises_text(
    hostile, people, client, tmp_path, settings, django_capture_on_commit_callbacks
):
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}
    settings.FIREPOOL_JOB_OUTPUT_DIR = tmp_path / "job-output"
    client.force_login(people["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post("/jobs/start/export/", {"campaign": hostile.name, "format": "csv"})
    assert started.status_code == 302, started.content
    job = Job.objects.get()
    assert job.status == Job.Status.SUCCEEDED, job.error
    text = download(client.get(f"/jobs/{job.pk}/output/"))
    check_label_csv(text, tmp_path, hostile)


def test_export_labels_command_csv_neutralises_text(hostile, tmp_path):
    path = tmp_path / "labels.csv"
    call_command("export_labels", campaign=hostile.name, format="csv", output=str(path))
    check_label_csv(path.read_bytes().decode("utf-8"), tmp_path, hostile)


def test_gold_csv_export_neutralises_text_and_reads_back(hostile, people, client, tmp_path):
    client.force_login(people["admin"])
    text = download(client.get(f"/campaigns/{hostile.pk}/export/gold-csv/"))
    rows = parse(text)
    assert rows
    for row in rows:
        assert row["caption"] in {"'" + t for t in HOSTILE}
        assert (row["explanation"], row["guideline"]) == ("'" + HOSTILE[0], "'" + HOSTILE[1])
        assert (row["created_by"], row["annotator"]) == ("'" + HOSTILE[2], "'" + HOSTILE[3])
        assert_numeric(row["seconds"])
    path = tmp_path / "gold.csv"
    path.write_text(text, encoding="utf-8", newline="")
    twin = make_campaign()
    twin.dataset = hostile.dataset
    twin.save()
    assert gold.import_gold(twin, path).created == len(
        {(r["caption_key"], r["video_key"]) for r in rows}
    )
    assert set(GoldPair.objects.filter(campaign=twin).values_list("explanation", "guideline")) == {
        (HOSTILE[0], HOSTILE[1])
    }


def test_resolve_labels_csv_neutralises_keys(tmp_path):
    raw = tmp_path / "raw.jsonl"
    raw.write_text(
        "".join(
            json.dumps({"caption_id": key, "video_id": "-v", "annotator": a, "label": label}) + "\n"
            for key in HOSTILE[:4]  # keys are stripped: no leading tab or return
            for a, label in (("a", "relevant"), ("b", "relevant"), ("c", "irrelevant"))
        ),
        encoding="utf-8",
    )
    out = tmp_path / "resolved.csv"
    call_command("resolve_labels", labels=raw, format="csv", output=out, stderr=io.StringIO())
    rows = parse(out.read_bytes().decode("utf-8"))
    assert [row["caption_id"] for row in rows] == ["'" + key for key in HOSTILE[:4]]
    assert {row["video_id"] for row in rows} == {"'-v"}
    for row in rows:
        assert_numeric(row["labels"])
        assert_numeric(row["confidence"])

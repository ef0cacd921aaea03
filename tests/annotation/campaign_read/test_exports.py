"""Resolution into a label set, every export format, and the imports that read them back."""

import csv
import io
import json
import uuid

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db.models import Count

from annotation.campaign_read.exports import EXPORT_FORMATS, export_to_file
from annotation.campaign_read.labels import campaign_judged
from annotation.campaign_read.resolution import resolve_campaign
from annotation.campaigns.service import CampaignSpec, create_campaign, load_provenance
from annotation.judging import escalations, queue, submit
from annotation.models import Pair
from config import roles
from retrieval.formats import fire_json, trec
from retrieval.label_sets import judged
from retrieval.label_sets.service import import_label_file, load_judged
from retrieval.models import Caption, Dataset, LabelSet, RetrievalModel, Video
from retrieval.scoring.rescoring_service import rescore_dataset
from retrieval.search.runs import RankedLists
from retrieval.search.runs_service import store_run

N_QUERIES = 4
DEPTH = 3
TEXTS = [
    'a man, "quoted", plays a red guitar',
    "two dogs run on the beach",
    "une femme chante — café",
    "a child rides a bike\nat night",
]


@pytest.fixture
def campaign(db):
    """A campaign on 4 queries x 3 videos, every pair labelled twice, ties left as disagreements.

    Annotator a0 says relevant when (query + rank) is even, a1 agrees except on the first pair
    of each query, so each query has one disagreement; one of those is adjudicated relevant.
    """
    dataset = Dataset.objects.create(name="exports")
    videos = Video.objects.bulk_create(
        [Video(dataset=dataset, key=f"vid{i}", split="test") for i in range(8)]
    )
    captions = Caption.objects.bulk_create(
        [
            Caption(
                dataset=dataset,
                key=f"cap{q}",
                text=TEXTS[q],
                video=videos[q],
                split="test",
                is_query=True,
            )
            for q in range(N_QUERIES)
        ]
    )
    runs = []
    for m, shift in (("alpha", 0), ("beta", 1)):
        model = RetrievalModel.objects.create(dataset=dataset, name=m, source="run")
        items = np.array(
            [[videos[(q + r + shift) % 8].pk for r in range(DEPTH)] for q in range(N_QUERIES)]
        )
        scores = -np.arange(DEPTH, dtype=float)[None].repeat(N_QUERIES, 0)
        runs.append(
            store_run(model, m, RankedLists(np.array([c.pk for c in captions]), items, scores))
        )
    spec = CampaignSpec(name="exports-campaign", depth=DEPTH, second_label_rate=1.0, max_labels=2)
    campaign = create_campaign(dataset, runs, spec)
    User = get_user_model()
    annotators = [User.objects.create_user(f"a{i}", password="pw-annotator-1") for i in range(2)]
    first_of_query: dict[int, int] = {}
    for pair in Pair.objects.filter(campaign=campaign).order_by("position"):
        first_of_query.setdefault(pair.caption_id, pair.pk)
    for index, annotator in enumerate(annotators):
        while True:
            current = queue.assign(campaign, annotator).current
            if current is None:
                break
            pair = current.pair
            relevant = (pair.caption_id + pair.video_id) % 2 == 0
            if index == 1 and first_of_query[pair.caption_id] == pair.pk:
                relevant = not relevant
            label = "relevant" if relevant else "irrelevant"
            submit.submit(annotator, pair.pk, label, uuid.uuid4(), seconds=2.0 + index)
    admin = User.objects.create_superuser("boss", password="pw-admin-12345")
    disputed = Pair.objects.filter(campaign=campaign, status="disagreement").order_by("pk")
    escalations.adjudicate(disputed.first(), admin, "relevant")
    return campaign


def test_statuses_follow_the_policy(campaign):
    statuses = dict(
        Pair.objects.filter(campaign=campaign).values_list("status").annotate(n=Count("pk"))
    )
    pairs = Pair.objects.filter(campaign=campaign).count()
    # One disagreement per query, one of them adjudicated; nothing pending.
    assert statuses.get("disagreement") == N_QUERIES - 1
    assert statuses.get("pending") is None
    assert sum(statuses.values()) == pairs


def test_resolve_campaign_stores_final_labels(campaign):
    label_set = resolve_campaign(campaign)
    pairs = load_judged(label_set)
    assert label_set.source == "campaign"
    assert label_set.pair_count == Pair.objects.filter(campaign=campaign).count()
    assert label_set.disagreement_count == N_QUERIES - 1
    adjudicated = Pair.objects.get(campaign=campaign, adjudicated="relevant")
    row = np.flatnonzero(
        (pairs.caption_ids == adjudicated.caption_id) & (pairs.video_ids == adjudicated.video_id)
    )
    assert pairs.relevance[row].tolist() == [judged.RELEVANT]
    assert pairs.adjudicated[row].tolist() == [True]
    assert pairs.votes[row].tolist() == [2]
    # Resolving again replaces the set rather than failing or duplicating.
    assert resolve_campaign(campaign).pk != label_set.pk
    assert LabelSet.objects.filter(dataset=campaign.dataset).count() == 1


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_pair_exports_round_trip_without_loss(campaign, tmp_path, fmt):
    path = tmp_path / f"labels.{fmt}"
    export_to_file(campaign, fmt, path)
    report = import_label_file(campaign.dataset, path, fmt, name=f"back-{fmt}")
    expected, back = campaign_judged(campaign), load_judged(report.label_set)
    for name in ("caption_ids", "video_ids", "relevance", "votes", "adjudicated"):
        assert getattr(back, name).tolist() == getattr(expected, name).tolist(), name


def test_csv_and_jsonl_carry_text_annotators_and_ranks(campaign, tmp_path):
    export_to_file(campaign, "csv", tmp_path / "l.csv")
    with open(tmp_path / "l.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert {row["caption"] for row in rows} == set(TEXTS)
    assert set(rows[0]) >= {"caption_key", "video_key", "label", "labels", "annotators"}
    assert {"rank:alpha", "rank:beta"} <= set(rows[0])
    ranks = load_provenance(campaign)
    pair = Pair.objects.filter(campaign=campaign).order_by("position").first()
    first = next(
        r for r in rows if r["caption_key"] == pair.caption.key and r["video_key"] == pair.video.key
    )
    assert first["rank:alpha"] == (str(ranks[pair.position, 0]) if ranks[pair.position, 0] else "")
    assert first["annotators"].split(";") == ["a0", "a1"]
    export_to_file(campaign, "jsonl", tmp_path / "l.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "l.jsonl").read_text().splitlines()]
    assert len(lines) == len(rows)
    assert all(set(line["runs"]) <= {"alpha", "beta"} and line["runs"] for line in lines)


def test_qrels_keep_negatives_and_originals(campaign, tmp_path):
    path = tmp_path / "labels.qrels"
    export_to_file(campaign, "qrels", path)
    qrels = trec.read_qrels(path)
    expected = campaign_judged(campaign)
    captions = dict(Caption.objects.values_list("pk", "key"))
    videos = dict(Video.objects.values_list("pk", "key"))
    for caption, video, rel in zip(
        expected.caption_ids, expected.video_ids, expected.relevance, strict=True
    ):
        got = qrels[captions[int(caption)]].get(videos[int(video)])
        if rel == judged.DISAGREEMENT:
            assert got is None  # kept apart: neither relevant nor judged
        else:
            assert got == int(rel)
    assert 0 in {rel for judged_ in qrels.values() for rel in judged_.values()}
    for caption in Caption.objects.filter(dataset=campaign.dataset):
        assert qrels[caption.key][caption.video.key] == 1
    report = import_label_file(campaign.dataset, path, "qrels", name="back-qrels")
    back = load_judged(report.label_set)
    assert report.label_set.relevant_count == sum(
        rel for judged_ in qrels.values() for rel in judged_.values()
    )
    assert len(back) == sum(len(judged_) for judged_ in qrels.values())


def test_fire_json_round_trips_labels_and_disagreements(campaign, tmp_path):
    path = tmp_path / "labels.fire.json"
    export_to_file(campaign, "fire-json", path)
    document = json.loads(path.read_text())
    assert set(document) >= {"annotations", "disagreements", "dataset", "campaign"}
    entry = document["annotations"][0]
    assert set(entry) == {
        "annotator_ids",
        "label",
        "video_id",
        "query",
        "annotator_labels",
        "response_ids",
        "queue_ids",
        "models",
        "dataset",
    }
    assert len(document["disagreements"]) == N_QUERIES - 1
    assert all("label" not in item for item in document["disagreements"])
    parsed = fire_json.read_fire_json(path)
    assert (
        len(parsed.annotations) + len(parsed.disagreements)
        == Pair.objects.filter(campaign=campaign).count()
    )
    report = import_label_file(campaign.dataset, path, "fire-json", name="back-fire")
    assert report.unmatched_queries == [] and report.unmatched_videos == []
    expected, back = campaign_judged(campaign), load_judged(report.label_set)
    for name in ("caption_ids", "video_ids", "relevance", "votes"):
        assert getattr(back, name).tolist() == getattr(expected, name).tolist(), name


def test_fire_json_reports_captions_it_cannot_match(campaign, tmp_path):
    path = tmp_path / "f.json"
    entries = [
        fire_json.FireEntry(query=TEXTS[0], video_id="vid5", label=1),
        fire_json.FireEntry(query="a caption from another dataset", video_id="vid1", label=1),
        fire_json.FireEntry(query=TEXTS[1], video_id="nope", label=0),
    ]
    path.write_text("".join(fire_json.fire_json_chunks({"dataset": "x"}, entries, [])))
    out = io.StringIO()
    call_command(
        "import_labels", str(path), dataset="exports", format="fire-json", json=True, stdout=out
    )
    summary = json.loads(out.getvalue())
    assert summary["pairs"] == 1 and summary["relevant"] == 1
    assert summary["unmatched_queries"] == ["a caption from another dataset"]
    assert summary["unmatched_videos"] == ["nope"]


def test_raw_export_lists_every_label_and_resolves_back(campaign, tmp_path):
    path = tmp_path / "labels.raw.jsonl"
    export_to_file(campaign, "raw", path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == 2 * Pair.objects.filter(campaign=campaign).count()
    assert {line["annotator"] for line in lines} == {"a0", "a1"}
    assert all(line["seconds"] in (2.0, 3.0) and line["created_at"] for line in lines)
    report = import_label_file(campaign.dataset, path, "raw", name="back-raw")
    expected, back = campaign_judged(campaign), load_judged(report.label_set)
    assert back.caption_ids.tolist() == expected.caption_ids.tolist()
    # Raw labels carry no adjudication: the adjudicated pair reads back as the tie it was.
    plain = ~expected.adjudicated
    assert back.relevance[plain].tolist() == expected.relevance[plain].tolist()
    assert back.relevance[~plain].tolist() == [judged.DISAGREEMENT]


def test_export_labels_command_writes_every_format(campaign, tmp_path):
    for fmt in EXPORT_FORMATS:
        target = tmp_path / f"out.{fmt}"
        call_command(
            "export_labels",
            campaign=campaign.name,
            format=fmt,
            output=str(target),
            stderr=io.StringIO(),
        )
        # A campaign without gold pairs has an empty gold (jsonl) export.
        assert target.stat().st_size > 0 or fmt == "gold"
    with pytest.raises(CommandError, match="no campaign named 'missing'"):
        call_command("export_labels", campaign="missing", format="csv", output=str(target))


def test_bad_import_names_line_and_field_and_writes_nothing(campaign, tmp_path):
    path = tmp_path / "bad.qrels"
    path.write_text("cap0 0 vid0 1\ncap0 0 vid1 0\nghost 0 vid2 1\n")
    with pytest.raises(CommandError, match=r"bad.qrels, line 3, field 'qid': no caption"):
        call_command("import_labels", str(path), dataset="exports", format="qrels")
    path.write_text("cap0 0 vid0 1\ncap0 0 vid1 maybe\n")
    with pytest.raises(CommandError, match=r"line 2, field 'rel'"):
        call_command("import_labels", str(path), dataset="exports", format="qrels")
    assert not LabelSet.objects.exists()


def test_import_refuses_to_overwrite_unless_asked(campaign, tmp_path):
    path = tmp_path / "set.qrels"
    path.write_text("cap0 0 vid3 1\n")
    call_command(
        "import_labels", str(path), dataset="exports", format="qrels", stdout=io.StringIO()
    )
    with pytest.raises(CommandError, match="already has a label set named 'set'"):
        call_command("import_labels", str(path), dataset="exports", format="qrels")
    path.write_text("cap0 0 vid3 0\ncap1 0 vid4 1\n")
    call_command(
        "import_labels",
        str(path),
        dataset="exports",
        format="qrels",
        replace=True,
        stdout=io.StringIO(),
    )
    assert LabelSet.objects.get(name="set").pair_count == 2


def test_imported_label_set_rescores_a_run(campaign, tmp_path):
    """Correct@1 with an imported qrels: extra positives found by annotators count as hits."""
    run = campaign.runs.get(name="beta")
    path = tmp_path / "fire.qrels"
    export_to_file(campaign, "qrels", path)
    label_set = import_label_file(campaign.dataset, path, "qrels").label_set
    scored = rescore_dataset(campaign.dataset, label_set, [run.name])
    judgements = scored.result.blocks["corrected"][run.name].judgements
    hits, judged_mask = judgements.relevant, judgements.judged
    qrels = trec.read_qrels(path)
    captions = dict(Caption.objects.values_list("pk", "key"))
    videos = dict(Video.objects.values_list("pk", "key"))
    for q, caption in enumerate(scored.caption_ids.tolist()):
        for r, video in enumerate(scored.runs[run.name][q].tolist()):
            rel = qrels[captions[caption]].get(videos[video])
            assert hits[q, r] == (rel == 1)
            assert judged_mask[q, r] == (rel is not None)
    # beta never ranks a caption's own video first, so originals alone give Correct@1 = 0.
    assert hits[:, 0].mean() > 0


@pytest.fixture
def people(db):
    roles.ensure_groups()
    User = get_user_model()
    made = {}
    for role in roles.ROLES:
        user = User.objects.create_user(f"{role}-user", password="pw-role-12345")
        user.groups.add(roles.ensure_groups()[role])
        if role in roles.STAFF_ROLES:
            user.is_staff = True
            user.save()
        made[role] = user
    return made


def test_only_admins_export(campaign, people, client):
    url = f"/campaigns/{campaign.pk}/export/csv/"
    assert client.get(url).status_code == 302  # to the login page
    for role, expected in (("annotator", 403), ("researcher", 403), ("admin", 200)):
        client.force_login(people[role])
        response = client.get(url)
        assert response.status_code == expected, role
    assert response["Content-Disposition"] == 'attachment; filename="exports-campaign.csv"'
    body = b"".join(response.streaming_content).decode()
    assert body.startswith("caption_key,video_key")
    assert client.get(f"/campaigns/{campaign.pk}/export/xml/").status_code == 404


def test_researcher_sees_agreement_with_intervals(campaign, people, client):
    client.force_login(people["annotator"])
    assert client.get(f"/campaigns/{campaign.pk}/agreement/").status_code == 403
    client.force_login(people["researcher"])
    page = client.get(f"/campaigns/{campaign.pk}/agreement/").content.decode()
    assert "Krippendorff" in page and "95% interval" in page
    assert "<svg" in page
    overview = client.get("/campaigns/").content.decode()
    assert "exports-campaign" in overview and "/export/csv/" not in overview


def test_admin_adjudicates_from_the_page(campaign, people, client):
    url = f"/campaigns/{campaign.pk}/adjudicate/"
    client.force_login(people["researcher"])
    assert client.get(url).status_code == 403
    client.force_login(people["admin"])
    page = client.get(url).content.decode()
    waiting = Pair.objects.filter(campaign=campaign, status="disagreement", adjudicated="")
    assert page.count("<video") == waiting.count()
    pair = waiting.first()
    response = client.post(url, {"pair": pair.pk, "decision": "irrelevant"})
    assert response.status_code == 302
    pair.refresh_from_db()
    assert pair.adjudicated == "irrelevant" and pair.status == "irrelevant"
    assert pair.adjudicated_by == people["admin"]
    client.post(f"/campaigns/{campaign.pk}/resolve/")
    label_set = LabelSet.objects.get(name=campaign.name)
    assert label_set.disagreement_count == waiting.count()


def test_failed_export_leaves_no_partial_file(campaign, tmp_path, monkeypatch):
    def broken(rows, run_names, **options):
        yield "caption_key,video_key\n"
        raise ValueError("annotator 'a;b' contains ';'")

    monkeypatch.setattr("retrieval.formats.labels.csv_pair_lines", broken)
    target = tmp_path / "out.csv"
    target.write_text("an earlier export\n")
    with pytest.raises(CommandError, match="cannot export 'exports-campaign'"):
        call_command("export_labels", campaign=campaign.name, format="csv", output=str(target))
    assert target.read_text() == "an earlier export\n"
    assert not list(tmp_path.glob("*.partial"))

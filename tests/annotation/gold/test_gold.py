"""Gold pairs: importing a file (all or nothing, errors naming file, line and field),
promoting decided pairs, the admin-only gold export, and gold answers never being labels."""

import json

import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, transaction

from annotation.campaign_read.exports import export_to_file
from annotation.campaign_read.reporting import campaign_report
from annotation.gold import service as gold
from annotation.judging import escalations
from annotation.models import GoldJudgement, GoldPair, Judgement, Pair
from retrieval.formats.records import FormatError
from tests.factories import make_campaign


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_import_csv_and_jsonl(tmp_path, db):
    campaign = make_campaign()
    csv_file = write(
        tmp_path,
        "gold.csv",
        "caption_key,video_key,label,explanation,guideline\n"
        'c0,v5,relevant,"It shows all of it.",Every element must be present.\n'
        "c1,v6,irrelevant,No dog.,\n",
    )
    result = gold.import_gold(campaign, csv_file)
    assert (result.created, result.relevant) == (2, 1)
    jsonl = write(
        tmp_path,
        "more.jsonl",
        json.dumps(
            {"caption_key": "c2", "video_key": "v7", "label": "irrelevant", "explanation": "x"}
        )
        + "\n\n",
    )
    assert gold.import_gold(campaign, jsonl).created == 1
    rows = {(g.caption_key, g.video_key): g for g in gold.gold_summaries(campaign)}
    assert rows[("c0", "v5")].label == "relevant"
    assert rows[("c0", "v5")].guideline == "Every element must be present."
    assert rows[("c1", "v6")].guideline == ""
    assert rows[("c2", "v7")].source == "imported"


@pytest.mark.parametrize(
    ("row", "field", "words"),
    [
        ("c1,v99,relevant,why", "video_key", "no video with key 'v99'"),
        ("c99,v1,relevant,why", "caption_key", "no caption with key 'c99'"),
        ("c1,v1,maybe,why", "label", "unknown label"),
        ("c1,v1,relevant,", "explanation", "needs an explanation"),
        ("c1,v1,disagreement,why", "label", "cannot be 'disagreement'"),
        ("c0,v5,relevant,again", "video_key", "already listed on line 2"),
    ],
)
def test_bad_gold_file_names_file_line_and_field_and_writes_nothing(
    tmp_path, db, row, field, words
):
    campaign = make_campaign()
    path = write(
        tmp_path,
        "bad.csv",
        "caption_key,video_key,label,explanation\nc0,v5,relevant,fine\n" + row + "\n",
    )
    with pytest.raises(FormatError) as error:
        gold.import_gold(campaign, path)
    message = str(error.value)
    assert "bad.csv" in message and "line 3" in message and f"field '{field}'" in message
    assert words in message
    assert not GoldPair.objects.exists()


def test_import_refuses_a_pair_already_gold(tmp_path, db):
    campaign = make_campaign()
    path = write(tmp_path, "g.csv", "caption_key,video_key,label,explanation\nc0,v5,relevant,a\n")
    gold.import_gold(campaign, path)
    other = write(
        tmp_path,
        "g2.csv",
        "caption_key,video_key,label,explanation\nc1,v1,relevant,a\nc0,v5,irrelevant,b\n",
    )
    with pytest.raises(FormatError, match="line 3.*already a gold pair"):
        gold.import_gold(campaign, other)
    assert GoldPair.objects.count() == 1


def test_missing_column_is_named(tmp_path, db):
    campaign = make_campaign()
    path = write(tmp_path, "g.csv", "caption_key,video_key,label\nc0,v5,relevant\n")
    with pytest.raises(FormatError, match="line 1, field 'explanation': missing required column"):
        gold.import_gold(campaign, path)


def test_promote_decided_pairs(judged, people):
    campaign = judged
    pairs = {p.video.key: p for p in Pair.objects.filter(campaign=campaign).select_related("video")}
    tied = next(p for key, p in pairs.items() if key not in ("v0", "v1", "v2", "v3"))
    escalations.adjudicate(tied, people["admin"], "irrelevant")
    unanimous = Pair.objects.filter(campaign=campaign, video__key__in=("v0", "v1", "v2", "v3"))
    expected = unanimous.count() + 1
    result = gold.promote(campaign, all_decided=True, user=people["admin"])
    assert (result.promoted, result.already_gold) == (expected, 0)
    by_pair = {g.pair_id: g for g in GoldPair.objects.filter(campaign=campaign)}
    assert by_pair[tied.pk].label == "irrelevant"
    assert by_pair[tied.pk].explanation == "Adjudicated irrelevant by boss."
    for pair in unanimous:
        wanted = "relevant" if pair.video.key in ("v0", "v1") else "irrelevant"
        assert by_pair[pair.pk].label == wanted
        assert by_pair[pair.pk].explanation == f"All 2 annotators judged it {wanted}."
        assert by_pair[pair.pk].source == "promoted"
    # Again: nothing new, everything already gold: refused, not "0 pairs promoted".
    with pytest.raises(gold.GoldError, match="is gold already") as refused:
        gold.promote(campaign, all_decided=True)
    assert refused.value.status == 409
    assert GoldPair.objects.filter(campaign=campaign).count() == expected


def test_promote_refuses_undecided_pairs_and_writes_nothing(judged):
    campaign = judged
    decided = Pair.objects.filter(campaign=campaign, video__key="v0").first()
    undecided = (
        Pair.objects.filter(campaign=campaign).exclude(video__key__in=("v0", "v1", "v2", "v3"))
    ).first()
    with pytest.raises(gold.GoldError, match=f"pairs {undecided.pk} are not decided"):
        gold.promote(campaign, pair_ids=[decided.pk, undecided.pk])
    with pytest.raises(gold.GoldError, match="not in campaign"):
        gold.promote(campaign, pair_ids=[10**9])
    assert not GoldPair.objects.exists()
    result = gold.promote(campaign, pair_ids=[decided.pk], explanation="All of it is there.")
    assert result.promoted == 1
    assert GoldPair.objects.get().explanation == "All of it is there."


def test_gold_answers_never_count_as_labels(judged, people, tmp_path):
    """A gold answer on a promoted pair changes no count, no agreement figure and no label
    export; only the gold export lists it."""
    campaign = judged
    pair = Pair.objects.filter(campaign=campaign, video__key="v0").first()
    gold.promote(campaign, pair_ids=[pair.pk])
    gold_pair = GoldPair.objects.get()
    before_pair = Pair.objects.values("label_count", "relevant_count", "status").get(pk=pair.pk)
    before_report = campaign_report(campaign, resamples=10).to_json()
    exports_before = {}
    for fmt in ("csv", "jsonl", "raw", "fire-json", "qrels"):
        export_to_file(campaign, fmt, tmp_path / f"before.{fmt}")
        exports_before[fmt] = (tmp_path / f"before.{fmt}").read_text().replace(campaign.name, "C")
    from django.contrib.auth import get_user_model

    stranger = get_user_model().objects.create_user("stranger-gold")
    GoldJudgement.objects.create(
        gold_pair=gold_pair, annotator=stranger, label="irrelevant", seconds=2.0
    )
    assert Pair.objects.values("label_count", "relevant_count", "status").get(pk=pair.pk) == (
        before_pair
    )
    assert not Judgement.objects.filter(annotator=stranger).exists()
    (summary,) = gold.gold_summaries(campaign)
    assert (summary.answers, summary.correct) == (1, 0)
    after_report = campaign_report(campaign, resamples=10).to_json()
    assert after_report == before_report
    for fmt, text in exports_before.items():
        export_to_file(campaign, fmt, tmp_path / f"after.{fmt}")
        after = (tmp_path / f"after.{fmt}").read_text().replace(campaign.name, "C")
        if fmt == "fire-json":  # the creation time differs
            after = "\n".join(line for line in after.splitlines() if '"created"' not in line)
            text = "\n".join(line for line in text.splitlines() if '"created"' not in line)
        assert after == text, fmt
        assert "stranger-gold" not in after
    export_to_file(campaign, "gold", tmp_path / "gold.jsonl")
    (line,) = (tmp_path / "gold.jsonl").read_text().splitlines()
    row = json.loads(line)
    assert row["label"] == "relevant" and row["source"] == "promoted"
    assert [
        (j["annotator"], j["label"], j["correct"], j["purpose"]) for j in row["judgements"]
    ] == [("stranger-gold", "irrelevant", False, "queue")]
    export_to_file(campaign, "gold-csv", tmp_path / "gold.csv")
    lines = (tmp_path / "gold.csv").read_text().splitlines()
    assert lines[0].startswith("caption_key,video_key,caption,label,explanation")
    assert len(lines) == 2 and ",stranger-gold,irrelevant,false,2.0," in lines[1]


def test_gold_export_reads_back_as_a_gold_file(judged, tmp_path):
    campaign = judged
    gold.promote(campaign, all_decided=True, guideline="Err toward not relevant.")
    for fmt, name in (("gold", "g.jsonl"), ("gold-csv", "g.csv")):
        export_to_file(campaign, fmt, tmp_path / name)
        twin = make_campaign()
        twin.dataset = campaign.dataset
        twin.save()
        result = gold.import_gold(twin, tmp_path / name)
        assert result.created == GoldPair.objects.filter(campaign=campaign).count()
        mine = set(
            GoldPair.objects.filter(campaign=campaign).values_list(
                "caption_id", "video_id", "label", "explanation", "guideline"
            )
        )
        theirs = set(
            GoldPair.objects.filter(campaign=twin).values_list(
                "caption_id", "video_id", "label", "explanation", "guideline"
            )
        )
        assert mine == theirs


def test_gold_command(judged, tmp_path, capsys):
    campaign = judged
    path = write(
        tmp_path,
        "g.csv",
        "caption_key,video_key,label,explanation\nc0,v8,irrelevant,Not there.\n",
    )
    call_command("gold", "import", "--campaign", campaign.name, str(path))
    printed = capsys.readouterr()
    assert "Added 1 gold pairs" in printed.out
    # Progress lines: reading the file, then writing it.
    assert "reading g.csv…" in printed.err and "g.csv: 1 of about 2" in printed.err
    assert "writing 1 gold pairs and their tasks…" in printed.err
    call_command("gold", "--campaign", campaign.name, "--promote-decided")
    assert "Promoted" in capsys.readouterr().out
    call_command("gold", "list", "--campaign", campaign.name, "--format", "json")
    listed = json.loads(capsys.readouterr().out)
    assert {row["source"] for row in listed} == {"imported", "promoted"}
    assert listed[0]["caption_key"] == "c0" and listed[0]["video_key"] == "v8"
    out = tmp_path / "out.jsonl"
    call_command("gold", "export", "--campaign", campaign.name, "-o", str(out))
    assert len(out.read_text().splitlines()) == len(listed)
    call_command("gold", "export", "--campaign", campaign.name, "--csv")
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("caption_key,video_key") and len(printed) == len(listed) + 1
    bad = write(tmp_path, "bad.jsonl", '{"caption_key": "c0"}\n')
    with pytest.raises(CommandError, match="bad.jsonl, line 1, field 'video_key'"):
        call_command("gold", "--campaign", campaign.name, "--import", str(bad))
    with pytest.raises(CommandError, match="name an action"):
        call_command("gold", "--campaign", campaign.name)


def test_promote_from_the_adjudication_page(judged, people, client):
    campaign = judged
    tied = Pair.objects.filter(campaign=campaign).exclude(video__key__in=("v0", "v1", "v2", "v3"))[
        0
    ]
    escalations.adjudicate(tied, people["admin"], "relevant")
    client.force_login(people["admin"])
    page = client.get(f"/campaigns/{campaign.pk}/adjudicate/").content.decode()
    assert "Promote to gold" in page and 'name="explanation"' in page
    response = client.post(
        f"/campaigns/{campaign.pk}/gold/promote/",
        {"pair": tied.pk, "explanation": "The whole caption is shown.", "guideline": "G."},
    )
    assert response.status_code == 302
    made = GoldPair.objects.get()
    assert (made.pair_id, made.label, made.explanation, made.guideline) == (
        tied.pk,
        "relevant",
        "The whole caption is shown.",
        "G.",
    )
    assert made.created_by == people["admin"]
    page = client.get(f"/campaigns/{campaign.pk}/adjudicate/").content.decode()
    assert "1 gold pair;" in page
    # A pair the campaign does not have is refused with a message, nothing written.
    response = client.post(f"/campaigns/{campaign.pk}/gold/promote/", {"pair": 10**9}, follow=True)
    assert "not in campaign" in response.content.decode()
    assert GoldPair.objects.count() == 1


def test_the_database_keeps_one_queue_answer_per_annotator_and_gold_pair(db, people, tmp_path):
    """The queue may serve a gold pair to an annotator once; a qualification attempt may
    use it once per attempt; an attempt goes with qualification answers only."""
    campaign = make_campaign()
    path = write(tmp_path, "g.csv", "caption_key,video_key,label,explanation\nc0,v5,relevant,a\n")
    gold.import_gold(campaign, path)
    pair, user = GoldPair.objects.get(), people["annotator"]
    GoldJudgement.objects.create(gold_pair=pair, annotator=user, label="relevant")
    with pytest.raises(IntegrityError), transaction.atomic():
        GoldJudgement.objects.create(gold_pair=pair, annotator=user, label="irrelevant")
    first = campaign.qualification_attempts.create(annotator=user)
    second = campaign.qualification_attempts.create(annotator=user)
    for attempt in (first, second):
        GoldJudgement.objects.create(
            gold_pair=pair,
            annotator=user,
            label="relevant",
            purpose="qualification",
            attempt=attempt,
        )
    with pytest.raises(IntegrityError), transaction.atomic():
        GoldJudgement.objects.create(
            gold_pair=pair, annotator=user, label="relevant", purpose="qualification", attempt=first
        )
    with pytest.raises(IntegrityError), transaction.atomic():
        GoldJudgement.objects.create(
            gold_pair=pair, annotator=people["other"], label="relevant", purpose="qualification"
        )
    with pytest.raises(IntegrityError), transaction.atomic():
        campaign.qualification_attempts.create(annotator=user, correct=3, total=2)


def test_the_gold_template_imports_as_promoting_every_decided_pair_would(
    judged, people, client, tmp_path
):
    """The template download lists the decided pairs that are not gold yet, with keys, the
    caption, the settled label and how it was settled; imported unchanged into a twin
    campaign it gives the gold pairs that promoting every decided pair gives."""
    campaign = judged
    tied = Pair.objects.filter(campaign=campaign).exclude(video__key__in=("v0", "v1", "v2", "v3"))
    escalations.adjudicate(tied[0], people["admin"], "irrelevant")
    already = Pair.objects.select_related("caption", "video").filter(
        campaign=campaign, video__key="v0"
    )[0]
    gold.promote(campaign, pair_ids=[already.pk], explanation="Already gold.")
    client.force_login(people["admin"])
    page = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert f'href="/campaigns/{campaign.pk}/export/gold-template/" id="gold-template-link"' in page
    response = client.get(f"/campaigns/{campaign.pk}/export/gold-template/")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert "gold-template.csv" in response["Content-Disposition"]
    text = b"".join(response.streaming_content).decode()
    lines = text.splitlines()
    assert lines[0] == "caption_key,video_key,caption,label,explanation,guideline"
    assert len(lines) - 1 == gold.promotable(campaign) > 0
    assert not any(line.startswith(f"{already.caption.key},{already.video.key},") for line in lines)
    assert "Adjudicated irrelevant by boss." in text
    twin = make_campaign()
    twin.dataset = campaign.dataset
    twin.save()
    (tmp_path / "template.csv").write_text(text)
    result = gold.import_gold(twin, tmp_path / "template.csv")
    gold.promote(campaign, all_decided=True)
    mine = set(
        GoldPair.objects.filter(campaign=campaign)
        .exclude(pair_id=already.pk)
        .values_list("caption_id", "video_id", "label", "explanation")
    )
    theirs = set(
        GoldPair.objects.filter(campaign=twin).values_list(
            "caption_id", "video_id", "label", "explanation"
        )
    )
    assert result.created == len(mine) and mine == theirs


def test_promoting_every_decided_pair_takes_the_confirmed_count(judged, people):
    """Issue 38 §3: the page names the count and the POST carries it, as a discount does: no
    count, a changed count or nothing to promote promotes nothing and says so."""
    from django.test import Client

    campaign = judged
    admin = Client()
    admin.force_login(people["admin"])
    count = gold.promotable(campaign)
    assert count > 1
    page = admin.get(f"/campaigns/{campaign.pk}/gold/promote-decided/")
    assert f'name="expected" value="{count}"' in page.content.decode()
    adjudicate = admin.get(f"/campaigns/{campaign.pk}/adjudicate/").content.decode()
    assert 'name="all_decided"' not in adjudicate  # no one-click promotion of everything
    assert f"/campaigns/{campaign.pk}/gold/promote-decided/" in adjudicate
    for url in (
        f"/campaigns/{campaign.pk}/gold/promote-decided/",
        f"/campaigns/{campaign.pk}/gold/promote/",
    ):
        missing = admin.post(url, {"all_decided": "on"})
        assert missing.status_code == 400 and "confirm the count" in missing.content.decode()
        changed = admin.post(url, {"all_decided": "on", "expected": count - 1})
        assert changed.status_code == 409, url
        assert f"changed from {count - 1} to {count}" in changed.content.decode()
    assert not GoldPair.objects.exists()
    done = admin.post(
        f"/campaigns/{campaign.pk}/gold/promote-decided/", {"expected": count}, follow=True
    )
    assert f"{count} pairs promoted to gold." in done.content.decode()
    assert GoldPair.objects.count() == count
    nothing = admin.post(f"/campaigns/{campaign.pk}/gold/promote-decided/", {"expected": 0})
    assert nothing.status_code == 409 and "nothing to promote" in nothing.content.decode()
    assert "0 pairs promoted" not in nothing.content.decode()
    one = GoldPair.objects.first().pair_id
    again = admin.post(f"/campaigns/{campaign.pk}/gold/promote/", {"pair": one})
    assert again.status_code == 409 and "0 pairs promoted" not in again.content.decode()
    assert GoldPair.objects.count() == count

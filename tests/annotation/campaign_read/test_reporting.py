"""Agreement reports from the database and from raw label files, and the agreement command."""

import io
import json
from datetime import timedelta

import krippendorff
import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.utils import timezone

from annotation.campaign_read import labels as campaign_labels
from annotation.campaign_read import reporting
from annotation.models import Judgement, Pair
from retrieval.label_sets.status import LabelStatus
from tests.factories import make_campaign

R, IR = "relevant", "irrelevant"
# Pair -> [(annotator, label, seconds)]: agree, agree, split 1-2 (adjudicated relevant),
# tied 2-2 at the cap (a disagreement), a single label, and an unlabelled pair.
LABELS = {
    0: [(0, R, 2.0), (1, R, 3.0)],
    1: [(0, IR, 4.0), (1, IR, 5.0)],
    2: [(0, R, 6.0), (1, IR, 1.0), (2, IR, None)],
    3: [(0, IR, None), (1, IR, 2.0), (2, R, 3.0), (3, R, 4.0)],
    4: [(1, R, 7.0)],
    5: [],
}
# Pairs with two or more labels, as (irrelevant, relevant) counts.
MULTI = np.array([[0, 2], [2, 0], [2, 1], [2, 2]])


@pytest.fixture
def users(db):
    User = get_user_model()
    return [User.objects.create_user(f"a{i}", password="pw-annotator-1") for i in range(4)]


@pytest.fixture
def campaign(users):
    """Six pairs labelled as in LABELS, an undone label on pair 3, pair 2 adjudicated."""
    campaign = make_campaign(n_queries=3, depth=2)
    pairs = list(Pair.objects.filter(campaign=campaign).order_by("pk"))
    assert len(pairs) == len(LABELS)
    now = timezone.now()
    Judgement.objects.create(pair=pairs[3], annotator=users[0], label=R, seconds=9.0, undone_at=now)
    Judgement.objects.bulk_create(
        Judgement(pair=pairs[p], annotator=users[a], label=label, seconds=seconds)
        for p, labels in LABELS.items()
        for a, label, seconds in labels
    )
    Pair.objects.filter(pk=pairs[2].pk).update(
        adjudicated=R, adjudicated_at=now + timedelta(seconds=1)
    )
    return campaign


def test_load_campaign_labels(campaign):
    data = campaign_labels.load_campaign_labels(campaign)
    assert data.n_pairs == data.pool_pairs == 6 and data.in_campaign.all()
    assert data.annotators == ["a0", "a1", "a2", "a3"]
    got = sorted(
        zip(
            data.pair_index.tolist(),
            data.annotator_index.tolist(),
            data.labels.tolist(),
            [None if np.isnan(s) else s for s in data.seconds.tolist()],
            strict=True,
        )
    )
    expected = sorted(
        (p, a, int(label == R), seconds)
        for p, labels in LABELS.items()
        for a, label, seconds in labels
    )
    assert got == expected  # the undone label on pair 3 is left out
    S = LabelStatus
    assert data.status.tolist() == [
        S.RELEVANT,
        S.IRRELEVANT,
        S.RELEVANT,  # adjudicated: wins over the 2-1 majority for irrelevant
        S.DISAGREEMENT,
        S.RELEVANT,
        S.PENDING,
    ]
    assert data.resolved.tolist() == [1, 0, 1, -1, 1, -1]


def test_campaign_report_hand_checked(campaign):
    found = reporting.campaign_report(campaign, resamples=200)
    assert found.campaign == campaign.name and found.pool_pairs == 6
    report = found.agreement
    assert (report.pairs, report.labels, report.multiply_labelled_pairs) == (5, 12, 4)
    assert report.labels_per_pair == pytest.approx(12 / 5)
    assert report.percent_agreement == 0.5
    # n_0 = 6, n_1 = 5, o_01 = 2*1/2 + 2*2/3 = 7/3: alpha = 1 - 10 * (7/3) / 30 = 2/9.
    assert report.krippendorff_alpha == pytest.approx(2 / 9)
    assert report.krippendorff_alpha == pytest.approx(
        krippendorff.alpha(value_counts=MULTI, level_of_measurement="nominal")
    )
    assert found.status == reporting.PairStatus(
        pairs=6, irrelevant=1, relevant=3, disagreement=1, pending=1, resolved_share=0.8
    )
    assert [(row.labels, row.pairs) for row in report.by_label_count] == [
        (1, 1),
        (2, 2),
        (3, 1),
        (4, 1),
    ]
    a0, a1, a2, a3 = report.annotators
    assert a0.labels == 4 and a0.agreement_with_resolved == 1.0  # pair 2 adjudicated R
    assert a0.agreement_with_coannotators == pytest.approx(3 / 7)
    assert a0.median_seconds == 4.0  # of 2, 4, 6 (one time missing)
    assert a2.agreement_with_resolved == 0.0  # I on pair 2 (adjudicated R); pair 3 open
    assert a3.agreement_with_resolved is None
    assert a3.agreement_with_coannotators == pytest.approx(1 / 3)
    assert a1.labels == 5
    low, high = report.intervals.percent_agreement
    assert 0.0 <= low <= 0.5 <= high <= 1.0


def test_campaign_report_json_is_one_flat_object(campaign):
    found = reporting.campaign_report(campaign, resamples=20)
    data = found.to_json()
    assert list(data)[:3] == ["campaign", "pool_pairs", "pairs"]
    assert list(data)[-2:] == ["intervals", "status"]
    assert data["status"] == {
        "pairs": 6,
        "irrelevant": 1,
        "relevant": 3,
        "disagreement": 1,
        "pending": 1,
        "resolved_share": 0.8,
    }
    assert data["intervals"]["percent_agreement"] == list(
        found.agreement.intervals.percent_agreement
    )
    assert data["annotators"][0] == {
        "annotator": "a0",
        "labels": 4,
        "relevant_share": 0.5,
        "agreement_with_resolved": 1.0,
        "agreement_with_coannotators": pytest.approx(3 / 7),
        "median_seconds": 4.0,
    }
    assert "notes" not in data  # only when a figure is undefined
    json.dumps(data)


def test_same_report_with_gaps_in_pair_ids_and_unpacked_rows(campaign, monkeypatch):
    expected = reporting.campaign_report(campaign, resamples=50)
    monkeypatch.setattr(campaign_labels, "ANNOTATOR_SPAN", 1)  # forces the unpacked query
    assert reporting.campaign_report(campaign, resamples=50) == expected
    # Deleting pair 1 leaves a gap in the ids: the loader then joins on the campaign.
    Pair.objects.filter(campaign=campaign).order_by("pk")[1].delete()
    data = campaign_labels.load_campaign_labels(campaign)
    assert (data.n_pairs, data.pool_pairs, int(data.in_campaign.sum())) == (6, 5, 5)
    report = reporting.campaign_report(campaign, resamples=50)
    assert report.status.pairs == report.pool_pairs == 5
    assert report.status.irrelevant == 0
    assert (report.agreement.pairs, report.agreement.labels) == (4, 10)


def test_empty_campaign_reports_notes(users):
    campaign = make_campaign(n_queries=1, depth=2)
    found = reporting.campaign_report(campaign, resamples=10)
    report = found.agreement
    assert (report.pairs, report.labels, found.pool_pairs) == (0, 0, 2)
    assert report.percent_agreement is None and report.krippendorff_alpha is None
    assert report.notes
    assert found.status.pending == 2 and report.annotators == ()


def write_labels(path, rows):
    keys = ("caption_id", "video_id", "annotator", "label", "seconds")
    path.write_text("".join(json.dumps(dict(zip(keys, row, strict=False))) + "\n" for row in rows))
    return path


FILE_ROWS = [
    ("c0", "v0", "ann", R, 2.0),
    ("c0", "v0", "bob", R, 4.0),
    ("c0", "v1", "ann", IR),
    ("c0", "v1", "bob", IR),
    ("c1", "v0", "ann", R),
    ("c1", "v0", "bob", IR),
    ("c1", "v0", "cat", IR),
    ("c1", "v1", "cat", IR),
    ("c2", "v2", "bob", R),
    ("c2", "v2", "cat", IR),
]


def run(*args):
    out = io.StringIO()
    call_command("agreement", *args, stdout=out)
    return out.getvalue()


def test_command_campaign_json_and_table(campaign):
    report = json.loads(run("--campaign", campaign.name, "--format", "json", "--resamples", "100"))
    assert report["pairs"] == 5 and report["percent_agreement"] == 0.5
    assert report["krippendorff_alpha"] == pytest.approx(2 / 9)
    assert {"pairs", "labels", "by_label_count", "annotators", "status"} <= set(report)
    text = run("--campaign", campaign.name, "--resamples", "100")
    assert f"Campaign {campaign.name!r}" in text
    assert "percent agreement      50.0% [95% CI" in text
    assert "Krippendorff's alpha   0.222" in text
    assert "80.0% of complete pairs" in text and "disagreement 1" in text
    assert "a0" in text.split("Annotators")[1]


def test_command_file_json(tmp_path):
    path = write_labels(tmp_path / "labels.jsonl", FILE_ROWS)
    report = json.loads(run("--labels", str(path), "--format", "json", "--resamples", "200"))
    # Pairs: (c0,v0) RR, (c0,v1) II, (c1,v0) RII, (c1,v1) I, (c2,v2) RI.
    assert (report["pairs"], report["labels"], report["multiply_labelled_pairs"]) == (5, 10, 4)
    assert report["percent_agreement"] == 0.5
    counts = np.array([[0, 2], [2, 0], [2, 1], [1, 1]])
    assert report["krippendorff_alpha"] == pytest.approx(
        krippendorff.alpha(value_counts=counts, level_of_measurement="nominal")
    )
    assert report["resolved_share"] == 0.8  # the 1-1 pair has no strict majority
    assert [row["annotator"] for row in report["annotators"]] == ["ann", "bob", "cat"]
    ann = report["annotators"][0]
    assert ann["labels"] == 3 and ann["median_seconds"] == 2.0
    assert ann["agreement_with_resolved"] == pytest.approx(2 / 3)
    assert report["file"] == str(path)
    assert set(report["intervals"]) == {"percent_agreement", "krippendorff_alpha"}


def test_command_file_table(tmp_path):
    path = write_labels(tmp_path / "labels.jsonl", FILE_ROWS)
    text = run("--labels", str(path), "--resamples", "50")
    assert text.startswith(f"Labels file {path}")
    assert "80.0% of labelled pairs (strict majority)" in text
    assert "By number of labels" in text and "cat" in text


def test_single_label_value_gives_null_alpha_with_note(tmp_path):
    path = write_labels(
        tmp_path / "same.jsonl",
        [("c0", "v0", "ann", IR), ("c0", "v0", "bob", IR), ("c1", "v0", "ann", IR)],
    )
    report = json.loads(run("--labels", str(path), "--format", "json"))
    assert report["percent_agreement"] == 1.0 and report["krippendorff_alpha"] is None
    assert any("same value" in note for note in report["notes"])
    assert "krippendorff_alpha" not in report["intervals"]
    text = run("--labels", str(path))
    assert "Krippendorff's alpha   —" in text and "note: every label has the same value" in text


def test_no_pair_with_two_labels(tmp_path):
    path = write_labels(
        tmp_path / "single.jsonl", [("c0", "v0", "ann", R), ("c1", "v0", "bob", IR)]
    )
    report = json.loads(run("--labels", str(path), "--format", "json"))
    assert report["percent_agreement"] is None and report["intervals"] == {}
    assert any("two or more labels" in note for note in report["notes"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "exactly one of --campaign"),
        (("--campaign", "x", "--labels", "y.jsonl"), "not allowed with"),
        (("--campaign", "nope"), "no campaign named 'nope' (known: "),
        (("--labels", "missing.jsonl"), "missing.jsonl"),
        (("--campaign", "x", "--resamples", "-1"), "--resamples must be 0 or more"),
    ],
)
def test_command_errors(db, args, message):
    with pytest.raises(CommandError, match=message.replace("(", r"\(")):
        run(*args)


def test_command_lists_known_campaigns_and_reports_bad_lines(campaign, tmp_path):
    with pytest.raises(CommandError, match=campaign.name):
        run("--campaign", "nope")
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"caption_id": "c", "video_id": "v", "annotator": "a"}) + "\n")
    with pytest.raises(CommandError, match="line 1, field 'label': missing required field"):
        run("--labels", str(path))

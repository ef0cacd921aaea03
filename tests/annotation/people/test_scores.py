"""Annotator scores of a campaign against hand-computed values: gold accuracy and its Wilson
interval, sensitivity and specificity, agreement on campaign labels only, the idle-gap rule,
rolling gold accuracy; and the page and API that show them."""

import datetime
import uuid

import pytest
from django.test import Client

from annotation.gold import service as gold
from annotation.judging import queue, submit
from annotation.models import GoldJudgement, GoldPair, Judgement
from annotation.people.scores import campaign_scores
from tests.factories import make_campaign

T0 = datetime.datetime(2026, 1, 5, 9, 0, tzinfo=datetime.UTC)


@pytest.fixture
def scored(people, tmp_path):
    """Three pairs (videos v0-v2) labelled by "annotator" (A) and "other" (B), who agree on
    v0 (relevant) and v1 (irrelevant) and tie on v2; A answers four gold pairs, one wrongly.

    A's submissions, in seconds from T0 and with no recorded time: labels at 0, 5, 10, gold
    at 15, 415 (after a 400 s break), 445 and 475.
    """
    campaign = make_campaign(n_queries=1, depth=3, rate=1.0)
    a, b = people["annotator"], people["other"]
    answers = {a: {"v0": "relevant", "v1": "irrelevant", "v2": "relevant"}}
    answers[b] = {"v0": "relevant", "v1": "irrelevant", "v2": "irrelevant"}
    for user in (a, b):
        while (current := queue.assign(campaign, user).current) is not None:
            label = answers[user][current.pair.video.key]
            submit.submit(user, current.pair.pk, label, uuid.uuid4(), 7.0)
    for key, offset in (("v0", 0), ("v1", 5), ("v2", 10)):
        Judgement.objects.filter(annotator=a, pair__video__key=key).update(
            seconds=None, created_at=T0 + datetime.timedelta(seconds=offset)
        )
    path = tmp_path / "gold.csv"
    path.write_text(
        "caption_key,video_key,label,explanation\n"
        "c0,v5,relevant,a\nc0,v6,irrelevant,b\nc0,v7,irrelevant,c\nc0,v8,relevant,d\n"
    )
    gold.import_gold(campaign, path)
    pairs = {g.video.key: g for g in GoldPair.objects.filter(campaign=campaign)}
    for key, label, offset in (
        ("v5", "relevant", 15),  # right
        ("v6", "relevant", 415),  # wrong, after a break
        ("v7", "irrelevant", 445),  # right
        ("v8", "relevant", 475),  # right
    ):
        made = GoldJudgement.objects.create(gold_pair=pairs[key], annotator=a, label=label)
        GoldJudgement.objects.filter(pk=made.pk).update(
            created_at=T0 + datetime.timedelta(seconds=offset)
        )
    # A qualification answer: training, not counted unless asked for.
    attempt = campaign.qualification_attempts.create(annotator=b, total=1, correct=0)
    GoldJudgement.objects.create(
        gold_pair=pairs["v5"],
        annotator=b,
        label="irrelevant",
        purpose="qualification",
        attempt=attempt,
    )
    return campaign


def test_scores_match_hand_values(scored):
    result = campaign_scores(scored)
    assert (result.gold_pairs, result.gold_answers) == (4, 4)
    a, b = result.annotators
    assert (a.annotator, b.annotator) == ("annotator", "other")
    assert (a.labels, a.gold, a.gold_correct) == (3, 4, 3)
    assert a.gold_accuracy.estimate == 0.75
    # Wilson (1927) for 3 of 4 at z = 1.96: centre 0.6275, half-width 0.3269.
    assert a.gold_accuracy.low == pytest.approx(0.30064, abs=1e-4)
    assert a.gold_accuracy.high == pytest.approx(0.95441, abs=1e-4)
    assert a.gold_accuracy.level == pytest.approx(0.95)
    assert (a.sensitivity, a.specificity) == (1.0, 0.5)
    # Campaign labels only: A agrees with B on 2 of 3 pairs and with both resolved pairs
    # (v2 is tied, pending); the gold answers add no co-annotator and no resolved label.
    assert a.agreement_with_coannotators == pytest.approx(2 / 3)
    assert a.agreement_with_resolved == 1.0
    # Working gaps 5, 5, 5, 30, 30 s; the 400 s gap is a break (with it the median is 17.5).
    assert a.median_seconds == 5.0
    assert a.labels_per_hour == pytest.approx(5 / (75 / 3600))
    assert a.rolling_gold_accuracy == pytest.approx((1.0, 0.5, 2 / 3, 0.75))
    assert a.recent_gold_accuracy == 0.75
    # B: recorded 7 s per label, no queue gold (the qualification answer is left out).
    assert (b.labels, b.gold, b.gold_accuracy, b.sensitivity) == (3, 0, None, None)
    assert b.median_seconds == 7.0
    assert b.rolling_gold_accuracy == ()


def test_rolling_window_and_qualification(scored):
    a, b = campaign_scores(scored, window=2, include_qualification=True).annotators
    assert a.rolling_gold_accuracy == pytest.approx((1.0, 0.5, 0.5, 1.0))
    assert (b.gold, b.gold_correct, b.specificity, b.sensitivity) == (1, 0, None, 0.0)


def test_gold_answers_never_enter_label_counts(scored):
    """However many gold answers an annotator gives, ``labels`` counts campaign labels."""
    before = campaign_scores(scored).annotators[0]
    assert before.labels == Judgement.objects.filter(annotator__username="annotator").count()


def test_agreement_page_and_api_show_the_scores(scored, people):
    client = Client()
    client.force_login(people["researcher"])
    page = client.get(f"/campaigns/{scored.pk}/agreement/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="annotator-score-table"' in html
    assert "75.0%" in html and "30.1% – 95.4%" in html
    assert "Gold accuracy over time" in html and "<svg" in html
    response = client.get(f"/api/campaigns/{scored.pk}/annotator-scores/")
    assert response.status_code == 200
    data = response.json()
    assert data["campaign"] == scored.name
    row = data["annotators"][0]
    assert row["annotator"] == "annotator" and row["gold_correct"] == 3
    assert row["gold_accuracy"]["low"] == pytest.approx(0.30064, abs=1e-4)
    assert row["rolling_gold_accuracy"] == pytest.approx([1.0, 0.5, 2 / 3, 0.75])
    client.force_login(people["annotator"])
    assert client.get(f"/api/campaigns/{scored.pk}/annotator-scores/").status_code == 403


def test_empty_campaign_has_no_scores(db):
    campaign = make_campaign()
    result = campaign_scores(campaign)
    assert result.annotators == () and result.gold_answers == 0

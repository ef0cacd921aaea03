"""Pausing annotators automatically, reinstating them, and discounting their labels."""

import json
import uuid

from rest_framework.test import APIClient

from annotation.campaign_read import exports
from annotation.judging import queue, submit
from annotation.models import AnnotatorStanding, GoldPair, Judgement, Lease, Pair
from annotation.people import service as people_service
from annotation.people import standing
from annotation.policy import rules as policy
from tests.factories import add_gold, make_campaign, serve_all


def _flip(label: str) -> str:
    return "relevant" if label == "irrelevant" else "irrelevant"


def test_wrong_gold_answers_pause_and_an_admin_reinstates(people):
    campaign = make_campaign(n_queries=30, depth=4, seed=5)
    add_gold(campaign, 12, rate=0.5)
    annotator = people["annotator"]

    def answer(pair):
        gold = GoldPair.objects.filter(task=pair).first()
        return _flip(gold.label) if gold else "irrelevant"  # wrong on every gold pair

    served = serve_all(campaign, annotator, answer)
    row = standing.paused(campaign, annotator)
    assert row is not None and "gold accuracy" in row.reason
    wrong = sum(1 for pair, _ in served if GoldPair.objects.filter(task=pair).exists())
    assert wrong == 10  # paused at the tenth gold pair: the first moment the rule may act
    assert Pair.objects.filter(campaign=campaign, needed__gt=0).exists()  # work was left
    assert queue.assign(campaign, annotator).current is None
    assert not Lease.objects.filter(annotator=annotator).exists()  # nothing kept from others
    assert not queue.has_work_for(campaign, annotator)
    client = APIClient()
    client.force_login(annotator)
    body = client.post(f"/api/campaigns/{campaign.pk}/next/").json()
    assert body["current"] is None and "gold accuracy" in body["paused"]
    # Another annotator is not affected; reinstating lets this one judge again.
    assert queue.assign(campaign, people["other"]).current is not None
    people_service.reinstate(campaign, annotator, people["admin"])
    assert standing.paused(campaign, annotator) is None
    assert queue.assign(campaign, annotator).current is not None
    assert not standing.check_pace(campaign, annotator).paused  # earlier evidence no longer counts


def test_too_fast_pauses_and_careful_annotators_are_not_paused(people):
    campaign = make_campaign(n_queries=20, depth=3, seed=6)
    fast, careful = people["annotator"], people["other"]
    for who, seconds in ((fast, 0.3), (careful, 4.0)):
        for _ in range(20):
            current = queue.assign(campaign, who).current
            if current is None:
                break
            submit.submit(who, current.pair.pk, "relevant", uuid.uuid4(), seconds=seconds)
    row = standing.paused(campaign, fast)
    assert row is not None and "too fast" in row.reason
    assert Judgement.objects.filter(annotator=fast).count() == 12  # median over 12 answers
    assert standing.paused(campaign, careful) is None
    assert not standing.check_pace(campaign, careful).paused


def test_discounting_requeues_under_the_same_policy_and_keeps_the_labels(people):
    campaign = make_campaign(n_queries=6, depth=3, rate=0.5, seed=7)
    spammer, good = people["annotator"], people["other"]
    serve_all(campaign, spammer, lambda pair: "relevant")
    labelled = set(Judgement.objects.filter(annotator=spammer).values_list("pair_id", flat=True))
    assert labelled
    discounted = people_service.discount(campaign, spammer)
    assert discounted == len(labelled)
    kept = Judgement.objects.filter(annotator=spammer)
    assert kept.count() == discounted and all(j.discounted_at for j in kept)
    for pair in Pair.objects.filter(pk__in=labelled):
        live = Judgement.objects.filter(pair=pair, undone_at__isnull=True)
        assert pair.label_count == live.count()
        needed = policy.labels_needed(
            [pair.relevant_count], [pair.label_count], pair.double, campaign.max_labels
        )[0]
        assert pair.needed == needed > 0  # back in the queue for a fresh label
    served = serve_all(campaign, good, lambda pair: "irrelevant")
    assert {pair.pk for pair, _ in served} >= labelled
    raw = [
        json.loads(line)
        for line in "".join(exports.export_chunks(campaign, "raw")).splitlines()
        if line.strip()
    ]
    flagged = [row for row in raw if row.get("discounted")]
    assert len(flagged) == discounted and {r["annotator"] for r in flagged} == {"annotator"}
    assert (
        sum(1 for row in raw if not row.get("discounted"))
        == Judgement.objects.filter(undone_at__isnull=True).count()
    )
    row = AnnotatorStanding.objects.get(campaign=campaign, annotator=spammer)
    assert row.discounted_labels == discounted


def test_annotators_command_lists_discounts_and_reinstates(people):
    import io

    import pytest
    from django.core.management import call_command
    from django.core.management.base import CommandError

    campaign = make_campaign(n_queries=4, depth=2, seed=8)
    spammer = people["annotator"]
    serve_all(campaign, spammer, lambda pair: "relevant")
    out = io.StringIO()
    call_command("annotators", "--campaign", campaign.name, "--discount", "annotator", stdout=out)
    assert "Discounted 8 labels" in out.getvalue()
    AnnotatorStanding.objects.filter(campaign=campaign).update(
        paused_at="2026-01-01T00:00:00Z", reason="too fast"
    )
    out = io.StringIO()
    call_command("annotators", "--campaign", campaign.name, "--format", "json", stdout=out)
    rows = json.loads(out.getvalue())
    assert rows == [
        {
            "annotator": "annotator",
            "paused_at": rows[0]["paused_at"],
            "reason": "too fast",
            "discounted_labels": 8,
        }
    ]
    call_command("annotators", "--campaign", campaign.name, "--reinstate", "annotator")
    assert standing.paused(campaign, spammer) is None
    with pytest.raises(CommandError, match="no user named"):
        call_command("annotators", "--campaign", campaign.name, "--reinstate", "ghost")
    with pytest.raises(CommandError, match="time zone"):
        call_command(
            "annotators",
            "--campaign",
            campaign.name,
            "--discount",
            "annotator",
            "--since",
            "2026-01-01T00:00:00",
        )

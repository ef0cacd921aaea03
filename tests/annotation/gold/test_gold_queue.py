"""Gold pairs in the live queue and the qualification flow (Issue: labels you can trust)."""

import json
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.campaign_read import exports
from annotation.gold import tasks as gold_queue
from annotation.judging import errors, queue, submit
from annotation.judging.task_ids import decode as served_pair
from annotation.models import Campaign, GoldJudgement, GoldPair, Judgement, Pair
from retrieval.models import Video
from tests.factories import add_gold, make_campaign, serve_all


def test_gold_pairs_are_mixed_in_unseen_and_kept_apart(people):
    campaign = make_campaign(n_queries=30, depth=4, seed=1)
    golds = add_gold(campaign, 6, rate=0.3)
    annotator = people["annotator"]
    served = serve_all(campaign, annotator)
    gold_tasks = {g.pk: g.task_id for g in GoldPair.objects.filter(campaign=campaign)}
    task_ids = set(gold_tasks.values())
    served_gold = [pair.pk for pair, _ in served if pair.pk in task_ids]
    assert served_gold, "a 30% rate over 120 tasks serves some gold"
    assert len(served_gold) == len(set(served_gold))  # never the same gold pair twice
    answers = GoldJudgement.objects.filter(annotator=annotator)
    assert answers.count() == len(served_gold)
    assert set(answers.values_list("purpose", flat=True)) == {GoldJudgement.Purpose.QUEUE}
    # Apart from labels: no judgement, no count, no export mentions a gold pair.
    assert not Judgement.objects.filter(pair_id__in=task_ids).exists()
    real = [pair for pair, _ in served if pair.pk not in task_ids]
    assert len(real) == campaign.pairs.count() == Judgement.objects.count()
    exported = [
        json.loads(line)
        for line in "".join(exports.export_chunks(campaign, "jsonl")).splitlines()
        if line.strip()
    ]
    gold_keys = {(g.caption.key, g.video.key) for g in golds}
    assert len(exported) == len(real)
    assert not {(row["caption_key"], row["video_key"]) for row in exported} & gold_keys
    # Tasks are pairs of a hidden companion campaign: ids from the same sequence, never listed.
    campaign.refresh_from_db()
    companion = Campaign._base_manager.get(pk=campaign.gold_companion.pk)
    assert not Campaign.objects.filter(pk=companion.pk).exists()
    assert not campaign.dataset.campaigns.filter(pk=companion.pk).exists()
    assert companion.status == Campaign.Status.CLOSED
    assert set(companion.pairs.values_list("pk", flat=True)) == task_ids
    assert not gold_queue.visible(Campaign.objects).filter(pk=companion.pk).exists()
    # Progress counts gold answers too, so the counter moves after every pair.
    shown = queue.progress(campaign, annotator)
    assert shown.judged_total == shown.judged_today == len(served)


def test_gold_tasks_look_like_any_task_through_the_api(people):
    campaign = make_campaign(n_queries=10, depth=3, seed=2)
    add_gold(campaign, 4, rate=0.5)
    client = APIClient()
    client.force_login(people["annotator"])
    base = f"/api/campaigns/{campaign.pk}/"
    task_ids = set()
    seen_keys = set()
    body = client.post(base + "next/").json()
    for _ in range(40):
        current = body["current"]
        if current is None:
            break
        seen_keys.add(tuple(sorted(current)))
        answer = {"pair": current["pair"], "label": "relevant", "uuid": str(uuid.uuid4())}
        response = client.post(base + "submit/", answer, format="json")
        assert response.status_code == 200, response.content
        body = response.json()
        assert body["feedback"] is None  # feedback only in training
        task_ids.add(served_pair(people["annotator"].pk, current["pair"]))
    gold_tasks = set(GoldPair.objects.filter(campaign=campaign).values_list("task_id", flat=True))
    assert task_ids & gold_tasks, "some gold task was served"
    assert len(seen_keys) == 1  # the same fields for gold and real tasks
    assert body["qualification"]["required"] is False
    # Escalating a gold task answers like any escalation: the next task.
    body = client.post(base + "next/").json()
    if body["current"] is not None:
        escalated = client.post(
            base + "escalate/",
            {"pair": body["current"]["pair"], "reason": "blurry", "uuid": str(uuid.uuid4())},
            format="json",
        )
        assert escalated.status_code == 200


def test_qualification_trains_scores_cools_down_and_admits(people):
    campaign = make_campaign(n_queries=5, depth=3, seed=3)
    golds = add_gold(campaign, 4, rate=0.0, qualification=True, threshold=0.75)
    annotator = people["annotator"]
    assert not gold_queue.qualification(campaign, annotator).admitted

    def truth(pair) -> str:
        return GoldPair.objects.get(task=pair).label

    given = []

    def half_right(pair) -> str:  # wrong on the first two, right on the rest: 50%
        right = truth(pair)
        given.append(pair.pk)
        flip = {"relevant": "irrelevant", "irrelevant": "relevant"}
        return flip[right] if len(given) <= 2 else right

    served = serve_all(campaign, annotator, half_right)
    assert len(served) == len(golds)  # only training pairs before admission
    tasks = set(GoldPair.objects.filter(campaign=campaign).values_list("task_id", flat=True))
    assert {pair.pk for pair, _ in served} == tasks
    feedback = [result.feedback for _, result in served]
    assert all(f is not None and f.explanation.startswith("because") for f in feedback)
    assert [f.correct for f in feedback] == [False, False, True, True]
    assert [f.label for f in feedback] == [truth(pair) for pair, _ in served]
    state = gold_queue.qualification(campaign, annotator)
    assert not state.admitted and state.last_score == 0.5 and state.retry_at is not None
    assert queue.assign(campaign, annotator).current is None
    assert queue.has_work_for(campaign, annotator)  # may retry later
    # After the cool-down: a second try, all right -> admitted, then real pairs come.
    later = timezone.now() + timedelta(hours=2)
    served = serve_all(
        campaign,
        annotator,
        lambda pair: truth(pair) if pair.pk in tasks else "relevant",
        now=later,
    )
    real = [pair for pair, _ in served if pair.pk not in tasks]
    assert real and len(served) - len(real) == 4
    state = gold_queue.qualification(campaign, annotator)
    assert state.admitted and state.tries_used == 2


def test_three_failed_tries_end_it_until_an_admin_admits(people):
    campaign = make_campaign(n_queries=3, depth=2, seed=4)
    add_gold(campaign, 2, rate=0.0, qualification=True, threshold=1.0, cooldown_seconds=10)
    gold_queue.ensure_tasks(campaign)
    truth = {g.task_id: g.label for g in GoldPair.objects.filter(campaign=campaign)}
    annotator = people["other"]
    now = timezone.now()
    for attempt in range(3):
        at = now + timedelta(minutes=attempt)
        wrong = serve_all(
            campaign,
            annotator,
            lambda pair: "irrelevant" if truth[pair.pk] == "relevant" else "relevant",
            now=at,
        )
        assert len(wrong) == 2
    state = gold_queue.qualification(campaign, annotator, now + timedelta(hours=1))
    assert state.out_of_tries and not state.admitted
    assert not queue.has_work_for(campaign, annotator)
    gold_queue.admit(campaign, annotator, people["admin"])
    assert gold_queue.qualification(campaign, annotator).admitted
    assert queue.assign(campaign, annotator).current is not None
    assert not Pair.objects.filter(campaign=campaign, label_count__gt=0).exists()


def test_create_campaign_takes_the_gold_settings(db):
    from django.core.management import call_command

    campaign = make_campaign(n_queries=2, depth=2)
    run = campaign.campaign_runs.get().run
    call_command(
        "create_campaign",
        "--dataset",
        campaign.dataset.name,
        "--name",
        "with-gold",
        "--runs",
        run.name,
        "--depth",
        "2",
        "--gold-rate",
        "0.1",
        "--qualification",
        "12",
        "--qualification-threshold",
        "0.8",
    )
    settings = Campaign.objects.get(name="with-gold").settings.gold
    assert (settings.rate, settings.qualification, settings.training_pairs) == (0.1, True, 12)
    assert settings.threshold == 0.8
    with pytest.raises(Exception, match="qualification"):
        call_command(
            "create_campaign",
            "--dataset",
            campaign.dataset.name,
            "--name",
            "bad-gold",
            "--runs",
            run.name,
            "--qualification",
            "-3",
        )


def test_a_gold_pair_removed_while_on_screen_is_a_clear_404(people):
    campaign = make_campaign(n_queries=4, depth=2, seed=9)
    add_gold(campaign, 2, rate=0.0, qualification=True, threshold=0.5)
    annotator = people["annotator"]
    current = queue.assign(campaign, annotator).current
    GoldPair.objects.filter(task=current.pair).delete()
    client = APIClient()
    client.force_login(annotator)
    response = client.post(
        f"/api/campaigns/{campaign.pk}/submit/",
        {"pair": current.token, "label": "relevant", "uuid": str(uuid.uuid4())},
        format="json",
    )
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    assert not GoldJudgement.objects.exists()
    task = Pair._base_manager.get(pk=current.pair.pk)  # its lease ended, its count with it
    assert task.leased == 0 and not task.leases.exists()


def test_training_pairs_are_balanced_so_always_no_fails(people):
    """Gold mostly irrelevant (as pooled pairs are): a random draw of 20 training pairs from
    54 irrelevant and 6 relevant gave an always-"not relevant" annotator about 90%; the
    training set takes every relevant gold pair it can (up to half), so they score 70%."""
    campaign = make_campaign(n_queries=9, depth=3, seed=5)
    golds = add_gold(campaign, 60, rate=0.0, qualification=True, training_pairs=20)
    assert len(golds) == 60
    relevant = [g.pk for g in golds[:6]]
    GoldPair.objects.filter(campaign=campaign).update(label="irrelevant")
    GoldPair.objects.filter(pk__in=relevant).update(label="relevant")
    annotator = people["annotator"]
    served = serve_all(campaign, annotator)  # always "irrelevant"
    assert len(served) == 20
    trained = GoldPair.objects.filter(task__in=[pair.pk for pair, _ in served])
    assert trained.filter(label="relevant").count() == 6
    state = gold_queue.qualification(campaign, annotator)
    assert not state.admitted and state.last_score == 0.7


def test_gold_added_mid_campaign_is_served_and_answers_free_their_task(people):
    campaign = make_campaign(n_queries=10, depth=3, seed=11)
    first = add_gold(campaign, 3, rate=1.0)
    annotator = people["annotator"]
    held = queue.assign(campaign, annotator)
    gold_tasks = dict(GoldPair.objects.filter(campaign=campaign).values_list("task_id", "label"))
    assert {held.current.pair.pk, held.upcoming.pair.pk} <= set(gold_tasks)  # rate 1: gold only
    for task in (held.current, held.upcoming):
        submit.submit(annotator, task.pair.pk, gold_tasks[task.pair.pk], uuid.uuid4())
    # Each answer ended its lease and freed the task's count (as a full recount finds it).
    answered = Pair._base_manager.filter(pk__in=[held.current.pair.pk, held.upcoming.pair.pk])
    assert set(answered.values_list("leased", "open_slots")) == {(0, 0)}
    # A gold pair added now gets its task at the next pick and is served before it runs out.
    late = GoldPair.objects.create(
        campaign=campaign,
        caption=first[0].caption,
        video=Video.objects.filter(dataset=campaign.dataset).exclude(pk=first[0].video_id).last(),
        label="relevant",
        explanation="added late",
        source=GoldPair.Source.IMPORTED,
    )
    served = [pair.pk for pair, _ in serve_all(campaign, annotator, lambda pair: "relevant")]
    late.refresh_from_db()
    assert late.task_id is not None and late.task_id in served
    answers = GoldJudgement.objects.filter(annotator=annotator, purpose="queue")
    assert answers.count() == 4 and answers.filter(gold_pair=late).count() == 1


def test_a_gold_answer_id_someone_else_used_is_a_conflict(people):
    campaign = make_campaign(n_queries=10, depth=3, seed=12)
    add_gold(campaign, 4, rate=1.0)
    one, other = people["annotator"], people["other"]
    client_uuid = uuid.uuid4()
    mine = queue.assign(campaign, one).current.pair
    first = submit.submit(one, mine.pk, "relevant", client_uuid)
    again = submit.submit(one, mine.pk, "relevant", client_uuid)  # a retry: the same answer
    assert first.created and not again.created and again.judgement.pk == first.judgement.pk
    theirs = queue.assign(campaign, other).current.pair
    with pytest.raises(errors.AssignmentError) as refused:
        submit.submit(other, theirs.pk, "relevant", client_uuid)
    assert refused.value.code == "conflict"
    assert GoldJudgement.objects.filter(annotator=other).count() == 0

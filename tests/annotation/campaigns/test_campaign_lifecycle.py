"""A campaign's life cycle on firepool's pages: create (the pool job), edit, pause, resume,
close, import and promote gold; and qualification refused without enough balanced gold."""

from dataclasses import replace

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.campaigns import lifecycle
from annotation.campaigns.lifecycle import GoldBalance, LifecycleError
from annotation.campaigns.settings import GoldSettings
from annotation.gold import tasks as gold_queue
from annotation.models import Campaign, GoldPair, Pair, QualificationAttempt
from annotation.people import quality
from jobs.models import Job
from tests.factories import add_gold, make_campaign, serve_all

IMMEDIATE = {
    "default": {
        "BACKEND": "django_tasks.backends.immediate.ImmediateBackend",
        "QUEUES": ["default", "gpu"],
    }
}
HEADER = "caption_key,video_key,label,explanation\n"


@pytest.fixture(autouse=True)
def _immediate(settings):
    settings.TASKS = IMMEDIATE


@pytest.fixture
def campaign(db):
    """A pooled campaign of 9 pairs: captions c0..c2, videos v0..v9, run "m" at depth 3."""
    return make_campaign(n_queries=3, depth=3)


def gold_csv(rows: list[tuple[str, str, str]], name: str = "gold.csv") -> SimpleUploadedFile:
    text = HEADER + "".join(f"{c},{v},{label},because\n" for c, v, label in rows)
    return SimpleUploadedFile(name, text.encode(), content_type="text/csv")


def balanced(relevant: int, irrelevant: int) -> list[tuple[str, str, str]]:
    """Gold rows on pairs never pooled (videos v3..v8 of caption c0, then c1)."""
    cells = [(f"c{i // 6}", f"v{3 + i % 6}") for i in range(12)]
    labels = ["relevant"] * relevant + ["irrelevant"] * irrelevant
    return [(c, v, label) for (c, v), label in zip(cells, labels, strict=False)]


def qualifying(campaign: Campaign, pairs: int = 4) -> None:
    campaign.set_settings(
        replace(campaign.settings, gold=GoldSettings(qualification=True, training_pairs=pairs))
    )


# -- the rule ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pairs", "split"), [(1, (0, 1)), (2, (1, 1)), (4, (2, 2)), (5, (2, 3)), (20, (10, 10))]
)
def test_a_balanced_training_set_is_half_relevant_rounded_down(pairs, split):
    assert quality.training_split(pairs) == split


@pytest.mark.parametrize(
    ("relevant", "irrelevant", "enough"),
    [(2, 2, True), (5, 5, True), (1, 3, False), (3, 1, False), (2, 1, False), (0, 0, False)],
)
def test_the_shortfall_is_exact_for_four_training_pairs(relevant, irrelevant, enough):
    settings = GoldSettings(qualification=True, training_pairs=4)
    problem = lifecycle.qualification_shortfall(settings, GoldBalance(relevant, irrelevant))
    assert (problem is None) is enough
    if not enough:
        assert problem.startswith(
            "qualification needs 4 gold pairs, 2 relevant and 2 irrelevant; this campaign has "
            f"{relevant} relevant and {irrelevant} irrelevant"
        )


def test_five_training_pairs_need_two_relevant_and_three_irrelevant():
    settings = GoldSettings(qualification=True, training_pairs=5)
    assert lifecycle.qualification_shortfall(settings, GoldBalance(2, 3)) is None
    assert lifecycle.qualification_shortfall(settings, GoldBalance(3, 2)) is not None
    assert lifecycle.qualification_shortfall(GoldSettings(), GoldBalance(0, 0)) is None


def test_resuming_waits_for_balanced_gold_through_the_orm(campaign, people):
    """Counted from the campaign's real gold pairs; once enough, an annotator's attempt is
    served exactly the balanced split the rule promised."""
    lifecycle.change_status(campaign, Campaign.Status.PAUSED)
    add_gold(campaign, 3, qualification=True, training_pairs=4)  # 2 irrelevant, 1 relevant
    assert lifecycle.gold_balance(campaign) == GoldBalance(relevant=1, irrelevant=2)
    with pytest.raises(LifecycleError, match="this campaign has 1 relevant and 2 irrelevant"):
        lifecycle.change_status(campaign, Campaign.Status.ACTIVE)
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.PAUSED
    GoldPair.objects.filter(campaign=campaign).delete()
    golds = add_gold(campaign, 6, qualification=True, training_pairs=4)  # 3 and 3
    assert lifecycle.gold_balance(campaign) == GoldBalance(relevant=3, irrelevant=3)
    lifecycle.change_status(campaign, Campaign.Status.ACTIVE)
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.ACTIVE
    gold_queue.ensure_tasks(campaign)
    served = serve_all(campaign, people["annotator"])
    training = [pair for pair, _ in served if pair.campaign_id != campaign.pk]
    labels = {g.task_id: g.label for g in GoldPair.objects.filter(pk__in=[g.pk for g in golds])}
    assert len(training) == 4
    assert sorted(labels[pair.pk] for pair in training) == ["irrelevant"] * 2 + ["relevant"] * 2
    assert QualificationAttempt.objects.get(annotator=people["annotator"]).total == 4


def test_transitions_and_closed_is_final(campaign):
    lifecycle.change_status(campaign, Campaign.Status.PAUSED)
    with pytest.raises(LifecycleError, match="paused already"):
        lifecycle.change_status(campaign, Campaign.Status.PAUSED)
    lifecycle.change_status(campaign, Campaign.Status.ACTIVE)
    lifecycle.change_status(campaign, Campaign.Status.CLOSED)
    for status in (Campaign.Status.ACTIVE, Campaign.Status.PAUSED):
        with pytest.raises(LifecycleError, match="a closed campaign stays closed"):
            lifecycle.change_status(campaign, status)
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.CLOSED


# -- creating ------------------------------------------------------------------------------


def new_values(campaign: Campaign, name: str = "fresh", **extra) -> dict:
    return {
        "dataset": campaign.dataset.name,
        "runs": ["m"],
        "name": name,
        "depth": "3",
        "show_roles": "on",
        **extra,
    }


def test_the_new_page_offers_datasets_and_runs_to_admins_only(campaign, people, client):
    client.force_login(people["researcher"])
    assert client.get("/campaigns/new/").status_code == 403
    client.force_login(people["annotator"])
    assert client.get("/campaigns/new/").status_code == 403
    client.force_login(people["admin"])
    page = client.get("/campaigns/new/", {"dataset": campaign.dataset.name})
    assert page.status_code == 200
    html = page.content.decode()
    assert f'<option value="{campaign.dataset.name}" selected>' in html
    assert 'name="runs" value="m"' in html
    for field in ("judging_order", "budget", "gold_rate", "qualification", "speed_floor"):
        assert f'name="{field}"' in html
    assert 'name="guidelines"' in html and 'name="gold_file"' in html
    assert Campaign.objects.count() == 1 and not Job.objects.exists()  # a GET writes nothing
    assert "/campaigns/new/" in client.get("/campaigns/").content.decode()


def test_creating_with_qualification_and_a_gold_file_runs_the_pool_job(
    campaign, people, client, django_capture_on_commit_callbacks
):
    client.force_login(people["admin"])
    values = new_values(
        campaign,
        qualification="4",
        gold_rate="0.1",
        speed_floor="2.5",
        budget="40",
        judging_order="metric-first",
        guidelines="Judge carefully.",
        gold_file=gold_csv(balanced(2, 3)),
    )
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post("/campaigns/new/", values)
    assert answer.status_code == 302, answer.content.decode()[:2000]
    job = Job.objects.get(kind="pool")
    assert answer["Location"] == f"/jobs/{job.pk}/"
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    made = Campaign.objects.get(name="fresh")
    assert made.status == Campaign.Status.ACTIVE
    assert lifecycle.gold_balance(made) == GoldBalance(relevant=2, irrelevant=3)
    gold = made.settings.gold
    assert (gold.qualification, gold.training_pairs, gold.rate, gold.floor_seconds) == (
        True,
        4,
        0.1,
        2.5,
    )
    assert made.settings.judging.budget == 40
    assert made.settings.judging.strategy == "metric-first"
    assert made.guidelines == "Judge carefully."
    assert job.result["gold_pairs"] == 5


def test_a_gold_file_too_short_for_the_qualification_is_refused(campaign, people, client):
    client.force_login(people["admin"])
    values = new_values(campaign, qualification="4", gold_file=gold_csv(balanced(1, 5)))
    answer = client.post("/campaigns/new/", values)
    assert answer.status_code == 400
    assert (
        "gold.csv: qualification needs 4 gold pairs, 2 relevant and 2 irrelevant; this "
        "campaign has 1 relevant and 5 irrelevant"
    ) in answer.content.decode()
    assert not Job.objects.exists() and not Campaign.objects.filter(name="fresh").exists()


def test_a_bad_gold_file_names_its_file_line_and_field(campaign, people, client):
    client.force_login(people["admin"])
    rows = [*balanced(1, 1), ("c9", "v1", "relevant")]
    answer = client.post(
        "/campaigns/new/", new_values(campaign, gold_file=gold_csv(rows, "my.csv"))
    )
    assert answer.status_code == 400
    html = answer.content.decode()
    assert "my.csv" in html and "line 4" in html and "caption_key" in html and "c9" in html
    assert not Job.objects.exists()


def test_without_gold_a_qualifying_campaign_starts_paused(
    campaign, people, client, django_capture_on_commit_callbacks
):
    client.force_login(people["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post("/campaigns/new/", new_values(campaign, qualification="4"))
    assert answer.status_code == 302
    assert Campaign.objects.get(name="fresh").status == Campaign.Status.PAUSED


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"runs": []}, "runs"),
        ({"depth": "0"}, "depth"),
        ({"name": ""}, "name"),
        ({"dataset": "ghost"}, "ghost"),
        ({"runs": ["ghost"]}, "ghost"),
        ({"gold_rate": "0.9"}, "gold_rate"),
    ],
)
def test_bad_input_is_a_400_and_no_job(campaign, people, client, change, message):
    client.force_login(people["admin"])
    answer = client.post("/campaigns/new/", {**new_values(campaign), **change})
    assert answer.status_code == 400
    assert message in answer.content.decode()
    assert not Job.objects.exists()


# -- editing -------------------------------------------------------------------------------


def test_edit_changes_what_may_change(campaign, people, client):
    client.force_login(people["admin"])
    page = client.get(f"/campaigns/{campaign.pk}/edit/")
    assert page.status_code == 200
    form = page.context["form"]
    values = {k: v for k, v in form.initial.items() if v is not None}
    values.update(name="renamed", budget="12", gold_rate="0.2", speed_floor="3", show_roles="")
    answer = client.post(f"/campaigns/{campaign.pk}/edit/", values)
    assert answer.status_code == 302, answer.content.decode()[:3000]
    campaign.refresh_from_db()
    assert campaign.name == "renamed"
    assert campaign.settings.judging.budget == 12
    assert (campaign.settings.gold.rate, campaign.settings.gold.floor_seconds) == (0.2, 3.0)
    assert campaign.settings.show_roles is False


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"qualification": "4"},
            "qualification needs 4 gold pairs, 2 relevant and 2 irrelevant; this campaign has "
            "0 relevant and 0 irrelevant",
        ),
        ({"lease_seconds": "1"}, "lease_seconds"),
    ],
)
def test_edit_refuses_what_may_not_change(campaign, people, client, change, message):
    # The fields pooling fixed are disabled on the page (their posted values ignored:
    # tests/annotation/test_audit_campaign_pages.py); edit_campaign itself still refuses them.
    client.force_login(people["admin"])
    before = Campaign.objects.filter(pk=campaign.pk).values().get()
    values = {
        k: v
        for k, v in lifecycle.form_values(lifecycle.current_spec(campaign)).items()
        if v is not None
    }
    answer = client.post(f"/campaigns/{campaign.pk}/edit/", {**values, **change})
    assert answer.status_code == 400
    assert message in answer.content.decode()
    assert Campaign.objects.filter(pk=campaign.pk).values().get() == before


# -- pause, resume, close ------------------------------------------------------------------


def test_pause_resume_close_from_the_page(campaign, people, client):
    url = f"/campaigns/{campaign.pk}/status/"
    client.force_login(people["admin"])
    page = client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert 'id="pause-campaign"' in page and 'id="close-campaign"' in page
    assert client.post(url, {"action": "pause"}).status_code == 302
    assert Campaign.objects.get(pk=campaign.pk).status == "paused"
    assert 'id="resume-campaign"' in client.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert client.post(url, {"action": "resume"}).status_code == 302
    assert Campaign.objects.get(pk=campaign.pk).status == "active"
    confirm = client.get(url, {"action": "close"})
    assert confirm.status_code == 200
    assert "<strong>9</strong> pairs still pending" in confirm.content.decode()
    assert Campaign.objects.get(pk=campaign.pk).status == "active"  # a GET writes nothing
    assert client.post(url, {"action": "close"}).status_code == 302
    assert Campaign.objects.get(pk=campaign.pk).status == "closed"
    refused = client.post(url, {"action": "resume"})
    assert refused.status_code == 400
    assert "a closed campaign stays closed" in refused.content.decode()
    assert Campaign.objects.get(pk=campaign.pk).status == "closed"


def test_resume_names_the_gold_counts(campaign, people, client):
    lifecycle.change_status(campaign, Campaign.Status.PAUSED)
    add_gold(campaign, 1, qualification=True, training_pairs=4)
    client.force_login(people["admin"])
    refused = client.post(f"/campaigns/{campaign.pk}/status/", {"action": "resume"})
    assert refused.status_code == 400
    assert (
        "qualification needs 4 gold pairs, 2 relevant and 2 irrelevant; this campaign has "
        "0 relevant and 1 irrelevant"
    ) in refused.content.decode()
    assert Campaign.objects.get(pk=campaign.pk).status == "paused"


@pytest.mark.parametrize("action", ["", "explode", "pause\x00"])
def test_odd_actions_are_400s(campaign, people, client, action):
    client.force_login(people["admin"])
    assert client.post(f"/campaigns/{campaign.pk}/status/", {"action": action}).status_code == 400
    assert Campaign.objects.get(pk=campaign.pk).status == "active"


@pytest.mark.parametrize(
    "url",
    [
        "/campaigns/999999/edit/",
        "/campaigns/999999/status/",
        "/campaigns/999999/gold/import/",
        "/campaigns/999999/gold/promote-decided/",
    ],
)
def test_odd_ids_are_404s_for_admins_and_403s_for_others(people, client, url):
    client.force_login(people["admin"])
    assert client.post(url, {"action": "pause"}).status_code == 404
    client.force_login(people["researcher"])
    assert client.post(url, {"action": "pause"}).status_code == 403


def test_non_admins_change_nothing(campaign, people, client):
    for who in ("researcher", "annotator"):
        client.force_login(people[who])
        assert (
            client.post(f"/campaigns/{campaign.pk}/status/", {"action": "close"}).status_code == 403
        )
        assert (
            client.post(
                f"/campaigns/{campaign.pk}/gold/import/", {"file": gold_csv(balanced(2, 2))}
            ).status_code
            == 403
        )
        assert client.post(f"/campaigns/{campaign.pk}/gold/promote-decided/").status_code == 403
        page = client.get(f"/campaigns/{campaign.pk}/")
        assert 'id="lifecycle"' not in page.content.decode()
    assert Campaign.objects.get(pk=campaign.pk).status == "active"
    assert not GoldPair.objects.exists()


# -- gold ----------------------------------------------------------------------------------


def test_the_gold_page_queues_a_job_that_imports_and_a_bad_file_fails_it(
    campaign, people, client, django_capture_on_commit_callbacks
):
    client.force_login(people["admin"])
    url = f"/campaigns/{campaign.pk}/gold/import/"
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(url, {"file": gold_csv(balanced(2, 2))})
    job = Job.objects.get(kind="gold_import")
    assert answer.status_code == 302 and answer["Location"] == f"/jobs/{job.pk}/"
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    assert job.result["created"] == 4 and job.created_by == people["admin"]
    assert (job.done, job.total) == (4, 4)  # the last step's progress: the rows written
    assert lifecycle.gold_balance(campaign) == GoldBalance(relevant=2, irrelevant=2)
    assert set(GoldPair.objects.values_list("created_by", flat=True)) == {people["admin"].pk}
    assert "Imported 4 gold pairs from" in client.get(answer["Location"]).content.decode()
    # The same pairs again: the job fails naming the file, line and field; nothing added.
    with django_capture_on_commit_callbacks(execute=True):
        again = client.post(url, {"file": gold_csv(balanced(2, 2), "again.csv")})
    failed = Job.objects.filter(kind="gold_import").latest("pk")
    assert again["Location"] == f"/jobs/{failed.pk}/"
    failed.refresh_from_db()
    assert failed.status == "failed"
    assert failed.error.startswith("again.csv, line 2, field 'video_key'"), failed.error
    assert GoldPair.objects.filter(campaign=campaign).count() == 4
    assert Pair.objects.filter(campaign__gold_of=campaign).count() == 4
    assert client.post(url, {}).status_code == 400


def test_a_bad_row_late_in_a_gold_file_writes_nothing(campaign, tmp_path):
    """The rows before it are read, never written: the file is checked before the writes."""
    from annotation.gold import service as gold

    path = tmp_path / "late.csv"
    rows = balanced(2, 2) + [("c0", "no-such-video", "relevant")]
    path.write_text(
        "caption_key,video_key,label,explanation\n"
        + "".join(f"{c},{v},{label},why\n" for c, v, label in rows)
    )
    with pytest.raises(gold.FormatError, match="late.csv, line 6, field 'video_key'"):
        gold.import_gold(campaign, path)
    assert not GoldPair.objects.exists()
    assert not Pair.objects.filter(campaign__gold_of=campaign).exists()


def test_promote_names_the_count_and_post_does_it(campaign, people, client):
    decided = list(campaign.pairs.order_by("pk")[:3])
    for pair in decided:
        from annotation.judging import escalations

        escalations.adjudicate(pair, people["admin"], "relevant")
    client.force_login(people["admin"])
    url = f"/campaigns/{campaign.pk}/gold/promote-decided/"
    confirm = client.get(url)
    assert confirm.status_code == 200
    assert "Promote 3 pairs" in confirm.content.decode()
    assert not GoldPair.objects.exists()  # a GET writes nothing
    assert client.post(url, {"explanation": "x" * 2001}).status_code == 400
    assert not GoldPair.objects.exists()
    refused = client.post(url, {"explanation": "Seen by an admin."})  # no confirmed count
    assert refused.status_code == 400 and not GoldPair.objects.exists()
    answer = client.post(url, {"explanation": "Seen by an admin.", "expected": 3})
    assert answer.status_code == 302
    assert set(GoldPair.objects.values_list("pair_id", flat=True)) == {p.pk for p in decided}
    assert "No decided pair" in client.get(url).content.decode()
    assert Pair.objects.filter(campaign=campaign).count() == 9


# -- the command ---------------------------------------------------------------------------


def test_the_command_takes_the_same_gold_file_and_rule(campaign, tmp_path):
    from django.core.management import CommandError, call_command

    short = tmp_path / "short.csv"
    short.write_bytes(gold_csv(balanced(1, 1)).read())
    enough = tmp_path / "enough.csv"
    enough.write_bytes(gold_csv(balanced(2, 2)).read())
    common = ["--dataset", campaign.dataset.name, "--runs", "m", "--depth", "3"]
    with pytest.raises(CommandError, match="short.csv: qualification needs 4 gold pairs"):
        call_command("create_campaign", *common, "--name", "a", "--qualification", "4",
                     "--gold", str(short))  # fmt: skip
    assert not Campaign.objects.filter(name="a").exists()
    call_command("create_campaign", *common, "--name", "b", "--qualification", "4",
                 "--gold", str(enough), "--speed-floor", "4")  # fmt: skip
    made = Campaign.objects.get(name="b")
    assert made.status == Campaign.Status.ACTIVE and made.settings.gold.floor_seconds == 4
    call_command("create_campaign", *common, "--name", "c", "--qualification", "4")
    assert Campaign.objects.get(name="c").status == Campaign.Status.PAUSED


# -- the admin -----------------------------------------------------------------------------


def test_the_admin_changes_status_through_the_same_rule(campaign, people, client):
    client.force_login(people["admin"])
    url = f"/admin/annotation/campaign/{campaign.pk}/change/"
    values = {
        "name": campaign.name,
        "lease_seconds": "300",
        "guidelines": campaign.guidelines,
        "options": "{}",
    }
    assert client.post(url, {**values, "status": "closed"}).status_code == 302
    assert Campaign.objects.get(pk=campaign.pk).status == "closed"
    refused = client.post(url, {**values, "status": "active"})
    assert refused.status_code == 200  # the form again, with the error
    assert "a closed campaign stays closed" in refused.content.decode()
    assert Campaign.objects.get(pk=campaign.pk).status == "closed"

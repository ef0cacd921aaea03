"""Real browser, one whole campaign without ``/admin/`` or a shell: an admin creates it on the
New campaign page (the pool job runs in process), adds a new annotator on its Annotators page
and hands over the password shown once; that annotator logs in and judges every pair it is
served with the keyboard; the admin resolves the labels into a label set and downloads the
CSV export; a researcher reads the leaderboard under that label set. Every request the three
browsers make is recorded and none goes to ``/admin/``. Screenshots at 1280x800 and
768x1024 go to FIREPOOL_SCREENSHOTS when it is set."""

import csv
import re

import pytest
from django.contrib.auth import get_user_model

from annotation.models import Campaign, Judgement
from config.roles import RESEARCHER, ensure_groups
from retrieval.datasets.demo.service import create_demo_dataset
from retrieval.models import LabelSet
from tests.browser_support import IMMEDIATE_TASKS, RECORD_SHOWN, login, needs_chromium, shoot_full
from tests.factories import random_run

pytestmark = [pytest.mark.browser, needs_chromium, pytest.mark.django_db(transaction=True)]
PASSWORD = "pw-end-to-end-12345"


def watched(context, seen: list[str]):
    """A page of ``context`` whose every request URL is appended to ``seen``."""
    context.on("request", lambda request: seen.append(request.url))
    return context.new_page()


def test_a_campaign_from_creation_to_export_and_leaderboard(live_server, browser, settings):
    settings.TASKS = IMMEDIATE_TASKS
    dataset = create_demo_dataset(name="e2e-world", n_videos=12, seed=3, workers=1)
    random_run(dataset, "alpha", 1)
    random_run(dataset, "beta", 2)
    user_model = get_user_model()
    user_model.objects.create_superuser("boss", "boss@example.org", PASSWORD)
    researcher = user_model.objects.create_user("res", password=PASSWORD)
    researcher.groups.add(ensure_groups()[RESEARCHER])
    base = live_server.url
    seen: list[str] = []

    # The admin creates the campaign: two runs, one label a pair, no speed rule to trip.
    admin = watched(browser.new_context(viewport={"width": 1280, "height": 800}), seen)
    login(admin, base, "boss", PASSWORD)
    admin.goto(f"{base}/campaigns/")
    admin.click("#new-campaign")
    admin.wait_for_url(f"{base}/campaigns/new/")
    with admin.expect_navigation():
        admin.select_option("#id_pick_dataset", dataset.name)
    admin.check("input[name=runs][value=alpha]")
    admin.check("input[name=runs][value=beta]")
    admin.fill("#id_name", "whole campaign")
    admin.fill("#id_depth", "2")
    admin.fill("#id_second_label_rate", "0")
    admin.fill("#id_gold_rate", "0")
    admin.fill("#id_speed_floor", "0")
    admin.click("button[type=submit] >> text=Create the campaign")
    admin.wait_for_url(re.compile(r".*/jobs/\d+/$"))
    admin.wait_for_selector("a.result-page")
    admin.click("a.result-page")
    campaign = Campaign.objects.get(name="whole campaign")
    admin.wait_for_url(f"{base}/campaigns/{campaign.pk}/")
    assert admin.inner_text("#lifecycle-status") == "active"
    pairs = campaign.pairs.count()
    assert pairs > 0

    # A new annotator's account, made and invited on the campaign's Annotators page.
    admin.click("#annotators-link")
    admin.fill("#new-username", "judy")
    admin.click("#add-annotator-button")
    admin.wait_for_selector("#new-password")
    password = admin.inner_text("#new-password").strip()
    assert len(password) >= 12
    shoot_full(admin, "e2e-1-new-annotator")

    # She judges every pair served to her, relevant when the clip is the caption's own.
    judge_context = browser.new_context(viewport={"width": 1280, "height": 800})
    annotator = watched(judge_context, seen)
    annotator.add_init_script(
        RECORD_SHOWN
    )  # the page's test hooks: data-pair, data-annotator-state
    login(annotator, base, "judy", password, landing="/judge/")
    card = annotator.locator(f".progress-card[data-campaign='{campaign.pk}']")
    assert "Judged by you in all" in card.inner_text()
    annotator.goto(f"{base}/judge/{campaign.pk}/")
    judged = relevant = 0
    previous = ""
    while True:
        annotator.wait_for_function(
            "prev => (document.body.dataset.pair && document.body.dataset.pair !== prev"
            " && document.body.dataset.videoState === 'seen')"  # R and N wait for the video
            " || document.body.dataset.annotatorState === 'finished'",
            arg=previous,
            timeout=15000,
        )
        if annotator.evaluate("document.body.dataset.annotatorState") == "finished":
            break
        previous = annotator.evaluate("document.body.dataset.pair")
        key = "r" if judged % 3 == 0 else "n"
        annotator.keyboard.press(key)
        relevant += key == "r"
        judged += 1
        assert judged <= pairs, "served more pairs than the campaign pooled"
    assert judged == pairs
    assert (
        Judgement.objects.filter(pair__campaign=campaign, annotator__username="judy").count()
        == pairs
    )
    shoot_full(annotator, "e2e-2-finished")
    judge_context.close()

    # The admin resolves the labels into a label set and downloads the CSV export.
    admin.goto(f"{base}/campaigns/{campaign.pk}/")
    admin.select_option("#method", "majority")
    admin.click("form.resolve button[type=submit]")
    admin.wait_for_selector(".messages")
    assert "Label set" in admin.inner_text(".messages")
    label_set = LabelSet.objects.get(dataset=dataset, name=campaign.name)
    assert label_set.pair_count == pairs
    shoot_full(admin, "e2e-3-resolved")
    with admin.expect_download() as download:
        admin.click("#exports a >> text=csv")
    with open(download.value.path(), encoding="utf-8") as exported:
        rows = list(csv.DictReader(exported))
    assert len(rows) == pairs
    assert {row["annotators"] for row in rows} == {"judy"}
    assert sum(row["label"] == "relevant" for row in rows) == relevant

    # A researcher reads the models' corrected scores under the new label set.
    reader = watched(browser.new_context(viewport={"width": 1280, "height": 800}), seen)
    login(reader, base, "res", PASSWORD)
    reader.goto(f"{base}/datasets/{dataset.name}/leaderboard/")
    with reader.expect_navigation():
        reader.select_option("#labels", label_set.name)
    reader.wait_for_selector("#leaderboard")
    board = reader.inner_text("#leaderboard")
    assert "alpha" in board and "beta" in board
    shoot_full(reader, "e2e-4-leaderboard")

    assert not [url for url in seen if "/admin/" in url], "a step went through /admin/"

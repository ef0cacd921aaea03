"""The annotator's journey in Debian's Chromium: fail qualification (the feedback stays with
its pair), wait out the cool-down, pass on the retry, judge too fast, be warned, be paused by
the speed rule, and find the judging page and the home list agreeing. Then every other state
page once, at 1280x800 and 768x1024. Screenshots go to FIREPOOL_SCREENSHOTS when it is set."""

import os
import re
import time
from dataclasses import replace

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from annotation.campaigns.settings import GoldSettings
from annotation.models import AnnotatorStanding, Campaign, GoldPair, Lease, Pair
from annotation.people import standing
from annotation.people import state as states
from config.roles import ANNOTATOR, ensure_groups
from retrieval.datasets.demo.service import create_demo_dataset
from tests.browser_support import RECORD_SHOWN, login, needs_chromium, shoot_screen
from tests.factories import random_run_campaign

PASSWORD = "pw-annotator-states-1"
WIDE = {"width": 1280, "height": 800}
NARROW = {"width": 768, "height": 1024}

pytestmark = [pytest.mark.browser, needs_chromium, pytest.mark.django_db(transaction=True)]


def shoot(page, name: str) -> None:
    shoot_screen(page, "" + name)


def make_annotator(username: str = "ann"):
    user = get_user_model().objects.create_user(username, password=PASSWORD)
    user.groups.add(ensure_groups()[ANNOTATOR])
    return user


def build_campaign(name: str = "states", depth: int = 5):
    dataset = create_demo_dataset(name=f"b{name}", n_videos=24, seed=1, workers=1)
    return random_run_campaign(dataset, name, depth, seed=0)


def add_training_gold(campaign, n: int = 2, cooldown: int = 3) -> None:
    """``n`` relevant gold pairs off the pool, and a qualification of ``n`` training pairs
    that needs every answer right."""
    pooled = set(campaign.pairs.values_list("caption_id", "video_id"))
    captions = list(campaign.dataset.captions.filter(split="test").order_by("pk")[:3])
    videos = list(campaign.dataset.videos.filter(split="test").order_by("pk")[:3])
    made = 0
    for caption in captions:
        for video in videos:
            if (caption.pk, video.pk) not in pooled and made < n:
                GoldPair.objects.create(
                    campaign=campaign,
                    caption=caption,
                    video=video,
                    label="relevant",
                    explanation=f"Everything the caption names is in the video ({made}).",
                    guideline="Relevant only if every element of the caption is in the video.",
                    source=GoldPair.Source.IMPORTED,
                )
                made += 1
    gold = GoldSettings(rate=0.0, qualification=True, threshold=1.0, cooldown_seconds=cooldown)
    campaign.set_settings(replace(campaign.settings, gold=gold))


def open_page(browser, base_url: str, path: str, username: str = "ann"):
    page = browser.new_page(viewport=WIDE)
    page.add_init_script(RECORD_SHOWN)
    login(page, base_url, username, PASSWORD, landing="/judge/")
    page.goto(f"{base_url}{path}")
    return page


def wait_for_pair(page, previous: str = "") -> str:
    """The next task on screen once its video shows (R and N wait for that)."""
    page.wait_for_function(
        "prev => document.body.dataset.pair && document.body.dataset.pair !== prev"
        " && document.body.dataset.videoState === 'seen'",
        arg=previous,
        timeout=15000,
    )
    return page.evaluate("document.body.dataset.pair")


def wait_for_state(page, key: str) -> None:
    page.wait_for_function(
        "key => document.body.dataset.annotatorState === key && !document.body.dataset.pair",
        arg=key,
        timeout=15000,
    )


def answer_training(page, key: str) -> str:
    """Answer the training pair on screen; check the feedback is about that pair; press Next."""
    pair = page.evaluate("document.body.dataset.pair")
    caption = page.locator("#judge-caption").inner_text()
    page.keyboard.press(key)
    page.wait_for_selector("#judge-feedback:not([hidden])", timeout=15000)
    assert page.evaluate("document.body.dataset.pair") == pair  # the pair stays on screen
    assert page.locator("#judge-caption").inner_text() == caption
    assert caption[:40] in page.locator("#judge-feedback-pair").inner_text()
    assert page.locator("[data-action=relevant]").is_disabled()
    return page.locator("#judge-feedback").inner_text()


def list_card(page, base_url: str, campaign) -> str:
    page.goto(f"{base_url}/judge/")
    return page.locator(f".progress-card[data-campaign='{campaign.pk}']").inner_text()


def judging_bar(page) -> tuple[str, str, str]:
    """The judging page's progress bar: its percentage, its text, and the labels left."""
    meter = page.locator("#judge-meter")
    assert meter.is_visible()
    percent = meter.locator("[role=progressbar]").get_attribute("aria-valuenow")
    left = re.search(
        r"labels (?:left|needed now) ([\d,]+)", page.locator("#judge-progress").inner_text()
    )
    return percent, page.locator("#judge-meter-text").inner_text(), left.group(1)


def assert_list_bar_matches(page, base_url: str, campaign, judging: tuple[str, str, str]) -> None:
    """The home list's bar for ``campaign`` is on screen with the judging page's figures."""
    percent, text, left = judging
    list_card(page, base_url, campaign)
    card = page.locator(f".progress-card[data-campaign='{campaign.pk}']")
    meter = card.locator(".state-meter")
    assert meter.is_visible()
    assert meter.locator("[role=progressbar]").get_attribute("aria-valuenow") == percent
    assert card.locator(".state-meter-fill").evaluate("el => el.style.width") == f"{percent}%"
    assert f"({percent}%)" in text
    assert card.locator(".state-meter-text").inner_text() == text
    assert card.locator(".labels-left").inner_text() == left


def test_fail_then_pass_qualification_then_paused_for_speed(live_server, browser):
    campaign = build_campaign()
    assert campaign.pairs.count() >= 16  # enough for the speed rule to decide
    add_training_gold(campaign)
    user = make_annotator()
    base = live_server.url
    page = open_page(browser, base, f"/judge/{campaign.pk}/")

    # First try: one wrong answer fails it (every answer must be right).
    wait_for_pair(page)
    assert "qualification 0 / 2" in page.locator("#judge-progress").inner_text()
    feedback = answer_training(page, "n")
    assert "Not right." in feedback and "The pair is relevant." in feedback
    assert "Guideline: Relevant only if every element" in feedback
    shoot(page, "qualification-feedback")
    first = page.evaluate("document.body.dataset.pair")
    page.keyboard.press("Enter")
    wait_for_pair(page, first)
    assert "qualification 1 / 2" in page.locator("#judge-progress").inner_text()
    assert "Right." in answer_training(page, "r")
    page.locator("[data-action=next]").click()
    wait_for_state(page, states.QUALIFICATION_FAILED)
    assert page.locator("#judge-caption").inner_text() == "Qualification not passed"
    message = page.locator("#judge-state").inner_text()
    assert "You scored 50%" in message and "2 of 3 tries left" in message
    assert "state-warn" in page.locator("#judge-state").get_attribute("class")
    assert page.locator("[data-action=relevant]").is_disabled()
    shoot(page, "qualification-failed")
    card = list_card(page, base, campaign)
    assert "Qualification not passed" in card and "2 of 3 tries left" in card
    assert "Continue" not in card and "Start judging" not in card
    shoot(page, "home-qualification-failed")

    # After the cool-down: a second try, all right: admitted.
    time.sleep(3.2)
    page.goto(f"{base}/judge/{campaign.pk}/")
    pair = wait_for_pair(page)
    assert "qualification 0 / 2" in page.locator("#judge-progress").inner_text()
    answer_training(page, "r")
    page.keyboard.press("Enter")
    pair = wait_for_pair(page, pair)
    answer_training(page, "r")
    page.keyboard.press("Enter")
    pair = wait_for_pair(page, pair)
    page.wait_for_function(
        "() => document.getElementById('judge-progress').textContent.includes('judged today 0')"
    )
    assert page.evaluate("document.body.dataset.annotatorState") == states.JUDGING
    assert "You passed the qualification" in page.locator("#judge-status").inner_text()
    assert not page.locator("#judge-meter").is_hidden()
    shoot(page, "judging")

    # Too fast: a warning first, then the speed rule pauses. The answers travel while the
    # next pair shows, so the warning may come and go between two looks: a watcher on the
    # status line notes that it was shown at all.
    page.evaluate(
        """() => new MutationObserver(() => {
             if (document.getElementById('judge-status-text').textContent.includes('Slow down'))
               window.sawSlowDown = true;
           }).observe(document.getElementById('judge-status'),
                      {subtree: true, childList: true, characterData: true})"""
    )
    warned = False
    for _ in range(30):
        page.keyboard.press("r")
        # The next pair on screen and seen, or the pause (an empty page alone may only be
        # waiting for the server's next pair while answers travel).
        page.wait_for_function(
            "([prev, paused]) => document.body.dataset.annotatorState === paused"
            " || (document.body.dataset.pair && document.body.dataset.pair !== prev"
            " && document.body.dataset.videoState === 'seen')",
            arg=[pair, states.PAUSED_BY_RULE],
            timeout=15000,
        )
        if page.evaluate("document.body.dataset.annotatorState") == states.PAUSED_BY_RULE:
            pair = ""
        else:
            pair = page.evaluate("document.body.dataset.pair")
        status = page.locator("#judge-status")
        if not warned and status.is_visible() and "Slow down" in status.inner_text():
            warned = True
            assert "Slow down: videos must be watched" in status.inner_text()
            assert standing.paused(campaign, user) is None  # warned before the pause
            shoot(page, "speed-warning")
        if not pair:
            break
    assert warned or page.evaluate("window.sawSlowDown === true")
    wait_for_state(page, states.PAUSED_BY_RULE)
    assert page.locator("#judge-caption").inner_text() == "Paused: too fast"
    box = page.locator("#judge-state")
    assert "speed rule paused you" in box.inner_text() and "Watch each video" in box.inner_text()
    assert "state-stop" in box.get_attribute("class")
    assert "All done" not in page.content()
    shoot(page, "paused-speed")
    # The home list's bar: visible, with the judging page's percentage, words and figure.
    assert_list_bar_matches(page, base, campaign, judging_bar(page))
    card = list_card(page, base, campaign)
    assert "Paused: too fast" in card and "Continue judging" not in card
    shoot(page, "home-paused-speed")


def _state_page(browser, base, campaign, key: str, name: str, username: str = "ann"):
    page = open_page(browser, base, f"/judge/{campaign.pk}/", username)
    wait_for_state(page, key)
    assert page.locator("#judge-state").get_attribute("data-state") == key
    assert page.locator("#judge-state").is_visible()
    shoot(page, name)
    return page


def test_every_state_page(live_server, browser):
    """Each remaining state once: its own heading on the judging page, and the list agreeing."""
    base = live_server.url
    campaign = build_campaign("every", depth=3)
    user = make_annotator()
    make_annotator("other")

    # Judging, with the escalation box open at 768 px: Send is on screen; then the
    # confirmations of escalation and undo.
    page = open_page(browser, base, f"/judge/{campaign.pk}/")
    pair = wait_for_pair(page)
    page.set_viewport_size(NARROW)
    page.keyboard.press("e")
    send = page.locator(".judge-send")
    box = send.bounding_box()
    assert box["y"] >= 0 and box["y"] + box["height"] <= NARROW["height"], box
    if os.environ.get("FIREPOOL_SCREENSHOTS"):
        page.screenshot(path=os.path.join(os.environ["FIREPOOL_SCREENSHOTS"], "escalate-768.png"))
    page.keyboard.type("the video is black")
    page.keyboard.press("Enter")
    pair = wait_for_pair(page, pair)
    assert "Sent to an admin" in page.locator("#judge-status").inner_text()
    page.set_viewport_size(WIDE)
    shoot(page, "escalated")
    page.keyboard.press("r")
    pair = wait_for_pair(page, pair)
    page.keyboard.press("u")
    pair = wait_for_pair(page, pair)
    assert "Undone:" in page.locator("#judge-status").inner_text()
    shoot(page, "undone")
    page.close()

    # Nothing free: another annotator holds every open pair.
    Lease.objects.filter(annotator=user).delete()
    Pair.objects.filter(campaign=campaign).update(needed=1, leased=1, open_slots=0)
    page = _state_page(browser, base, campaign, states.NOTHING_FREE, "nothing-free")
    assert page.locator("#judge-caption").inner_text() == "No pair is free right now"
    card = list_card(page, base, campaign)
    assert "No pair is free right now" in card and "Continue judging" not in card
    page.close()
    Pair.objects.filter(campaign=campaign, held=False).update(leased=0, open_slots=1)

    # Paused by an admin.
    AnnotatorStanding.objects.create(
        campaign=campaign, annotator=user, paused_at=timezone.now(), reason="checking your labels"
    )
    page = _state_page(browser, base, campaign, states.PAUSED_BY_ADMIN, "paused-admin")
    assert "checking your labels" in page.locator("#judge-state").inner_text()
    card = list_card(page, base, campaign)
    assert "Paused by an admin" in card
    assert "Continue judging" not in card
    shoot(page, "home-paused-admin")
    page.close()
    AnnotatorStanding.objects.all().delete()

    # Campaign paused, then closed: the campaign's state wins.
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.PAUSED)
    page = _state_page(browser, base, campaign, states.CAMPAIGN_PAUSED, "campaign-paused")
    text = page.locator("#judge").inner_text()
    assert "Campaign paused" in text and "No pair is free" not in text
    page.close()
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.CLOSED)
    page = _state_page(browser, base, campaign, states.CLOSED, "campaign-closed")
    page.close()

    # Finished: nothing left for anyone.
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.ACTIVE)
    Pair.objects.filter(campaign=campaign).update(needed=0, open_slots=0)
    page = _state_page(browser, base, campaign, states.FINISHED, "finished")
    assert page.locator("#judge-caption").inner_text() == "Finished"
    card = list_card(page, base, campaign)
    assert "Finished" in card and "Continue judging" not in card
    shoot(page, "home-finished")
    page.close()

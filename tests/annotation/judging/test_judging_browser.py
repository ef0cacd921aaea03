"""The judging page in Debian's Chromium: keyboard-only judging, preloading, undo, guidelines,
escalation, a network failure, and a finished campaign, checked against the database."""

import json
import os
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from annotation.campaigns.settings import GoldSettings
from annotation.judging import queue, task_ids
from annotation.models import Escalation, Judgement, Lease, Pair
from config.roles import ANNOTATOR, ensure_groups
from retrieval.datasets.demo.service import create_demo_dataset
from tests.browser_support import RECORD_SHOWN, login, needs_chromium
from tests.factories import random_run_campaign

PASSWORD = "pw-annotator-12345"
SCREENSHOT = "/tmp/judge.png"
SCREENSHOT_TABLET = "/tmp/judge-tablet.png"
SCREENSHOT_GUIDELINES = "/tmp/judge-guidelines.png"

pytestmark = [
    pytest.mark.browser,
    needs_chromium,
    pytest.mark.django_db(transaction=True),
]

# The visible player: is it the pair on screen, shown, ready and really advancing?
PLAYBACK = """
async () => {
  const v = window.firepoolJudge.activeVideo();
  const t1 = v.currentTime;
  await new Promise((resolve) => setTimeout(resolve, 350));
  return {
    pair: v.dataset.pair, body: document.body.dataset.pair, ready: v.readyState,
    t1: t1, t2: v.currentTime, paused: v.paused, error: v.error && v.error.code,
    visibility: getComputedStyle(v).visibility, width: v.getBoundingClientRect().width,
    fit: getComputedStyle(v).objectFit,
    inside: (() => {
      const r = v.getBoundingClientRect();
      const s = document.getElementById("judge-stage").getBoundingClientRect();
      return r.top >= s.top - 1 && r.bottom <= s.bottom + 1 && r.left >= s.left - 1
        && r.right <= s.right + 1;
    })(),
  };
}
"""


def build_campaign(name: str = "c", depth: int = 5):
    """A 24-clip demo world and a campaign pooling one run over its test split."""
    dataset = create_demo_dataset(name="b", n_videos=24, seed=1, workers=1)
    return random_run_campaign(dataset, name, depth, seed=0)


def make_annotator(username: str = "ann"):
    user = get_user_model().objects.create_user(username, password=PASSWORD)
    user.groups.add(ensure_groups()[ANNOTATOR])
    return user


def open_judge_page(browser, base_url: str, campaign, username: str = "ann", viewport=None):
    page = browser.new_page(viewport=viewport or {"width": 1280, "height": 800})
    page.add_init_script(RECORD_SHOWN)
    login(page, base_url, username, PASSWORD, landing="/judge/")  # annotators land there
    page.goto(f"{base_url}/judge/{campaign.pk}/")
    return page


def wait_for_pair(page, previous: str = "") -> str:
    """Wait until a task other than ``previous`` is on screen and its video has been shown;
    the task's id as the page was served it (:func:`pair_of` gives its pair)."""
    page.wait_for_function(
        "prev => document.body.dataset.pair && document.body.dataset.pair !== prev",
        arg=previous,
        timeout=15000,
    )
    pair = page.evaluate("document.body.dataset.pair")
    page.wait_for_function(
        "pair => window.__shown.some((d) => String(d.pair) === pair)", arg=pair, timeout=15000
    )
    # R and N wait for the video's first frame on screen.
    page.wait_for_function("() => document.body.dataset.videoState === 'seen'", timeout=15000)
    return pair


def pair_of(task: str, username: str = "ann") -> int:
    """The pair behind a task id served to ``username``."""
    return task_ids.decode(get_user_model().objects.get(username=username).pk, task)


def assert_plays(page, pair: str) -> None:
    state = page.evaluate(PLAYBACK)
    assert state["pair"] == state["body"] == str(pair), state
    assert state["error"] is None, state
    assert state["ready"] >= 3, state
    assert not state["paused"], state
    assert state["t2"] != state["t1"], f"video is not advancing: {state}"
    assert state["visibility"] == "visible" and state["width"] > 100, state
    # The whole frame is on screen: the player fits the stage and letterboxes the video.
    assert state["inside"] and state["fit"] == "contain", state


def test_keyboard_judging_preloads_and_undoes(live_server, browser):
    campaign = build_campaign()
    user = make_annotator()
    page = open_judge_page(browser, live_server.url, campaign)

    pair = wait_for_pair(page)
    assert_plays(page, pair)
    assert page.locator("#judge-caption").inner_text().strip() not in ("", "Loading…")
    assert "judged today 0" in page.locator("#judge-progress").inner_text()
    page.screenshot(path=SCREENSHOT)

    pressed: list[tuple[str, str]] = []
    for key in ["r", "n", "r", "n", "r"]:
        page.wait_for_timeout(150)  # a judgement takes some time: seconds > 0
        pressed.append((pair, key))
        page.keyboard.press(key)
        pair = wait_for_pair(page, str(pair))
        assert_plays(page, pair)
    assert "judged today 5" in page.locator("#judge-progress").inner_text()

    # Undo takes back the latest judgement and shows that pair again.
    last_pair = pressed[-1][0]
    page.keyboard.press("u")
    assert wait_for_pair(page, str(pair)) == last_pair
    assert_plays(page, last_pair)
    page.wait_for_function(
        "() => document.getElementById('judge-progress').textContent.includes('judged today 4')"
    )
    assert "Undone:" in page.locator("#judge-status").inner_text()  # said, not only done

    # A tablet in portrait: the same page, narrower.
    page.set_viewport_size({"width": 820, "height": 1180})
    page.wait_for_timeout(200)
    page.screenshot(path=SCREENSHOT_TABLET)
    for selector in ("[data-action=relevant]", "[data-action=irrelevant]"):
        box = page.locator(selector).bounding_box()
        assert box["height"] >= 44 and box["width"] >= 120, box

    live = Judgement.objects.filter(annotator=user, undone_at__isnull=True)
    undone = Judgement.objects.filter(annotator=user, undone_at__isnull=False)
    assert live.count() == 4
    assert list(undone.values_list("pair_id", flat=True)) == [pair_of(last_pair)]
    labels = {"r": "relevant", "n": "irrelevant"}
    assert dict(live.values_list("pair_id", "label")) == {
        pair_of(task): labels[key] for task, key in pressed[:-1]
    }
    assert all(seconds and seconds > 0 for seconds in live.values_list("seconds", flat=True))

    shown = page.evaluate("window.__shown")
    advances = [d for d in shown if d["cause"] == "submit"]
    assert len(advances) == 5
    assert sum(d["preloaded"] for d in advances) >= 3, advances
    assert all(d["ms"] >= 0 for d in advances)
    undo_shown = [d for d in shown if d["cause"] == "undo"]
    assert [d["pair"] for d in undo_shown] == [last_pair]


def test_guidelines_panel_and_escalation(live_server, browser):
    campaign = build_campaign()
    user = make_annotator()
    page = open_judge_page(browser, live_server.url, campaign)
    pair = wait_for_pair(page)

    panel = page.locator("#judge-guidelines")
    assert not panel.is_visible()
    page.keyboard.press("g")
    assert panel.is_visible()
    assert "every element" in panel.inner_text()
    assert page.locator("[data-action=guidelines]").get_attribute("aria-expanded") == "true"
    page.screenshot(path=SCREENSHOT_GUIDELINES)
    page.keyboard.press("Escape")
    assert not panel.is_visible()
    page.keyboard.press("?")
    assert panel.is_visible()
    page.keyboard.press("g")
    assert not panel.is_visible()

    # Space plays and pauses, even with a judgement button focused (which it never presses).
    page.focus("[data-action=relevant]")
    page.keyboard.press(" ")
    assert page.evaluate("window.firepoolJudge.activeVideo().paused")
    page.keyboard.press(" ")
    assert not page.evaluate("window.firepoolJudge.activeVideo().paused")
    page.wait_for_timeout(200)
    assert page.evaluate("document.body.dataset.pair") == str(pair)
    assert not Judgement.objects.filter(annotator=user).exists()
    page.evaluate("document.activeElement.blur()")

    # Escalate: E opens the form; keys typed there are text, not judgements.
    page.keyboard.press("e")
    reason = page.locator("#judge-reason")
    assert reason.is_visible()
    assert page.evaluate("document.activeElement.id") == "judge-reason"
    page.keyboard.press("Escape")
    assert not reason.is_visible()
    page.keyboard.press("e")
    page.keyboard.type("red ball hidden: cannot tell")
    page.keyboard.press("Enter")
    new_pair = wait_for_pair(page, str(pair))
    assert new_pair != pair
    escalation = Escalation.objects.get(annotator=user)
    assert escalation.pair_id == pair_of(pair)
    assert escalation.reason == "red ball hidden: cannot tell"
    assert "Sent to an admin" in page.locator("#judge-status").inner_text()
    assert Pair.objects.get(pk=pair_of(pair)).held
    assert not Judgement.objects.filter(annotator=user).exists()


def test_network_failure_is_retried_with_the_same_uuid(live_server, browser):
    campaign = build_campaign()
    user = make_annotator()
    page = open_judge_page(browser, live_server.url, campaign)
    pair = wait_for_pair(page)

    bodies: list[dict] = []
    failed = []

    def lose_answer(route):
        bodies.append(json.loads(route.request.post_data))
        if not failed:
            # The server stores the judgement, but its answer never reaches the page.
            route.fetch()
            failed.append(True)
            route.abort("connectionreset")
        else:
            route.continue_()

    page.route("**/submit/", lose_answer)
    page.wait_for_timeout(100)
    page.keyboard.press("r")
    status = page.locator("#judge-status")
    page.wait_for_function(
        "() => document.getElementById('judge-status-text').textContent.includes('Network problem')"
    )
    assert status.is_visible() and page.locator("#judge-retry").is_visible()
    assert page.evaluate("document.body.dataset.pair") == str(pair)
    page.keyboard.press("r")  # the same key retries (so would the Retry button, or a timer)
    wait_for_pair(page, str(pair))
    assert not status.is_visible()

    assert len(bodies) >= 2 and len({body["uuid"] for body in bodies}) == 1
    judgement = Judgement.objects.get(annotator=user)
    assert (judgement.pair_id, judgement.label, str(judgement.uuid)) == (
        pair_of(pair),
        "relevant",
        bodies[0]["uuid"],
    )


def test_expired_lease_moves_on(live_server, browser):
    campaign = build_campaign()
    user = make_annotator()
    page = open_judge_page(browser, live_server.url, campaign)
    pair = wait_for_pair(page)
    # The lease ran out (released by the next request for work) and someone else took the
    # pair's only slot.
    Lease.objects.filter(annotator=user, pair_id=pair_of(pair)).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    queue.release_expired(campaign, timezone.now())
    Pair.objects.filter(pk=pair_of(pair)).update(leased=1, open_slots=0)
    page.keyboard.press("n")
    new_pair = wait_for_pair(page, str(pair))
    assert new_pair != pair
    assert_plays(page, new_pair)
    status = page.locator("#judge-status")
    assert status.is_visible()
    assert "Your time on this pair ran out; here is the next one" in status.inner_text()
    assert not Judgement.objects.filter(annotator=user).exists()


def test_finished_campaign_says_so(live_server, browser):
    campaign = build_campaign()
    make_annotator()
    Pair.objects.filter(campaign=campaign).update(needed=0, open_slots=0)
    page = open_judge_page(browser, live_server.url, campaign)
    page.wait_for_function("() => document.body.dataset.judgeState === 'finished'")
    status = page.locator("#judge-state")
    assert status.is_visible() and page.locator("#judge-caption").inner_text() == "Finished"
    assert "Nothing is left to judge here, for anyone" in status.inner_text()
    assert page.evaluate("document.body.dataset.annotatorState") == "finished"
    assert page.locator("[data-action=relevant]").is_disabled()
    assert page.evaluate("document.body.dataset.pair") == ""
    page.keyboard.press("r")  # nothing to judge: no request, no error
    page.wait_for_timeout(200)
    assert "Nothing is left" in status.inner_text()
    assert page.locator("#judge-status").is_hidden()


def test_key_hints_come_from_the_action_table_and_test_hooks_stay_off(live_server, browser):
    """Without the test flag the page exposes no hooks, yet every key and its hint work."""
    campaign = build_campaign()
    user = make_annotator()
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    login(page, live_server.url, "ann", PASSWORD, landing="/judge/")
    page.goto(f"{live_server.url}/judge/{campaign.pk}/")
    page.wait_for_function(
        "() => !document.getElementById('judge-caption').textContent.includes('Loading')"
    )
    hooks = page.evaluate(
        "() => [typeof window.firepoolJudge, document.body.dataset.pair, document.body.dataset.judgeState]"
    )
    assert hooks == ["undefined", None, None]
    hints = page.evaluate(
        """() => Array.from(document.querySelectorAll('#judge [data-action], #judge [data-hint]'))
            .map((e) => [e.dataset.action || e.dataset.hint,
                         (e.querySelector('kbd') || {}).textContent || null,
                         e.getAttribute('aria-keyshortcuts')])"""
    )
    assert dict((name, (kbd, aria)) for name, kbd, aria in hints) == {
        "retry": (None, None),
        "relevant": ("R", "R"),
        "irrelevant": ("N", "N"),
        "escalate": ("E", "E"),
        "broken": ("B", "B"),
        "escalate-cancel": ("Esc", "Escape"),
        "undo": ("U", "U"),
        "guidelines": ("G", "G ?"),
        "play": ("Space", None),
        "guidelines-close": ("Esc", "Escape"),
        "next": ("Enter", "Enter"),
    }
    page.wait_for_selector("[data-action=relevant]:not([disabled])")  # once the video shows
    page.keyboard.press("r")
    page.wait_for_function(
        "() => document.getElementById('judge-progress').textContent.includes('judged today 1')"
    )
    assert Judgement.objects.filter(annotator=user, label="relevant").count() == 1
    page.click("[data-action=irrelevant]")  # Playwright waits for it to be enabled
    page.wait_for_function(
        "() => document.getElementById('judge-progress').textContent.includes('judged today 2')"
    )
    assert Judgement.objects.filter(annotator=user, label="irrelevant").count() == 1


@needs_chromium
def test_caption_roles_are_underlined_with_a_legend(live_server, browser):
    """FIRE's rule made visible: who, does what, where ... underlined in the caption."""
    campaign = build_campaign()
    make_annotator()
    page = open_judge_page(browser, live_server.url, campaign)
    pair = wait_for_pair(page)
    caption = Pair.objects.select_related("caption").get(pk=pair_of(pair)).caption
    assert caption.role_spans, "pooling stored the caption's role spans"
    heading = page.locator("#judge-caption")
    assert heading.inner_text() == caption.text  # the words are unchanged
    verbs = [caption.text[start:end] for start, end, role in caption.role_spans if role == "V"]
    shown = page.locator("#judge-caption .role-does").all_inner_texts()
    assert shown == verbs
    assert page.locator(".role-legend").is_visible()
    page.screenshot(path=str(Path(os.environ.get("FIREPOOL_SCREENSHOTS", "/tmp")) / "roles.png"))


SCREENSHOT_QUALIFICATION = "/tmp/judge-qualification.png"


def test_qualification_shows_feedback_then_the_score(live_server, browser):
    """Before admission the page says where the annotator stands, explains each training
    answer, and shows the score with the retry time when the try fails."""
    from annotation.models import GoldPair

    campaign = build_campaign("q")
    pooled = set(campaign.pairs.values_list("caption_id", "video_id"))
    captions = list(campaign.dataset.captions.filter(split="test").order_by("pk")[:3])
    videos = list(campaign.dataset.videos.filter(split="test").order_by("pk")[:3])
    made = 0
    for caption in captions:
        for video in videos:
            if (caption.pk, video.pk) not in pooled and made < 2:
                GoldPair.objects.create(
                    campaign=campaign,
                    caption=caption,
                    video=video,
                    label="relevant",
                    explanation=f"The video shows everything the caption says ({made}).",
                    guideline="Relevant only if every element of the caption is in the video.",
                    source=GoldPair.Source.IMPORTED,
                )
                made += 1
    gold = GoldSettings(rate=0.0, qualification=True, threshold=1.0)
    campaign.set_settings(replace(campaign.settings, gold=gold))
    make_annotator()
    page = open_judge_page(browser, live_server.url, campaign)
    pair = wait_for_pair(page)
    assert "qualification 0 / 2" in page.locator("#judge-progress").inner_text()
    caption = page.locator("#judge-caption").inner_text()
    page.keyboard.press("n")  # wrong: every training pair is relevant
    page.wait_for_selector("#judge-feedback:not([hidden])", timeout=15000)
    feedback = page.locator("#judge-feedback").inner_text()
    assert "Not right." in feedback and "The pair is relevant." in feedback
    assert "every element" in feedback
    # The feedback stays with the pair it is about until Next.
    assert page.evaluate("document.body.dataset.pair") == pair
    assert page.locator("#judge-caption").inner_text() == caption
    assert caption[:40] in page.locator("#judge-feedback-pair").inner_text()
    page.keyboard.press("Enter")
    pair = wait_for_pair(page, str(pair))
    assert "qualification 1 / 2" in page.locator("#judge-progress").inner_text()
    page.screenshot(path=SCREENSHOT_QUALIFICATION)
    page.keyboard.press("r")
    page.wait_for_selector("#judge-feedback:not([hidden])", timeout=15000)
    page.locator("[data-action=next]").click()
    page.wait_for_function(
        "() => document.getElementById('judge-state-message').textContent.includes('You scored')",
        timeout=15000,
    )
    status = page.locator("#judge-state-message").inner_text()
    assert page.locator("#judge-caption").inner_text() == "Qualification not passed"
    assert "50%" in status and "try again" in status and "2 of 3 tries left" in status
    assert not Judgement.objects.filter(pair__campaign=campaign).exists()

"""The judging page in Debian's Chromium: a label means the video was seen (R and N wait for
its first frame; a video that does not play is reported, not judged), the next pair shows on
the key press while the answer travels, a failed answer brings its pair back, and a paused
campaign changes the page at once. Checked against the database; the videos that do not
play are made here with PyAV (an HEVC MP4 with sound, an MPEG-4 Part 2 AVI)."""

import json
import time
from pathlib import Path

import av
import numpy as np
import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.judging import task_ids
from annotation.models import Campaign, Escalation, Judgement
from config.roles import ADMIN, ANNOTATOR, ensure_groups
from retrieval.datasets.demo.service import create_demo_dataset
from retrieval.models import Video
from tests.browser_support import RECORD_SHOWN, login, needs_chromium, shoot_screen
from tests.factories import random_run_campaign

pytestmark = [pytest.mark.browser, needs_chromium, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-annotator-12345"
WIDE = {"width": 1280, "height": 800}
NARROW = {"width": 768, "height": 1024}


def shoot(page, name: str) -> None:
    shoot_screen(page, "judge-" + name)


def make_user(username: str = "ann", group: str = ANNOTATOR):
    user = get_user_model().objects.create_user(username, password=PASSWORD)
    user.groups.add(ensure_groups()[group])
    return user


def build_campaign(name: str = "media"):
    dataset = create_demo_dataset(name=f"b{name}", n_videos=24, seed=1, workers=1)
    return random_run_campaign(dataset, name, 5, seed=0)


def write_video(path: Path, codec: str, container: str | None = None, audio: bool = False):
    """A 2 s, 64 x 48 clip: H.264 plays in Chromium; HEVC and MPEG-4 Part 2 do not."""
    path.parent.mkdir(parents=True, exist_ok=True)
    out = av.open(str(path), "w", format=container)
    stream = out.add_stream(codec, rate=24)
    stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
    if codec == "libx265":
        stream.options = {"x265-params": "log-level=none"}
    sound = out.add_stream("aac", rate=44100) if audio else None
    for i in range(48):
        image = np.zeros((48, 64, 3), np.uint8)
        image[:, :, 1] = (i * 5) % 255
        for packet in stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
            out.mux(packet)
    if sound is not None:
        for k in range(86):
            frame = av.AudioFrame.from_ndarray(
                np.zeros((1, 1024), np.float32), format="fltp", layout="mono"
            )
            frame.sample_rate, frame.pts = 44100, k * 1024
            for packet in sound.encode(frame):
                out.mux(packet)
        for packet in sound.encode():
            out.mux(packet)
    for packet in stream.encode():
        out.mux(packet)
    out.close()


def open_page(browser, base_url: str, campaign, username: str = "ann"):
    page = browser.new_page(viewport=WIDE)
    page.add_init_script(RECORD_SHOWN)
    login(page, base_url, username, PASSWORD, landing="/judge/")
    page.goto(f"{base_url}/judge/{campaign.pk}/")
    return page


def wait_for_pair(page, previous: str = "", video: str = "seen") -> str:
    """Wait for a task other than ``previous`` on screen whose video is ``video`` (seen, or
    broken); its id."""
    page.wait_for_function(
        "([prev, video]) => document.body.dataset.pair && document.body.dataset.pair !== prev"
        " && document.body.dataset.videoState === video",
        arg=[previous, video],
        timeout=20000,
    )
    return page.evaluate("document.body.dataset.pair")


def pair_of(task: str, username: str = "ann") -> int:
    return task_ids.decode(get_user_model().objects.get(username=username).pk, task)


def test_labels_wait_for_the_first_frame_and_store_the_seconds_played(live_server, browser):
    campaign = build_campaign()
    user = make_user()
    page = browser.new_page(viewport=WIDE)
    page.add_init_script(RECORD_SHOWN)
    login(page, live_server.url, "ann", PASSWORD, landing="/judge/")
    held = []
    holding = [True]  # the videos wait (a slow network) until the key press is refused

    def video(route):
        held.append(route) if holding[0] else route.continue_()

    page.route("**/media/**", video)
    page.goto(f"{live_server.url}/judge/{campaign.pk}/")
    page.wait_for_function("() => document.body.dataset.videoState === 'waiting'")
    task = page.evaluate("document.body.dataset.pair")
    assert page.locator("[data-action=relevant]").is_disabled()
    assert page.locator("[data-action=irrelevant]").is_disabled()
    assert page.locator("[data-action=escalate]").is_enabled()
    page.keyboard.press("r")  # refused: nothing sent, nothing stored
    assert "wait until the video shows" in page.locator("#judge-status").inner_text()
    assert page.evaluate("document.body.dataset.pair") == task
    assert held and page.evaluate("document.body.dataset.videoState") == "waiting"
    holding[0] = False
    for route in held:
        route.continue_()
    assert wait_for_pair(page) == task
    assert not Judgement.objects.exists()
    assert page.locator("[data-action=relevant]").is_enabled()
    page.wait_for_timeout(1200)
    page.keyboard.press("r")
    page.wait_for_function(
        "() => document.getElementById('judge-progress').textContent.includes('judged today 1')"
    )
    judgement = Judgement.objects.get(annotator=user)
    assert judgement.pair_id == pair_of(task) and judgement.label == "relevant"
    # Media time from the first frame to the key press: most of the 1.2 s waited, never
    # more than the time on the pair.
    assert 0.6 <= judgement.seconds_played <= judgement.seconds, (
        judgement.seconds_played,
        judgement.seconds,
    )


def test_a_broken_video_is_reported_not_judged_and_reaches_the_admin(live_server, browser):
    campaign = build_campaign()
    user = make_user()
    make_user("boss", ADMIN)
    root = Path(settings.MEDIA_ROOT)
    write_video(root / "videos/broken/clip-hevc.mp4", "libx265", audio=True)
    write_video(root / "videos/broken/clip-msvd.avi", "mpeg4", container="avi")
    videos = list(Video.objects.filter(dataset=campaign.dataset).order_by("pk"))
    for i, video in enumerate(videos):  # every other video of each kind
        video.media = "videos/broken/" + ("clip-hevc.mp4" if i % 2 else "clip-msvd.avi")
    Video.objects.bulk_update(videos, ["media"])
    page = open_page(browser, live_server.url, campaign)

    reported = {}
    task = ""
    for _ in range(2):
        task = wait_for_pair(page, task, video="broken")
        assert page.locator("[data-action=relevant]").is_hidden()
        assert page.locator("[data-action=broken]").is_visible()
        assert "report it with B" in page.locator("#judge-status").inner_text()
        page.keyboard.press("r")  # no label for a video that was not seen
        page.keyboard.press("n")
        if not reported:
            shoot(page, "broken")
        reported[pair_of(task)] = page.locator("#judge-status-text").inner_text()
        page.keyboard.press("b")
        page.wait_for_function(
            "prev => document.body.dataset.pair !== prev", arg=task, timeout=20000
        )
    assert not Judgement.objects.filter(annotator=user).exists()
    escalations = list(Escalation.objects.filter(annotator=user).select_related("pair__video"))
    assert {e.pair_id for e in escalations} == set(reported)
    for escalation in escalations:
        error = escalation.media_error
        assert escalation.kind == "broken_video" and error in reported[escalation.pair_id]
        if escalation.pair.video.media.name.endswith(".avi"):  # Chromium opens no AVI
            assert error.startswith("MEDIA_ERR_SRC_NOT_SUPPORTED (4)"), error
        else:  # HEVC: the sound plays, the picture never comes
            assert error.startswith("no picture"), error
    errors = {e.pair.video.media.name: e.media_error for e in escalations}

    admin = browser.new_page(viewport=WIDE)
    login(admin, live_server.url, "boss", PASSWORD)
    admin.goto(f"{live_server.url}/campaigns/{campaign.pk}/adjudicate/")
    rows = admin.locator("tr.broken-video")
    assert rows.count() == len(escalations)
    text = " ".join(rows.all_inner_texts())
    for name, error in errors.items():
        assert name in text and error in text


def test_the_next_pair_shows_while_the_answer_travels(live_server, browser):
    campaign = build_campaign()
    user = make_user()
    page = open_page(browser, live_server.url, campaign)
    first = wait_for_pair(page)
    page.wait_for_timeout(300)

    def slow_server(route):
        time.sleep(1.5)  # the server takes 1.5 s to answer
        route.continue_()

    page.route("**/submit/", slow_server)
    page.keyboard.press("r")
    second = wait_for_pair(page, first)
    shown = page.evaluate("window.__shown.at(-1)")
    assert shown["pair"] == second and shown["cause"] == "submit" and shown["preloaded"]
    assert shown["waiting"] == 1 and shown["ms"] < 1000, shown  # before the answer came
    page.wait_for_function(
        "() => document.getElementById('judge-progress').textContent.includes('judged today 1')",
        timeout=20000,
    )
    assert page.evaluate("document.body.dataset.pair") == second  # the answer changed nothing
    assert Judgement.objects.get(annotator=user).pair_id == pair_of(first)
    page.unroute("**/submit/")

    # An answer whose reply is lost (stored, but the page never hears it): its pair comes
    # back in front with a message, and the same id goes again: one label, not two.
    bodies = []

    def lose_reply(route):
        bodies.append(json.loads(route.request.post_data))
        if len(bodies) == 1:
            try:
                route.fetch(timeout=60000)  # stored on the server
            finally:
                route.abort("connectionreset")  # whatever happened, the page hears nothing
        else:
            route.continue_()

    page.route("**/submit/", lose_reply)
    # N is taken once the pair can be labelled (on a busy machine the answer's rendering may
    # still be under way); the page gives up on a request after 15 s, so wait longer than that.
    page.wait_for_selector("[data-action=irrelevant]:enabled", timeout=20000)
    page.keyboard.press("n")
    try:
        page.wait_for_function(
            "() => document.getElementById('judge-status-text').textContent.includes('not confirmed')",
            timeout=40000,
        )
    except Exception as error:  # say where the page stood, so a failure can be read
        seen = page.evaluate(
            "() => ({status: document.getElementById('judge-status-text').textContent,"
            " mode: document.body.dataset.judgeState, pair: document.body.dataset.pair,"
            " queue: window.firepoolJudge.state.queue.map((a) => a.kind)})"
        )
        raise AssertionError(f"no 'not confirmed' after N: {seen}, bodies {bodies}") from error
    assert page.evaluate("document.body.dataset.pair") == second
    assert "its pair is back" in page.locator("#judge-status").inner_text()
    assert page.locator("#judge-retry").is_visible()
    third = wait_for_pair(page, second)  # retried by itself (or by the same key, or Retry)
    assert third not in (first, second)
    assert len(bodies) == 2 and bodies[0] == bodies[1]
    stored = Judgement.objects.filter(annotator=user, pair_id=pair_of(second))
    assert [(j.label, str(j.uuid)) for j in stored] == [("irrelevant", bodies[0]["uuid"])]
    assert Judgement.objects.filter(annotator=user).count() == 2


def test_a_paused_campaign_changes_the_page_at_once(live_server, browser):
    campaign = build_campaign()
    user = make_user()
    page = open_page(browser, live_server.url, campaign)
    task = wait_for_pair(page)
    shoot(page, "playing")
    # At 1280 x 800 a note leaves Undo and Guidelines on screen.
    page.keyboard.press("u")  # nothing to undo: a note
    page.wait_for_selector("#judge-status:not([hidden])")
    for name in ("undo", "guidelines"):
        box = page.locator(f"[data-action={name}]").bounding_box()
        assert box["y"] + box["height"] <= WIDE["height"], (name, box)
    page.keyboard.press("e")
    stage = page.locator("#judge-stage").bounding_box()
    send = page.locator(".judge-send").bounding_box()
    assert stage["height"] >= 180 and stage["y"] >= 0, stage  # not a strip
    assert send["y"] + send["height"] <= WIDE["height"], send
    shoot(page, "escalating")
    page.keyboard.press("Escape")

    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.PAUSED)
    page.keyboard.press("r")
    page.wait_for_function(
        "() => document.body.dataset.pair === '' && document.body.dataset.judgeState === 'waiting'",
        timeout=20000,
    )
    assert page.locator("[data-action=relevant]").is_disabled()
    assert page.locator("#judge-stage").is_hidden()  # no video left playing
    assert page.locator("#judge-state").is_visible()
    assert page.locator("#judge-caption").inner_text() == "Campaign paused"
    assert "Not stored" in page.locator("#judge-status").inner_text()
    shoot(page, "paused")
    assert not Judgement.objects.filter(annotator=user).exists()
    # Resumed: the page finds its pair again by itself (it asks while waiting).
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.ACTIVE)
    assert wait_for_pair(page) == task


def test_a_pause_from_outside_changes_the_page_without_an_answer(live_server, browser, settings):
    """An admin pausing the annotator, then (reinstated) the campaign being paused, while a
    pair is on screen: the page's standing poll (every 0.3 s here, FIREPOOL_STANDING_POLL_SECONDS)
    leaves the pair, disables R and N and says why, as a refused answer does; no key is
    pressed and nothing is stored."""
    from annotation.campaigns import lifecycle
    from annotation.people import service as people_service

    settings.FIREPOOL_STANDING_POLL_SECONDS = 0.3
    campaign = build_campaign()
    user, admin = make_user(), make_user("boss", ADMIN)
    page = open_page(browser, live_server.url, campaign)
    wait_for_pair(page)
    people_service.pause(campaign, user, admin, "checking the labels")
    page.wait_for_function(
        "() => document.body.dataset.pair === '' && document.body.dataset.annotatorState"
        " === 'paused_by_admin'",
        timeout=10000,
    )
    assert page.locator("[data-action=relevant]").is_disabled()
    assert page.locator("[data-action=irrelevant]").is_disabled()
    assert page.locator("#judge-stage").is_hidden()
    assert "checking the labels" in page.locator("#judge-status").inner_text()
    assert page.locator("#judge-state").is_visible()
    assert page.locator("[data-action=undo]").is_hidden()  # the server would refuse it
    shoot(page, "paused-by-admin")

    people_service.reinstate(campaign, user, admin)
    page.reload()
    task = wait_for_pair(page)
    with transaction.atomic():
        lifecycle.change_status(campaign, Campaign.Status.PAUSED)
    page.wait_for_function(
        "() => document.body.dataset.pair === '' && document.body.dataset.judgeState === 'waiting'",
        timeout=10000,
    )
    assert page.locator("[data-action=relevant]").is_disabled()
    assert page.locator("#judge-caption").inner_text() == "Campaign paused"
    assert "campaign is paused" in page.locator("#judge-status").inner_text()
    assert not Judgement.objects.filter(annotator=user).exists()
    # The GET wrote nothing: the paused campaign's lease on the pair shown is still there.
    assert campaign.pairs.filter(pk=pair_of(task), leased=1).exists()

"""Real browser: an admin logs in and a demo clip really plays in Debian's Chromium."""

import pytest
from django.contrib.auth import get_user_model

from retrieval.models import Dataset, Video
from tests.browser_support import login, needs_chromium

pytestmark = [
    pytest.mark.browser,
    needs_chromium,
]


@pytest.mark.django_db(transaction=True)
def test_demo_clip_plays_in_admin(live_server, browser, _isolated_media):
    import numpy as np

    from retrieval.datasets.demo import render, scene

    world_scene = scene.sample_scene(np.random.default_rng(3))
    frames = render.render_frames(world_scene, seed=3)
    target = _isolated_media / "demo" / "clip.webm"
    target.parent.mkdir(parents=True)
    render.write_webm(frames, target, fps=render.FPS)

    dataset = Dataset.objects.create(name="browser-demo")
    video = Video.objects.create(dataset=dataset, key="clip", media="demo/clip.webm")
    get_user_model().objects.create_superuser("boss", "boss@example.org", "pw-boss-12345")

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    login(page, live_server.url, "boss", "pw-boss-12345")
    assert "browser-demo" in page.content()
    page.goto(f"{live_server.url}/admin/retrieval/video/{video.pk}/change/")
    page.wait_for_function(
        "document.querySelector('video') && document.querySelector('video').readyState >= 3",
        timeout=15000,
    )
    first = page.evaluate("document.querySelector('video').currentTime")
    page.wait_for_timeout(700)
    state = page.evaluate(
        "(() => { const v = document.querySelector('video');"
        " return {t: v.currentTime, w: v.videoWidth, h: v.videoHeight, err: v.error && v.error.code}; })()"
    )
    assert state["err"] is None
    assert (state["w"], state["h"]) == (frames.shape[2], frames.shape[1])
    assert state["t"] > first, "video is not advancing"

"""A segment of a longer recording (EPIC-KITCHENS, YouCook2) is judged on its span: in Debian's
Chromium the judging page starts the video at the span, loops it there, shows the span's
picture, and says where the span sits in the recording. The recording is made here with PyAV
(red for its first two seconds, blue for the last two)."""

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model

from config.roles import ANNOTATOR, ensure_groups
from retrieval.datasets.demo.service import create_demo_dataset
from retrieval.media.probe import probe
from retrieval.models import Video
from tests.browser_support import RECORD_SHOWN, login, needs_chromium, shoot_screen
from tests.factories import random_run_campaign
from tests.media_support import BLUE, RED, make_clip

pytestmark = [pytest.mark.browser, needs_chromium, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-segments-12345"
SPANS = {RED: (0.6, 1.4), BLUE: (2.6, 3.4)}
"""Each colour's segment: well inside its half of the recording."""

SAMPLE = """async () => {
  const video = [...document.querySelectorAll('video.judge-video')]
    .find((v) => v.classList.contains('is-active'));
  const times = [];
  const started = performance.now();
  while (performance.now() - started < 2600) {
    times.push(video.currentTime);
    await new Promise((done) => setTimeout(done, 40));
  }
  const canvas = document.createElement('canvas');
  canvas.width = 32; canvas.height = 24;
  const context = canvas.getContext('2d');
  context.drawImage(video, 0, 0, 32, 24);
  const data = context.getImageData(16, 12, 8, 8).data;  // away from the white corner
  let r = 0, g = 0, b = 0;
  for (let i = 0; i < data.length; i += 4) { r += data[i]; g += data[i + 1]; b += data[i + 2]; }
  const n = data.length / 4;
  return {times, colour: [r / n, g / n, b / n], src: video.currentSrc,
          label: document.getElementById('judge-segment').innerText,
          hidden: document.getElementById('judge-segment').hidden};
}"""


def test_a_segment_plays_and_loops_only_its_span(live_server, browser):
    dataset = create_demo_dataset(name="bsegments", n_videos=12, seed=3, workers=1)
    campaign = random_run_campaign(dataset, "segments", 3, seed=0)
    recording = make_clip(
        settings.MEDIA_ROOT / "videos/segments/P01_01.mp4", "mp4", seconds=4.0, fps=25
    )
    probed = probe(recording).to_json()
    videos = list(Video.objects.filter(dataset=dataset).order_by("pk"))
    colour_of = {}
    for i, video in enumerate(videos):
        colour = RED if i % 2 else BLUE
        video.media = "videos/segments/P01_01.mp4"
        video.start, video.end = SPANS[colour]
        video.media_state = Video.MediaState.AS_IS
        video.probe = probed
        colour_of[video.pk] = colour
    Video.objects.bulk_update(videos, ["media", "start", "end", "media_state", "probe"])
    user = get_user_model().objects.create_user("seg", password=PASSWORD)
    user.groups.add(ensure_groups()[ANNOTATOR])

    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.add_init_script(RECORD_SHOWN)
    login(page, live_server.url, "seg", PASSWORD, landing="/judge/")
    page.goto(f"{live_server.url}/judge/{campaign.pk}/")
    for _ in range(2):  # the first pair, and the next one (preloaded) after a label
        page.wait_for_function(
            "() => document.body.dataset.pair && document.body.dataset.videoState === 'seen'",
            timeout=20000,
        )
        seen = page.evaluate(SAMPLE)
        video_key = seen["src"].split("#")[0]
        assert video_key.endswith("/media/videos/segments/P01_01.mp4")
        start, end = (float(x) for x in seen["src"].split("#t=")[1].split(","))
        assert (start, end) in SPANS.values()
        times = seen["times"]
        outside = [round(t, 2) for t in times if not start - 0.1 <= t <= end + 0.15]
        assert not outside, (outside, len(times))
        assert any(later < earlier for earlier, later in zip(times, times[1:], strict=False)), (
            times
        )  # looped
        colour = next(c for c, span in SPANS.items() if span == (start, end))
        red, _, blue = seen["colour"]
        assert (red > blue + 60) if colour == RED else (blue > red + 60), seen["colour"]
        assert not seen["hidden"] and "of P01_01, 0:04" in seen["label"]
        shoot_screen(page, "judge-segment")
        page.keyboard.press("n")
        page.wait_for_timeout(300)

"""What the browser copies are for: Chromium plays each copy, and not the originals that
needed one (the independent check of needs_copy)."""

import pytest

from retrieval.media.probe import CopySettings
from retrieval.media.transcode import make_copy
from tests.browser_support import needs_chromium
from tests.media_support import make_clip

PLAYS = """
(video) => new Promise((done) => {
  const element = document.createElement("video");
  element.muted = true;
  element.addEventListener("canplay", () => done(element.videoWidth > 0 ? "plays" : "no picture"));
  element.addEventListener("error", () => done("error " + (element.error && element.error.code)));
  setTimeout(() => done("timeout"), 8000);
  element.src = video;
  document.body.appendChild(element);
})
"""


@needs_chromium
@pytest.mark.parametrize("kind", ["avi", "hevc", "prores", "mjpeg"])
def test_chromium_plays_the_copy_of_what_it_cannot_play(browser, tmp_path, kind):
    suffix = {"avi": ".avi", "hevc": ".mp4", "prores": ".mov", "mjpeg": ".mov"}[kind]
    source = make_clip(tmp_path / f"source{suffix}", kind, seconds=0.5)
    make_copy(source, tmp_path / "copy.mp4", CopySettings())
    (tmp_path / "page.html").write_text("<!doctype html><body></body>")
    page = browser.new_page()
    page.goto((tmp_path / "page.html").as_uri())
    assert page.evaluate(PLAYS, "copy.mp4") == "plays"
    assert page.evaluate(PLAYS, source.name) != "plays"
    page.close()


@needs_chromium
@pytest.mark.parametrize("kind", ["mp4", "webm"])
def test_chromium_plays_what_needs_no_copy(browser, tmp_path, kind):
    from retrieval.media.probe import needs_copy, probe

    source = make_clip(tmp_path / f"source.{kind}", kind, seconds=0.5)
    assert needs_copy(probe(source), CopySettings()) == ()
    (tmp_path / "page.html").write_text("<!doctype html><body></body>")
    page = browser.new_page()
    page.goto((tmp_path / "page.html").as_uri())
    assert page.evaluate(PLAYS, source.name) == "plays"
    page.close()

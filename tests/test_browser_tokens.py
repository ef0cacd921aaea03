"""Real browser: a researcher makes an API token on /account/tokens/, a script uploads a run
with it, and the model appears on the dataset's leaderboard, in Debian's Chromium."""

import os
import re

import pytest
from django.test import Client

from config import roles
from retrieval.label_sets.judged import Judged
from retrieval.label_sets.service import store_label_set
from tests.browser_support import member, needs_chromium, signed_in
from tests.factories import query_dataset

pytestmark = [pytest.mark.browser, needs_chromium]
PASSWORD = "pw-tokens-1234567"
IMMEDIATE = {
    "default": {
        "BACKEND": "django_tasks.backends.immediate.ImmediateBackend",
        "QUEUES": ["default", "gpu"],
    }
}


def _run_file() -> bytes:
    """Each caption ci's run ranks v(i+1), v(i), v(i+2), v(i+3)."""
    lines = [
        f"c{i} Q0 v{(i + j) % 6} {rank} {1.0 - rank / 10} scripted\n"
        for i in range(6)
        for rank, j in enumerate((1, 0, 2, 3), start=1)
    ]
    return "".join(lines).encode()


def _shoot(page, name: str) -> None:
    shots = os.environ.get("FIREPOOL_SCREENSHOTS")
    if not shots:
        return
    for width, height in ((1280, 800), (768, 1024)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=os.path.join(shots, f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 800})


@pytest.mark.django_db(transaction=True)
def test_a_researcher_makes_a_token_submits_a_run_with_it_and_sees_it_ranked(
    live_server, browser, settings
):
    settings.TASKS = IMMEDIATE
    dataset, videos, captions = query_dataset("tokens")
    pairs = Judged.build(
        [c.pk for c in captions[:4]],
        [videos[(i + 1) % 6].pk for i in range(4)],
        [1, 1, 0, 1],
    )
    store_label_set(dataset, "human", pairs, source="import")
    member("res", PASSWORD, roles.RESEARCHER)
    page = signed_in(browser, live_server.url, "res", PASSWORD, height=800)
    page.click("nav >> text=API tokens")
    page.wait_for_url(f"{live_server.url}/account/tokens/")
    _shoot(page, "tokens-empty")
    page.fill("#id_name", "nightly eval")
    page.click("button >> text=Make token")
    page.wait_for_selector("#token-key")
    key = page.input_value("#token-key")
    assert re.fullmatch(r"fp_[A-Za-z0-9_-]{40}", key)
    _shoot(page, "tokens-made")

    # The script: an HTTP client that only knows the key.
    script = Client(HTTP_AUTHORIZATION=f"Token {key}")
    from django.core.files.uploadedfile import SimpleUploadedFile

    run = SimpleUploadedFile("scripted.run", _run_file(), content_type="text/plain")
    answer = script.post(f"/api/datasets/{dataset.name}/runs/", {"run": run, "name": "scripted"})
    assert answer.status_code == 202, answer.content
    scores = script.get(answer.json()["url"]).json()
    assert scores["status"] == "done", scores

    # Shown once: reloading lists the token, used just now, without its key.
    page.goto(f"{live_server.url}/account/tokens/")
    row = page.locator("tr", has_text="nightly eval")
    assert key not in page.content() and "never" not in row.inner_text()
    _shoot(page, "tokens-listed")

    page.goto(f"{live_server.url}/datasets/{dataset.name}/leaderboard/")
    page.wait_for_selector("tr.run-row[data-run=scripted]")
    _shoot(page, "leaderboard-with-scripted")

    # Revoked on the page: the key no longer opens the API.
    page.goto(f"{live_server.url}/account/tokens/")
    page.click("button[aria-label='Revoke nightly eval']")
    page.wait_for_selector("text=Revoked the token")
    assert "No token yet" in page.content()
    assert script.get(answer.json()["url"]).status_code == 401

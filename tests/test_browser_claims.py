"""Real browser: the pages whose figures and claims must hold (campaign, agreement,
annotators, report, leaderboard) at 1280 and 768 px: the figures' age and the "compute them
now" button (a POST form: the job page follows), no "Scores settled" claim without labels,
the live label counts, one interval per score. Screenshots go to FIREPOOL_SCREENSHOTS."""

import os
import uuid

import pytest

from annotation.campaign_read import live_figures
from annotation.campaign_read.resolution import resolve_campaign
from annotation.judging import queue, submit
from config import roles
from jobs.models import Job
from tests.browser_support import SCREEN_WIDTHS, login, member, needs_chromium
from tests.factories import make_campaign

pytestmark = [pytest.mark.browser, needs_chromium]
PASSWORD = "pw-claims-browser-1234"


def _user(name: str, role: str):
    return member(name, PASSWORD, role)


def _shoot(page, name: str) -> None:
    folder = os.environ.get("FIREPOOL_SCREENSHOTS")
    for width, height in SCREEN_WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        assert page.evaluate("document.documentElement.scrollWidth") <= width, (name, width)
        if folder:
            page.screenshot(path=os.path.join(folder, f"claims-{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 800})


@pytest.mark.django_db(transaction=True)
def test_pages_say_their_figures_age_and_claim_only_what_holds(live_server, browser, settings):
    settings.FIREPOOL_WARM_FIGURES = False
    campaign = make_campaign(n_queries=12, depth=3, seed=8, policy="adaptive")
    _user("boss", roles.ADMIN)
    annotator = _user("ann", roles.ANNOTATOR)
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    login(page, live_server.url, "boss", PASSWORD)

    page.goto(f"{live_server.url}/campaigns/{campaign.pk}/")
    assert "Figures from" in page.inner_text("#live-figures")
    assert page.locator("#scores-settled").count() == 0  # no label: nothing settled
    assert "How settled each score is" in page.inner_text("#settled-metrics caption")
    _shoot(page, "campaign-no-labels")

    live_figures.INLINE_SECONDS, inline = 0.0, live_figures.INLINE_SECONDS  # as at scale
    try:
        for _ in range(7):
            current = queue.assign(campaign, annotator).current
            submit.submit(annotator, current.pair.pk, "relevant", uuid.uuid4(), seconds=4.0)
        page.goto(f"{live_server.url}/campaigns/{campaign.pk}/")
        assert page.inner_text("#progress-today") == page.inner_text("#progress-spent") == "7"
        assert "labels changed since" in page.inner_text("#live-figures")
        _shoot(page, "campaign-stale")
        page.goto(f"{live_server.url}/campaigns/{campaign.pk}/agreement/")
        assert page.locator("#live-figures-now button").count() == 1
        _shoot(page, "agreement")
        page.goto(f"{live_server.url}/campaigns/{campaign.pk}/annotators/")
        assert "Figures from" in page.inner_text("#live-figures")  # first computed now
        _shoot(page, "annotators")
        page.goto(f"{live_server.url}/campaigns/{campaign.pk}/")
        page.click("#live-figures-now button")
        page.wait_for_url(f"{live_server.url}/jobs/*/")
        assert Job.objects.filter(kind="campaign-figures").count() == 1
    finally:
        live_figures.INLINE_SECONDS = inline

    label_set = resolve_campaign(campaign)
    dataset = campaign.dataset.name
    page.goto(f"{live_server.url}/reports/{dataset}/?labels={label_set.name}")
    assert "Computed" in page.inner_text(".computed") and " ago" in page.inner_text(".computed")
    legend = page.inner_text("#table1-intervals")
    assert "not a 95% interval" in legend or "exact" in legend
    _shoot(page, "report")
    page.goto(f"{live_server.url}/datasets/{dataset}/leaderboard/?labels={label_set.name}")
    _shoot(page, "leaderboard")
    page.close()

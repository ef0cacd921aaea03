"""Real browser: an admin opens a campaign's annotators from the campaign page, reinstates
an annotator the speed rule paused, discounts another's labels after seeing how many, and
the page shows both results; at 1280 px and at 768 px nothing leaves the screen sideways,
in Debian's Chromium."""

import os
import uuid

import pytest

from annotation.judging import queue, submit
from annotation.models import Judgement
from annotation.people import standing
from config import roles
from tests.browser_support import login, member, needs_chromium
from tests.factories import make_campaign, serve_all

pytestmark = [pytest.mark.browser, needs_chromium]
PASSWORD = "pw-people-browser-1234"


def _user(name: str, role: str):
    return member(name, PASSWORD, role)


def _shot(page, name: str) -> None:
    shots = os.environ.get("FIREPOOL_SCREENSHOTS")
    if shots:
        page.screenshot(path=os.path.join(shots, f"{name}.png"), full_page=True)


def _fits(page, width: int) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    buttons = page.locator("#people-table button, #people-table a, #people-table summary")
    for i in range(buttons.count()):
        if not buttons.nth(i).is_visible():
            continue
        box = buttons.nth(i).bounding_box()
        scroller = page.locator(".people-scroll").bounding_box()
        right = min(width, scroller["x"] + scroller["width"])
        assert box["x"] + box["width"] <= right + 1, buttons.nth(i).inner_text()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [1280, 768])
def test_admin_reinstates_and_discounts(live_server, browser, width):
    campaign = make_campaign(n_queries=20, depth=3, seed=6)
    _user("boss", roles.ADMIN)
    fast, careful = _user("speedy", roles.ANNOTATOR), _user("steady", roles.ANNOTATOR)
    for _ in range(20):  # too fast to have watched: the speed rule pauses
        current = queue.assign(campaign, fast).current
        if current is None:
            break
        submit.submit(fast, current.pair.pk, "relevant", uuid.uuid4(), seconds=0.2)
    assert standing.paused(campaign, fast) is not None
    serve_all(campaign, careful, lambda pair: "irrelevant")
    labels = Judgement.objects.filter(annotator=careful, undone_at__isnull=True).count()
    assert labels > 0

    page = browser.new_page(viewport={"width": width, "height": 1024 if width < 1000 else 800})
    login(page, live_server.url, "boss", PASSWORD)
    page.goto(f"{live_server.url}/campaigns/{campaign.pk}/")
    page.click("#annotators-link")
    page.wait_for_url(f"{live_server.url}/campaigns/{campaign.pk}/annotators/")
    speedy = page.locator("#person-speedy")
    assert "paused by the speed rule" in speedy.inner_text() and "too fast" in speedy.inner_text()
    _fits(page, width)
    _shot(page, f"people-paused-{width}")

    speedy.locator("button[name=reinstate]").click()
    page.wait_for_url(f"{live_server.url}/campaigns/{campaign.pk}/annotators/")
    assert "speedy is reinstated" in page.locator(".messages").inner_text()
    speedy = page.locator("#person-speedy")
    assert "active" in speedy.inner_text() and "reinstated" in speedy.inner_text()
    speedy.locator("details.history summary").click()
    history = speedy.locator("details.history").inner_text()
    assert "reinstated by boss" in history and "paused by the speed rule" in history  # kept
    assert standing.paused(campaign, fast) is None

    page.locator("#person-steady a.discount-link").click()
    count = page.locator("#discount-count").inner_text()
    assert f"Discount {labels} labels of steady: {labels} pairs go back" in count
    _shot(page, f"people-discount-{width}")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.click("#confirm-discount")
    page.wait_for_url(f"{live_server.url}/campaigns/{campaign.pk}/annotators/")
    message = page.locator(".messages").inner_text()
    assert f"Discounted {labels} labels of steady: {labels} pairs went back" in message
    steady = page.locator("#person-steady")
    assert f"{labels} labels discounted" in steady.inner_text()
    assert steady.locator("td.labels").inner_text().strip() == "0"
    assert not Judgement.objects.filter(annotator=careful, undone_at__isnull=True).exists()
    _fits(page, width)
    _shot(page, f"people-done-{width}")

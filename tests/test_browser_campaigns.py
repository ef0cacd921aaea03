"""Real browser: on a 1280-px screen and on a 768-px tablet every action of the campaigns
table is in view without scrolling sideways, and a campaign's name leads to its page, in
Debian's Chromium."""

import os

import pytest

from config import roles
from tests.browser_support import member, needs_chromium, signed_in
from tests.factories import make_campaign

pytestmark = [pytest.mark.browser, needs_chromium]
PASSWORD = "pw-campaigns-1234"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [1280, 768])
def test_campaign_actions_fit_and_the_name_opens_the_campaign(live_server, browser, width):
    campaigns = [make_campaign(n_queries=2, depth=2) for _ in range(3)]
    # A long name must wrap, not push the actions out of view.
    campaigns[0].name = "a-campaign-with-a-rather-long-name-" + "x" * 50
    campaigns[0].save(update_fields=["name"])
    member("boss", PASSWORD, roles.ADMIN)
    page = signed_in(browser, live_server.url, "boss", PASSWORD, width)
    page.goto(f"{live_server.url}/campaigns/")
    actions = page.locator("table.campaigns-table tr.exports a, table.campaigns-table button")
    # Per campaign: campaign page, agreement, adjudicate, one link per export, and resolve.
    assert actions.count() >= 3 * 5
    for i in range(actions.count()):
        box = actions.nth(i).bounding_box()
        assert box is not None and box["width"] > 0
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, actions.nth(i).inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    shots = os.environ.get("FIREPOOL_SCREENSHOTS")
    if shots:
        page.screenshot(path=os.path.join(shots, f"campaigns-{width}.png"), full_page=True)

    target = campaigns[1]
    page.click(f"tbody[data-campaign='{target.pk}'] a.campaign-link")
    page.wait_for_url(f"{live_server.url}/campaigns/{target.pk}/")
    assert page.locator("#campaign-name").inner_text().startswith(target.name)
    assert page.locator("#agreement-link").is_visible()

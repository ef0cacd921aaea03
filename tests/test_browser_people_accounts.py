"""Real browser: an admin adds a new annotator from the campaign's annotators page, sees the
generated password once, and the new annotator logs in with it in a fresh browser context
and finds the campaign on their judging list; a taken name is a form error on the page.
In Debian's Chromium."""

import os

import pytest
from django.contrib.auth import get_user_model

from annotation.models import AnnotatorStanding
from config import roles
from tests.browser_support import login, member, needs_chromium
from tests.factories import make_campaign

pytestmark = [pytest.mark.browser, needs_chromium]
PASSWORD = "pw-people-accounts-1234"


def _shot(page, name: str) -> None:
    shots = os.environ.get("FIREPOOL_SCREENSHOTS")
    if shots:
        page.screenshot(path=os.path.join(shots, f"{name}.png"), full_page=True)


@pytest.mark.django_db(transaction=True)
def test_admin_adds_an_annotator_who_then_judges(live_server, browser):
    campaign = make_campaign(n_queries=4, depth=2, seed=31)
    member("boss", PASSWORD, roles.ADMIN)
    base = live_server.url
    annotators = f"{base}/campaigns/{campaign.pk}/annotators/"

    admin_context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = admin_context.new_page()
    login(page, base, "boss", PASSWORD)
    page.goto(annotators)
    page.fill("#new-username", "newcomer")
    page.fill("#new-email", "newcomer@example.org")
    page.click("#add-annotator-button")
    page.wait_for_selector("#new-password")
    assert "newcomer" in page.locator("#new-annotator-done").inner_text()
    password = page.locator("#new-password").inner_text().strip()
    assert len(password) >= 16
    _shot(page, "people-new-annotator")
    user = get_user_model().objects.get(username="newcomer")
    assert AnnotatorStanding.objects.filter(campaign=campaign, annotator=user).exists()

    page.click("#back-to-annotators")
    page.wait_for_url(annotators)
    row = page.locator("#person-newcomer")
    assert "newcomer" in row.inner_text() and "active" in row.inner_text()
    assert password not in page.content()  # shown once, never again

    page.fill("#new-username", "NewComer")  # taken, in another letter case
    page.click("#add-annotator-button")
    error = page.locator("#new-username-error")
    error.wait_for()
    assert "is taken" in error.inner_text()
    _shot(page, "people-new-annotator-taken")
    assert get_user_model().objects.filter(username__iexact="newcomer").count() == 1
    admin_context.close()

    fresh = browser.new_context(viewport={"width": 1280, "height": 900})
    judge = fresh.new_page()
    login(judge, base, "newcomer", password, landing="/judge/")
    assert campaign.name in judge.locator("main").inner_text()
    _shot(judge, "people-new-annotator-judges")
    fresh.close()

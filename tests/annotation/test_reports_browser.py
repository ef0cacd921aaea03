"""Agreement reports in Debian's Chromium: a researcher reads agreement with intervals, an admin
adjudicates a tie from the video and labels, downloads every export and resolves a label set."""

import json

import pytest
from django.contrib.auth import get_user_model

from annotation.campaign_read.exports import EXPORT_FORMATS
from annotation.campaigns.service import CampaignSpec, create_campaign
from annotation.models import Pair
from annotation.simulation.live import simulate
from config.roles import ADMIN, RESEARCHER, ensure_groups
from retrieval.datasets.demo.service import create_demo_dataset
from retrieval.formats import fire_json, labels, trec
from retrieval.models import LabelSet
from tests.browser_support import login, needs_chromium
from tests.factories import random_run

PASSWORD = "pw-people-12345"
SCREENSHOTS = "/tmp/firepool-{}.png"

pytestmark = [pytest.mark.browser, needs_chromium, pytest.mark.django_db(transaction=True)]


def person(username: str, role: str):
    user = get_user_model().objects.create_user(username, password=PASSWORD, is_staff=True)
    user.groups.add(ensure_groups()[role])
    return user


@pytest.fixture
def judged_campaign():
    """Every pair labelled twice by two simulated annotators who err 15% of the time.

    With two annotators and a cap of three labels, a tie waits for a third label: the
    adjudication page offers it to an admin.
    """
    dataset = create_demo_dataset(name="r", n_videos=24, seed=2, workers=1)
    run = random_run(dataset, "random", seed=0)
    campaign = create_campaign(
        dataset,
        [run],
        CampaignSpec(name="report-campaign", depth=4, second_label_rate=1.0, seed=3),
    )
    simulate(campaign, annotators=2, error_rate=0.15, seed=4)
    return campaign


def test_researcher_reads_agreement_with_intervals(live_server, browser, judged_campaign):
    person("res", RESEARCHER)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    login(page, live_server.url, "res", PASSWORD)
    page.get_by_role("link", name="Campaigns", exact=True).click()
    page.get_by_role("link", name="Agreement", exact=True).click()
    page.wait_for_selector("#alpha")
    alpha = page.locator("#alpha").inner_text()
    assert alpha != "—" and -1 <= float(alpha) <= 1
    interval = page.locator("table.summary tr", has_text="Krippendorff").locator("td").nth(2)
    low, high = (float(x) for x in interval.inner_text().split("–"))
    assert low <= float(alpha) <= high
    assert page.locator("svg.chart").count() == 2
    assert page.locator("svg.chart").first.bounding_box()["width"] > 300
    page.screenshot(path=SCREENSHOTS.format("agreement"), full_page=True)
    # Researchers read; they neither export nor adjudicate.
    page.goto(f"{live_server.url}/campaigns/")
    assert page.locator("a", has_text="fire-json").count() == 0
    response = page.goto(f"{live_server.url}/campaigns/{judged_campaign.pk}/export/qrels/")
    assert response.status == 403


def test_admin_adjudicates_exports_and_resolves(live_server, browser, judged_campaign, tmp_path):
    person("boss", ADMIN)
    tied = Pair.objects.filter(campaign=judged_campaign, label_count=2, relevant_count=1)
    assert tied.exists(), "the simulation should leave ties"
    page = browser.new_page(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    login(page, live_server.url, "boss", PASSWORD)
    page.goto(f"{live_server.url}/campaigns/")
    page.get_by_role("link", name="Adjudicate", exact=True).click()
    card = page.locator("article.adjudication").first
    card.wait_for()
    pair_id = int(card.get_attribute("data-pair"))
    # The video of the pair is there and loads; both labels are listed.
    page.wait_for_function(
        "() => document.querySelector('article.adjudication video').readyState >= 1",
        timeout=15000,
    )
    assert card.locator("tbody tr").count() == 2
    page.screenshot(path=SCREENSHOTS.format("adjudicate"), full_page=True)
    card.locator("button", has_text="Not relevant").click()
    page.wait_for_selector(".messages li")
    assert "adjudicated irrelevant" in page.locator(".messages li").inner_text()
    pair = Pair.objects.get(pk=pair_id)
    assert (pair.adjudicated, pair.status, pair.needed) == ("irrelevant", "irrelevant", 0)

    page.goto(f"{live_server.url}/campaigns/")
    files = {}
    for fmt in EXPORT_FORMATS:
        with page.expect_download() as info:
            page.click(f"tr.exports a:text-is('{fmt}')")
        files[fmt] = tmp_path / info.value.suggested_filename
        info.value.save_as(files[fmt])
    assert files["fire-json"].name == "report-campaign.fire.json"
    document = fire_json.read_fire_json(files["fire-json"])
    resolved = Pair.objects.filter(campaign=judged_campaign, status__in=["relevant", "irrelevant"])
    assert len(document.annotations) == resolved.count()
    assert len(list(labels.read_raw_jsonl(files["raw"]))) == sum(
        Pair.objects.filter(campaign=judged_campaign).values_list("label_count", flat=True)
    )
    assert len(list(labels.read_csv(files["csv"]))) == len(list(labels.read_jsonl(files["jsonl"])))
    assert trec.read_qrels(files["qrels"])
    json.loads(files["fire-json"].read_text())

    page.click("button:text('Resolve to label set')")
    page.wait_for_selector(".messages li")
    label_set = LabelSet.objects.get(name="report-campaign")
    assert label_set.pair_count == resolved.count()
    page.get_by_role("link", name="Label sets", exact=True).click()
    # count() does not wait: wait for the list page to be loaded before counting its rows.
    page.wait_for_url(f"{live_server.url}/label-sets/", wait_until="load")
    assert page.locator("td", has_text="report-campaign").count() == 1
    page.screenshot(path=SCREENSHOTS.format("label-sets"), full_page=True)

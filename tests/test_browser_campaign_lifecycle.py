"""Real browser: an admin creates a campaign with qualification and a gold file on the New
campaign page, the pool job runs (in process), then pauses and resumes it, is refused a
qualification it has too little gold for, and promotes decided pairs after a confirmation
that names the count. Screenshots at 1280x800 and 768x1024 go to FIREPOOL_SCREENSHOTS when
it is set."""

import re

import pytest
from django.contrib.auth import get_user_model

from annotation.judging import escalations
from annotation.models import Campaign, GoldPair
from tests.browser_support import IMMEDIATE_TASKS, login, needs_chromium, shoot_full
from tests.factories import query_dataset, random_run

pytestmark = [pytest.mark.browser, needs_chromium]
PASSWORD = "pw-lifecycle-12345"


def gold_file(tmp_path, relevant: int, irrelevant: int):
    """Gold pairs on caption c7 (pooled or not, a gold pair is its own task)."""
    labels = ["relevant"] * relevant + ["irrelevant"] * irrelevant
    lines = ["caption_key,video_key,label,explanation,guideline"]
    for i, label in enumerate(labels):
        lines.append(
            f"c7,v{i},{label},Because the video {'shows' if label == 'relevant' else 'lacks'} it.,Every element."
        )
    path = tmp_path / "training-gold.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.django_db(transaction=True)
def test_admin_creates_pauses_resumes_and_promotes_in_the_browser(
    live_server, browser, settings, tmp_path
):
    settings.TASKS = IMMEDIATE_TASKS
    dataset, _, _ = query_dataset("lifecycle-world", n=8)
    random_run(dataset, "alpha", 1)
    random_run(dataset, "beta", 2)
    boss = get_user_model().objects.create_superuser("boss", "boss@example.org", PASSWORD)
    base = live_server.url

    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    login(page, base, "boss", PASSWORD)
    page.goto(f"{base}/campaigns/")
    page.click("#new-campaign")
    page.wait_for_url(f"{base}/campaigns/new/")
    with page.expect_navigation():
        page.select_option("#id_pick_dataset", dataset.name)
    page.check("input[name=runs][value=alpha]")
    page.check("input[name=runs][value=beta]")
    page.fill("#id_name", "browser campaign")
    page.fill("#id_depth", "3")
    page.select_option("#id_judging_order", "depth")
    page.fill("#id_qualification", "4")
    page.fill("#id_speed_floor", "2")
    page.set_input_files("#id_gold_file", str(gold_file(tmp_path, 2, 1)))
    shoot_full(page, "lifecycle-1-new-campaign")

    # Too few irrelevant gold pairs for four training pairs: refused, named, nothing made.
    page.click("button[type=submit] >> text=Create the campaign")
    error = page.locator("#gold-error").inner_text()
    assert (
        "training-gold.csv: qualification needs 4 gold pairs, 2 relevant and 2 irrelevant; "
        "this campaign has 2 relevant and 1 irrelevant"
    ) in error
    assert not Campaign.objects.filter(name="browser campaign").exists()
    shoot_full(page, "lifecycle-2-gold-refused")

    # The choices stay; a balanced file goes through the pool job to the job's page.
    assert page.is_checked("input[name=runs][value=alpha]")
    page.set_input_files("#id_gold_file", str(gold_file(tmp_path, 2, 2)))
    page.click("button[type=submit] >> text=Create the campaign")
    page.wait_for_url(re.compile(r".*/jobs/\d+/$"))
    page.wait_for_selector("a.result-page")
    shoot_full(page, "lifecycle-3-pool-job")
    page.click("a.result-page")
    campaign = Campaign.objects.get(name="browser campaign")
    page.wait_for_url(f"{base}/campaigns/{campaign.pk}/")
    assert page.inner_text("#lifecycle-status") == "active"
    assert "4 gold pairs: 2 relevant, 2 irrelevant" in page.inner_text("#gold-counts")
    assert "4 training pairs" in page.inner_text("#setting-qualification")
    shoot_full(page, "lifecycle-4-campaign-page")

    page.click("#pause-campaign")
    page.wait_for_selector("#resume-campaign")
    assert page.inner_text("#lifecycle-status") == "paused"
    assert "paused." in page.inner_text(".messages")
    # Asking for more training pairs than the gold can balance is refused on the edit page.
    page.click("#edit-campaign")
    page.fill("#id_qualification", "6")
    shoot_full(page, "lifecycle-5-edit")
    page.click("button[type=submit] >> text=Save")
    page.wait_for_selector("#campaign-name")
    page.click("#resume-campaign")
    refused = page.locator(".messages").inner_text()
    assert "qualification needs 6 gold pairs, 3 relevant and 3 irrelevant" in refused, refused
    assert Campaign.objects.get(pk=campaign.pk).status == "paused"
    shoot_full(page, "lifecycle-6-resume-refused")
    page.click("#edit-campaign")
    page.fill("#id_qualification", "4")
    page.click("button[type=submit] >> text=Save")
    page.click("#resume-campaign")
    page.wait_for_selector("#pause-campaign")
    assert page.inner_text("#lifecycle-status") == "active"

    # Three pairs decided by the admin: the page offers them, the confirmation counts them.
    for pair in campaign.pairs.order_by("pk")[:3]:
        escalations.adjudicate(pair, boss, "relevant")
    page.reload()
    page.click("#promote-link")
    assert "Promote 3 pairs" in page.inner_text("#promote-summary")
    shoot_full(page, "lifecycle-7-promote-confirm")
    page.click("#confirm-promote")
    page.wait_for_url(f"{base}/campaigns/{campaign.pk}/")
    assert "3 pairs promoted to gold" in page.inner_text(".messages")
    assert "7 gold pairs: 5 relevant, 2 irrelevant" in page.inner_text("#gold-counts")
    assert GoldPair.objects.filter(campaign=campaign, source="promoted").count() == 3

    page.click("#close-campaign")
    assert "pairs still pending" in page.inner_text("#close-summary")
    shoot_full(page, "lifecycle-8-close-confirm")
    page.click("#confirm-close")
    page.wait_for_url(f"{base}/campaigns/{campaign.pk}/")
    assert page.inner_text("#lifecycle-status") == "closed"
    assert page.locator("#resume-campaign").count() == 0
    shoot_full(page, "lifecycle-9-closed")

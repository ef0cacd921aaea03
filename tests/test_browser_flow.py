"""Real browser, end to end: a researcher uploads a run file and finds its
leaderboard row with Judged@10 and the bias note; an admin makes the "judge what is missing"
campaign for it, two simulated annotators finish it, the admin resolves it, and the new
version of the label set changes the model's row. Screenshots go to FIREPOOL_SCREENSHOTS
when it is set."""

import os
import re

import numpy as np
import pytest
from django.contrib.auth import get_user_model

from annotation.models import Campaign
from annotation.simulation.live import simulate
from config import roles
from retrieval.models import Caption, LabelSet, Video
from tests.browser_support import login, needs_chromium
from tests.factories import pooled_world

pytestmark = [pytest.mark.browser, needs_chromium]
PASSWORD = "pw-flow-1234567"
IMMEDIATE = {
    "default": {
        "BACKEND": "django_tasks.backends.immediate.ImmediateBackend",
        "QUEUES": ["default", "gpu"],
    }
}


def shoot(page, name: str) -> None:
    folder = os.environ.get("FIREPOOL_SCREENSHOTS")
    if folder:
        page.screenshot(path=os.path.join(folder, f"{name}.png"), full_page=True)


def run_file(dataset, tmp_path, depth: int = 10):
    """A TREC run over the test split, ranked at random (seed 7), as a researcher would send."""
    captions = list(
        Caption.objects.filter(dataset=dataset, split="test", is_query=True)
        .order_by("pk")
        .values_list("key", flat=True)
    )
    videos = list(Video.objects.filter(dataset=dataset, split="test").values_list("key", flat=True))
    rng = np.random.default_rng(7)
    lines = []
    for caption in captions:
        for rank, j in enumerate(rng.permutation(len(videos))[:depth], start=1):
            lines.append(f"{caption} Q0 {videos[j]} {rank} {1 - rank / 100:.3f} mine\n")
    path = tmp_path / "mine.run"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def row_text(page, run: str) -> tuple[str, str]:
    """(the run's row, its notes row) as text."""
    row = page.locator(f"tr.run-row[data-run='{run}']").inner_text()
    notes = page.locator(f"tr.row-notes[data-run='{run}']")
    return row, notes.inner_text() if notes.count() else ""


def judged_at_10(page, run: str) -> float:
    cell = page.locator(f"tr.run-row[data-run='{run}'] td").nth(2).inner_text()
    return float(re.search(r"[\d.]+", cell).group())


@pytest.mark.django_db(transaction=True)
def test_upload_rescore_judge_what_is_missing_and_see_the_new_version(
    live_server, browser, settings, tmp_path
):
    settings.TASKS = IMMEDIATE
    dataset = pooled_world("flow")
    groups = roles.ensure_groups()
    researcher = get_user_model().objects.create_user("res", password=PASSWORD, is_staff=True)
    researcher.groups.add(groups[roles.RESEARCHER])
    get_user_model().objects.create_superuser("boss", "boss@example.org", PASSWORD)

    # The researcher adds a run file and finds it on the leaderboard.
    research = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    login(research, live_server.url, "res", PASSWORD)
    research.goto(f"{live_server.url}/datasets/{dataset.name}/")
    research.click("#add-model")
    research.fill("#id_name", "mine")
    research.check("input[name=source][value=run]")
    research.set_input_files("#id_run", str(run_file(dataset, tmp_path)))
    research.click("button[type=submit] >> text=Add the model")
    research.wait_for_url(f"{live_server.url}/datasets/{dataset.name}/models/mine/")
    research.goto(f"{live_server.url}/datasets/{dataset.name}/leaderboard/?labels=pooled")
    research.wait_for_selector("tr.run-row[data-run='mine']")
    row, notes = row_text(research, "mine")
    before = judged_at_10(research, "mine")
    assert "no" in row.split("\t")[1].lower()  # not pooled
    assert before < 90, row
    assert "Adjusted estimate" in notes and "of its top 10 is judged" in notes, notes
    assert research.locator("a.judge-missing").count() == 0  # researchers cannot make campaigns
    shoot(research, "flow-1-researcher-leaderboard")

    # The admin makes the campaign of what is missing from the model's top 10.
    admin = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    login(admin, live_server.url, "boss", PASSWORD)
    admin.goto(f"{live_server.url}/datasets/{dataset.name}/leaderboard/?labels=pooled")
    admin.click("tr.run-row[data-run='mine'] a.judge-missing")
    admin.wait_for_selector("#missing-form")
    summary = admin.locator("#missing-summary").inner_text()
    missing = int(re.search(r"holds (\d+) pairs?", summary).group(1))
    assert missing > 0
    shoot(admin, "flow-2-judge-missing-form")
    admin.select_option("#id_judging_order", "depth")
    admin.fill("#id_second_label_rate", "0.5")
    admin.click("button[type=submit] >> text=Create the campaign")
    admin.wait_for_url(f"{live_server.url}/jobs/*/")
    admin.wait_for_function(
        "document.getElementById('job-state').textContent.trim() === 'succeeded'", timeout=20000
    )
    shoot(admin, "flow-3-pool-job")
    campaign = Campaign.objects.get(dataset=dataset)
    assert campaign.pairs.count() == missing
    admin.click("a.result-page")  # the job leads to the new campaign's page
    admin.wait_for_url(f"{live_server.url}/campaigns/{campaign.pk}/")
    assert admin.locator("#setting-extends").inner_text().startswith("label set pooled")
    shoot(admin, "flow-3b-campaign-page")

    # Two simulated annotators finish it (through the assignment service).
    result = simulate(campaign, annotators=2, error_rate=0.0, seed=3)
    assert result.judgements >= missing
    assert not campaign.pairs.filter(status="pending").exists()

    # The admin resolves it on the campaigns page: a new version of "pooled" appears.
    admin.goto(f"{live_server.url}/campaigns/")
    admin.click(f"form[action='/campaigns/{campaign.pk}/resolve/'] button[type=submit]")
    admin.wait_for_load_state()
    version = LabelSet.objects.get(dataset=dataset, parent__name="pooled")
    assert version.name == "pooled v2" and version.version == 2
    assert LabelSet.objects.get(dataset=dataset, name="pooled").pair_count + missing == (
        version.pair_count
    )

    # The leaderboard lists both versions; under the new one the model's top 10 is judged.
    research.goto(f"{live_server.url}/datasets/{dataset.name}/leaderboard/?labels=pooled")
    versions = research.locator("#label-set-versions").inner_text()
    assert "v1 pooled" in versions and "v2 pooled v2" in versions
    research.click("#label-set-versions >> text=v2 pooled v2")
    research.wait_for_url(re.compile(r"labels=pooled(\+|%20)v2"))
    after_row, after_notes = row_text(research, "mine")
    assert judged_at_10(research, "mine") == pytest.approx(100.0)
    assert after_row != row
    # The version records the pooled runs: the base's and the campaign's.
    assert "yes" in after_row.split("\t")[1].lower()
    assert "of its top 10 is judged" not in after_notes  # no warning any more
    shoot(research, "flow-4-leaderboard-new-version")
    assert research.evaluate("document.documentElement.scrollWidth") <= 1280

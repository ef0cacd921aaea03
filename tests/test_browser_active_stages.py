"""Real browser: an admin draws a campaign's first active stage from its page, and once its
queries are judged in full the page says which scores the stage's intervals settle, at 1280
and 768 px, in Debian's Chromium."""

import math
import os
import uuid
from dataclasses import replace

import pytest

from annotation.active import reading
from annotation.active.stages import estimate_stage
from annotation.judging import queue, submit
from annotation.models import ActiveStage, Pair
from config import roles
from tests.browser_support import (
    IMMEDIATE_TASKS,
    member,
    needs_chromium,
    shoot_full,
    signed_in,
)
from tests.factories import make_campaign

pytestmark = [pytest.mark.browser, needs_chromium]
PASSWORD = "pw-active-stages-1234"


@pytest.mark.django_db(transaction=True)
def test_an_admin_draws_a_stage_and_reads_its_settled_scores(live_server, browser, settings):
    settings.TASKS = {"default": {**IMMEDIATE_TASKS["default"], "QUEUES": ["default", "live"]}}
    campaign = make_campaign(n_queries=12, depth=3, settle="c@1,ap,ndcg@10", half_width=40)
    member("boss", PASSWORD, roles.ADMIN)
    page = signed_in(browser, live_server.url, "boss", PASSWORD)
    page.goto(f"{live_server.url}/campaigns/{campaign.pk}/")
    page.click("#active-stage-form button")
    page.wait_for_url(f"{live_server.url}/jobs/*/")
    assert ActiveStage.objects.filter(campaign=campaign).count() == 1
    page.goto(f"{live_server.url}/campaigns/{campaign.pk}/")
    assert "Active stage 1" in page.locator("#active-stage-state").inner_text()
    annotator = member("judge", PASSWORD, roles.ANNOTATOR, staff=False)
    # the drawn queries only (the queue serves them first): the others stay open
    campaign.refresh_from_db()
    while reading.stage_status(campaign).waiting:
        current = queue.assign(campaign, annotator).current
        submit.submit(annotator, current.pair.pk, "irrelevant", uuid.uuid4())
    estimate_stage(campaign)
    page.goto(f"{live_server.url}/campaigns/{campaign.pk}/")
    state = page.locator("#active-stage-state").inner_text()
    assert "The intervals above are stage 1's" in state
    widths = page.locator("#settle-widths").inner_text()
    assert "no interval yet" not in widths and "±40.0" in widths  # AP and nDCG have one now
    for width in (1280, 768):
        page.set_viewport_size({"width": width, "height": 1000})
        table = page.locator("#active-stage-table").bounding_box()
        assert table is not None and table["x"] + table["width"] <= width
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    if os.environ.get("FIREPOOL_SCREENSHOTS"):
        page.locator("#active-stages").scroll_into_view_if_needed()
        shoot_full(page, "active-stages")
    # a tighter target than the stage reached: each score shows the narrower of its bounds
    # (AP and nDCG: the share of queries still open, each anywhere in [0, 1]) and the stage's
    # interval, which says what holds most of it (the labels are certain here: the predictor
    # and the sampling)
    campaign.refresh_from_db()
    campaign.set_settings(replace(campaign.settings, half_width=0.01))
    page.goto(f"{live_server.url}/campaigns/{campaign.pk}/")
    cells = page.locator("#settle-widths tbody td").all_inner_texts()[1:]
    open_queries = {
        c
        for (c,) in Pair.objects.filter(campaign=campaign, label_count=0).values_list("caption_id")
    }
    queries = {c for (c,) in Pair.objects.filter(campaign=campaign).values_list("caption_id")}
    bounds = len(open_queries) / len(queries) * 50
    estimates = ActiveStage.objects.get(campaign=campaign).estimates["m"]
    for metric, cell in zip(("AP", "nDCG@10"), cells[1:], strict=True):
        stage = (estimates[metric]["high"] - estimates[metric]["low"]) * 50
        half = min(bounds, stage)  # rounded up to one decimal (two under 0.1)
        places = 1 if half >= 0.1 else 2
        shown = math.ceil(half * 10**places - 1e-9) / 10**places
        assert cell.startswith(f"±{shown:.{places}f}"), (metric, cell, bounds, stage)
        assert cell.endswith("\nmostly predictor and sampling") == (stage < bounds), cell
    assert "against the target of ±0.01 points" in page.locator("#settle-widths").inner_text()
    for width in (1280, 768):
        page.set_viewport_size({"width": width, "height": 1000})
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    shoot_full(page, "active-stages-unsettled")

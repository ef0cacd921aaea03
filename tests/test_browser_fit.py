"""Real browser: every main page fits a 1280 px and a 768 px wide window. Nothing runs past
the right edge: a table wider than the page scrolls in its own box (``.table-scroll``, the
scrollbar right under it) or reflows; the page itself never scrolls sideways. Also the 403
page in the site's frame, the favicon and the debug-mode 404, as a browser meets them."""

import uuid

import pytest
from django.contrib.auth import get_user_model

from annotation.campaigns.service import create_campaign
from annotation.campaigns.spec import CampaignSpec
from config import roles
from jobs.models import Job
from tests.browser_support import login, needs_chromium
from tests.factories import pooled_world, random_run, serve_all

pytestmark = [pytest.mark.browser, needs_chromium]
PASSWORD = "pw-fit-12345"
WIDTHS = ((1280, 800), (768, 1024))

# Every element must end left of the viewport's right edge (inside <main>: of main's own
# edge, since main scrolls as a last resort and hides what overflows it), unless a box
# between it and <main> scrolls sideways. ``allowed`` names elements another page takes over.
OVERFLOW = """(allowed) => {
  const main = document.querySelector('main');
  const limitMain = Math.min(window.innerWidth, main.getBoundingClientRect().right) + 1;
  const limitPage = window.innerWidth + 1;
  const scrolls = (el) => {
    for (let p = el.parentElement; p && p !== main && p !== document.body; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll') return true;
    }
    return false;
  };
  const bad = [];
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    if (!r.width || (allowed && el.closest(allowed))) continue;
    const limit = main.contains(el) ? limitMain : limitPage;
    if (r.right > limit && !scrolls(el)) {
      bad.push(`${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}.${el.className} ends at ${Math.round(r.right)} > ${Math.round(limit)}`);
    }
  }
  return {page: document.documentElement.scrollWidth - window.innerWidth, bad: bad.slice(0, 8)};
}"""


def _world():
    """A synthetic dataset with three runs (one long-named), a label set, a campaign where two
    annotators disagree on every pair (so adjudication has cards), and a finished job."""
    dataset = pooled_world("fit")
    random_run(dataset, "a-model-with-a-rather-long-name", 3)
    run = random_run(dataset, "pooled-run", 4)
    campaign = create_campaign(
        dataset, [run], CampaignSpec(name="fit-campaign", depth=2, second_label_rate=1.0)
    )
    people = {}
    for name, role in (
        ("boss", None),
        ("res", roles.RESEARCHER),
        ("ann1", roles.ANNOTATOR),
        ("ann2", roles.ANNOTATOR),
    ):
        if role is None:
            people[name] = get_user_model().objects.create_superuser(
                name, f"{name}@example.org", PASSWORD
            )
        else:
            people[name] = get_user_model().objects.create_user(name, password=PASSWORD)
            people[name].groups.add(roles.ensure_groups()[role])
    serve_all(campaign, people["ann1"], answer=lambda pair: "relevant")
    serve_all(campaign, people["ann2"], answer=lambda pair: "irrelevant")
    job = Job.objects.create(
        kind="rescore",
        arguments={
            "dataset": "fit",
            "label_set": "pooled",
            "models": ["alpha", "beta", "a-model-with-a-rather-long-name"],
        },
        description="Re-score fit with the pooled labels",
        status=Job.Status.SUCCEEDED,
        result={"dataset": "fit", "scores": {"alpha": {"C@1": 0.5}, "beta": {"C@1": 0.25}}},
        created_by=people["res"],
        task_id=uuid.uuid4().hex,
    )
    return dataset, campaign, job


def _pages(campaign, job) -> dict[str, tuple[str, str]]:
    """Page name: (URL, selector of what another page takes over, or "")."""
    c = campaign.pk
    return {
        "home": ("/", ""),
        "datasets": ("/datasets/", ""),
        "dataset": ("/datasets/fit/", ""),
        "model": ("/datasets/fit/models/alpha/", ""),
        "leaderboard": ("/datasets/fit/leaderboard/?labels=pooled", ""),
        "reports": ("/reports/", ""),
        "report": ("/reports/fit/?labels=pooled", ""),
        "judging orders": ("/reports/fit/judging-orders/", ""),
        "label sets": ("/label-sets/", ""),
        "campaigns": ("/campaigns/", ""),
        "campaign": (f"/campaigns/{c}/", ""),
        "agreement": (f"/campaigns/{c}/agreement/", ""),
        "adjudicate": (f"/campaigns/{c}/adjudicate/", ""),
        "jobs": ("/jobs/", ""),
        "job": (f"/jobs/{job.pk}/", ""),
        "judge list": ("/judge/", ""),
        "not found": ("/no-such-page/", ""),
    }


@pytest.mark.django_db(transaction=True)
def test_main_pages_fit_both_widths(live_server, browser):
    _, campaign, job = _world()
    wrong = []
    for width, height in WIDTHS:
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        login(page, live_server.url, "boss", PASSWORD)
        for name, (url, allowed) in _pages(campaign, job).items():
            answer = page.goto(f"{live_server.url}{url}")
            assert answer.status in (200, 404), (name, answer.status)
            found = page.evaluate(OVERFLOW, allowed)
            if found["page"] > 0 or found["bad"]:
                wrong.append(
                    f"{name} at {width}px: page {found['page']}px too wide; {found['bad']}"
                )
        if width == 1280:
            # The agreement page's annotator tables fit without scrolling sideways.
            page.goto(f"{live_server.url}/campaigns/{campaign.pk}/agreement/")
            for box_id in ("annotator-scroll", "annotator-score-scroll"):
                box = page.evaluate(
                    f"(() => {{ const b = document.getElementById('{box_id}');"
                    " return b && [b.scrollWidth, b.clientWidth]; })()"
                )
                assert box and box[0] <= box[1], (box_id, box)
        if width == 768:
            # The leaderboard's wide table scrolls in its own box, which is on screen.
            page.goto(f"{live_server.url}/datasets/fit/leaderboard/?labels=pooled")
            box = page.evaluate(
                "(() => { const b = document.querySelector('#leaderboard').closest('.table-scroll');"
                " return b && {scroll: b.scrollWidth, client: b.clientWidth, right: b.getBoundingClientRect().right}; })()"
            )
            assert box and box["right"] <= width
        context.close()
    assert not wrong, "\n".join(wrong)


@pytest.mark.django_db(transaction=True)
def test_report_contents_lead_to_every_section(live_server, browser):
    _world()
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    login(page, live_server.url, "res", PASSWORD)
    page.goto(f"{live_server.url}/reports/fit/?labels=pooled")
    targets = page.eval_on_selector_all("#report-contents a", "links => links.map(a => a.hash)")
    assert {
        "#scores",
        "#overlap",
        "#leave-one-out",
        "#figures",
        "#fig-positives",
        "#budget",
        "#significance-tests",
        "#proxies",
    } <= set(targets)
    for target in targets:
        assert page.locator(target).count() == 1, target
    page.click("#report-contents a[href='#leave-one-out']")
    top = page.evaluate("document.querySelector('#leave-one-out').getBoundingClientRect().top")
    assert 0 <= top < 100


@pytest.mark.django_db(transaction=True)
def test_403_404_and_favicon_in_the_browser(live_server, browser, settings):
    _, campaign, _ = _world()
    page = browser.new_page(viewport={"width": 768, "height": 1024})
    login(page, live_server.url, "res", PASSWORD)
    answer = page.goto(f"{live_server.url}/campaigns/{campaign.pk}/adjudicate/")
    assert answer.status == 403
    assert page.locator("header.topbar nav >> text=Reports").count() == 1
    assert page.locator("#forbidden-reason").inner_text() == "Only admins can do this."
    icon = page.get_attribute("link[rel=icon]", "href")
    assert icon == "/static/favicon.svg"
    answer = page.goto(f"{live_server.url}/favicon.ico")
    assert answer.status == 200 and answer.url.endswith("/static/favicon.svg")
    assert "svg" in answer.headers["content-type"]
    settings.DEBUG = True
    answer = page.goto(f"{live_server.url}/no/such/page/")
    assert answer.status == 404
    assert page.locator("h1").inner_text() == "Not found"
    assert page.locator("header.topbar").count() == 1

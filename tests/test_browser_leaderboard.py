"""Real browser: a researcher opens a dataset's leaderboard, sorts it, picks a label set and
exports it, in Debian's Chromium."""

import os
import re
from pathlib import Path

import pytest

from config import roles
from tests.browser_support import member, needs_chromium, signed_in
from tests.retrieval.scoring.test_leaderboard_page import leaderboard_world

pytestmark = [pytest.mark.browser, needs_chromium]
PASSWORD = "pw-leaderboard-123"


def _runs(page) -> list[str]:
    return page.eval_on_selector_all("tr.run-row", "rows => rows.map(r => r.dataset.run)")


@pytest.mark.django_db(transaction=True)
def test_leaderboard_sorts_switches_label_sets_and_exports(live_server, browser, tmp_path):
    dataset = leaderboard_world("board")
    member("res", PASSWORD, roles.RESEARCHER)
    page = signed_in(browser, live_server.url, "res", PASSWORD)
    page.goto(f"{live_server.url}/datasets/{dataset.name}/")
    page.click("#leaderboard-link")
    page.wait_for_selector("#leaderboard")
    assert sorted(_runs(page)) == ["alpha", "beta", "gamma"]
    assert page.locator("tr.row-notes[data-run=gamma]").inner_text().count("Adjusted estimate") == 1
    shots = os.environ.get("FIREPOOL_SCREENSHOTS")
    if shots:
        page.screenshot(path=os.path.join(shots, "leaderboard.png"), full_page=True)

    # Sort by model name, then reversed by clicking the same header again.
    page.click("th >> text=Model")
    page.wait_for_url(re.compile(r"sort=model$"))
    assert _runs(page) == ["alpha", "beta", "gamma"]
    page.click("th >> text=Model")
    page.wait_for_url(re.compile(r"sort=-model$"))
    assert _runs(page) == ["gamma", "beta", "alpha"]
    page.click("a[data-sort='MedR']")
    page.wait_for_url(re.compile(r"sort=MedR"))
    medians = page.eval_on_selector_all(
        "tr.run-row",
        "rows => rows.map(r => r.querySelectorAll('td.num .value')[5].textContent)",
    )
    numbers = [float(m.replace("> ", "")) for m in medians]
    assert numbers == sorted(numbers)

    # The picker switches to the imported set, where pooling is unknown.
    page.select_option("#labels", "imported")
    page.wait_for_url(re.compile(r"labels=imported"))
    assert "does not record which runs were pooled" in page.content()

    with page.expect_download() as download:
        page.click("#leaderboard-exports >> text=LaTeX, FIRE Table 1")
    text = Path(download.value.path()).read_text(encoding="utf-8")
    assert "\\toprule" in text and re.search(r"\d+\.\d \(\d+\.\d \+ \d+\.\d\)", text)


@pytest.mark.django_db(transaction=True)
def test_a_narrow_window_says_the_table_scrolls_and_the_address_names_the_label_set(
    live_server, browser
):
    """At 768 px the leaderboard is wider than the window: a hint says so above it (none at
    1280 px where it fits), and the address names the default label set the page shows."""
    dataset = leaderboard_world("narrow")
    member("res2", PASSWORD, roles.RESEARCHER, staff=False)
    page = signed_in(browser, live_server.url, "res2", PASSWORD, 768)
    page.goto(f"{live_server.url}/datasets/{dataset.name}/leaderboard/")
    page.wait_for_selector("#leaderboard")
    chosen = page.locator("#labels").input_value()
    page.wait_for_url(re.compile(r"labels=" + re.escape(chosen) + "$"))
    box = page.locator(".table-scroll:has(#leaderboard)")
    assert box.evaluate("b => b.scrollWidth > b.clientWidth")
    hint = page.locator(".scroll-hint:visible")
    assert hint.count() >= 1 and "scroll the table sideways" in hint.first.inner_text()
    assert "overflowing" in box.get_attribute("class")
    box.evaluate("b => { b.scrollLeft = b.scrollWidth; b.dispatchEvent(new Event('scroll')); }")
    page.wait_for_function(
        "() => document.querySelector('.table-scroll.scrolled-to-end #leaderboard') !== null"
    )
    shots = os.environ.get("FIREPOOL_SCREENSHOTS")
    if shots:
        page.screenshot(path=os.path.join(shots, "leaderboard-768.png"), full_page=True)
    page.set_viewport_size({"width": 1600, "height": 900})
    page.wait_for_function(
        "() => { const b = document.querySelector('.table-scroll:has(#leaderboard)');"
        " return b.scrollWidth > b.clientWidth || !b.previousElementSibling.matches("
        "'.scroll-hint:not([hidden])'); }"
    )

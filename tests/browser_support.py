"""What the browser tests and the judging-latency bench share: Chromium and the login form."""

import os
import shutil

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--autoplay-policy=no-user-gesture-required",
]
needs_chromium = pytest.mark.skipif(
    not os.path.exists(CHROMIUM), reason="Debian chromium not installed"
)

# Turns the judging page's test hooks on and collects every firepool:shown event, from its
# first script on.
RECORD_SHOWN = """
window.FIREPOOL_TEST = true;
window.__shown = [];
document.addEventListener("firepool:shown", (e) => window.__shown.push(e.detail));
"""


def launch(playwright):
    """Debian's Chromium, headless, with the flags this machine's closed network needs."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


def login(page, base_url: str, username: str, password: str, landing: str = "/") -> None:
    """Log in through the login page and wait for the page the role lands on."""
    page.goto(f"{base_url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base_url}{landing}")

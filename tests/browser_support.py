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


def member(name: str, password: str, role: str, *, staff: bool = True):
    """A user in ``role``'s group (:mod:`config.roles`), who can log in with ``password``."""
    from django.contrib.auth import get_user_model

    from config import roles

    user = get_user_model().objects.create_user(name, password=password, is_staff=staff)
    user.groups.add(roles.ensure_groups()[role])
    return user


def signed_in(browser, base_url: str, name: str, password: str, width: int = 1280, height=900):
    """A new page of ``browser`` at ``width`` x ``height`` px, logged in as ``name``."""
    page = browser.new_page(viewport={"width": width, "height": height})
    login(page, base_url, name, password)
    return page


# Jobs run in the request that queues them, so a browser test meets their result at once.
IMMEDIATE_TASKS = {
    "default": {
        "BACKEND": "django_tasks.backends.immediate.ImmediateBackend",
        "QUEUES": ["default", "gpu"],
    }
}
SCREEN_WIDTHS = ((1280, 800), (768, 1024))


def shoot_full(page, name: str) -> None:
    """Full-page screenshots at 768 and 1280 px into FIREPOOL_SCREENSHOTS, when it is set; the
    page is left at 1280 px, scrolled to the top (after a full-page shot at another width
    Chromium dropped the next click)."""
    folder = os.environ.get("FIREPOOL_SCREENSHOTS")
    if not folder:
        return
    for width, height in reversed(SCREEN_WIDTHS):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=os.path.join(folder, f"{name}-{width}.png"), full_page=True)
    page.evaluate("window.scrollTo(0, 0)")
    page.wait_for_timeout(100)


def shoot_screen(page, name: str) -> None:
    """What is on screen (not the whole page) at 1280 and 768 px into FIREPOOL_SCREENSHOTS,
    when it is set, as ``NAME-1280.png`` and ``NAME-768.png``; the viewport is put back."""
    folder = os.environ.get("FIREPOOL_SCREENSHOTS")
    if not folder:
        return
    size = page.viewport_size
    for width, height in SCREEN_WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_timeout(150)
        page.screenshot(path=os.path.join(folder, f"{name}-{width}.png"))
    page.set_viewport_size(size)

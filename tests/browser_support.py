"""What the browser tests and the judging-latency bench share: Chromium, login, a campaign."""

import os
import shutil

import numpy as np
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

# Collects every firepool:shown event of the judging page, from its first script on.
RECORD_SHOWN = """
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


def random_run(dataset, name: str, seed: int):
    """A run scoring the dataset's test videos at random for every test query caption."""
    from retrieval.models import Caption, RetrievalModel, Video
    from retrieval.runs import RankedLists
    from retrieval.services.runs import store_run

    queries = np.array(
        Caption.objects.filter(dataset=dataset, split="test", is_query=True)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    videos = np.array(
        Video.objects.filter(dataset=dataset, split="test")
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    scores = np.random.default_rng(seed).random((len(queries), len(videos)))
    order = np.argsort(-scores, axis=1)
    model = RetrievalModel.objects.create(dataset=dataset, name=name, source="run")
    lists = RankedLists(queries, videos[order], np.take_along_axis(scores, order, axis=1))
    return store_run(model, name, lists)


def random_run_campaign(dataset, name: str, depth: int, seed: int):
    """A campaign pooling one randomly scored run over the dataset's test split."""
    from annotation.services.campaigns import CampaignSpec, create_campaign

    run = random_run(dataset, f"{name}-run", seed)
    return create_campaign(
        dataset, [run], CampaignSpec(name=name, depth=depth, second_label_rate=0.0)
    )

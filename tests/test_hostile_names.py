"""Names stored before the name rule (or written past it) never break a page or a link.

Rows are renamed with ``QuerySet.update``, which skips every check, to what a probe stored
through the old entry points; every page that lists them must render for researchers and
admins, and every link on those pages must lead to a page (followed, not just built) that
shows the very object the link was made for.
"""

import html
import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotation.campaigns.service import CampaignSpec, create_campaign
from annotation.models import Campaign
from config import roles
from jobs.models import Job
from retrieval.label_sets.judged import Judged
from retrieval.label_sets.service import store_label_set
from retrieval.models import Dataset, LabelSet, RetrievalModel, Run
from tests.factories import query_dataset, random_run

HOSTILE = [
    "slash/name",
    ".",
    "..",
    "<b>x</b>",
    "line\u2028break",
    "=1+1",
    "back\\slash",
    " padded ",
    "tab\there",
    "%2e%2E",
    "\\2F",
    "",
]
"""Names the old checks let through, or that a direct write could store."""

PASSWORD = "pw-hostile-12345"
LOCAL_HREF = re.compile(r'href="(/[^"]*)"')


def _client(role: str) -> Client:
    user = get_user_model().objects.create_user(f"u-{role}", password=PASSWORD, is_staff=True)
    user.groups.add(roles.ensure_groups()[role])
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


@pytest.fixture
def world(db):
    """A dataset ``host`` whose models, runs, label sets and campaigns carry the hostile
    names, one small dataset per hostile name, and an import job naming each."""
    host, videos, captions = query_dataset("host")
    pairs = Judged.build([c.pk for c in captions[:3]], [v.pk for v in videos[:3]], [1, 0, 1])
    for i, hostile in enumerate(HOSTILE):
        run = random_run(host, f"run-{i}", i)
        label_set = store_label_set(host, f"set-{i}", pairs, source="import")
        campaign = create_campaign(host, [run], CampaignSpec(name=f"camp-{i}", depth=2))
        RetrievalModel.objects.filter(pk=run.model_id).update(name=hostile)
        Run.objects.filter(pk=run.pk).update(name=hostile)
        LabelSet.objects.filter(pk=label_set.pk).update(name=hostile)
        Campaign.objects.filter(pk=campaign.pk).update(name=hostile)
        dataset, _, _ = query_dataset(f"ds-{i}", n=3)
        random_run(dataset, "r", 0)
        Dataset.objects.filter(pk=dataset.pk).update(name=hostile)
        Job.objects.create(
            kind="import_dataset",
            arguments={"name": hostile, "format": "jsonl", "captions": "x/captions"},
            description=f"import captions (jsonl) into {hostile}",
            status=Job.Status.SUCCEEDED,
            result={"dataset": hostile},
        )
    return host


def _links(body: str) -> set[str]:
    """The page's links to this site's pages (not static files, media, logout or fragments)."""
    found = {html.unescape(href) for href in LOCAL_HREF.findall(body)}
    return {href for href in found if not href.startswith(("/static/", "/media/", "/logout/"))}


def _start(role: str) -> list[str]:
    campaigns = list(Campaign.objects.values_list("pk", flat=True))
    pages = ["/", "/datasets/", "/label-sets/", "/campaigns/", "/jobs/"]
    pages += [f"/campaigns/{pk}/" for pk in campaigns]
    pages += ["/datasets/host/", "/reports/host/", "/reports/host/data/"]
    if role == roles.ADMIN:
        pages += ["/upload/dataset/", "/api/campaigns/"]
        pages += ["/admin/retrieval/dataset/", "/admin/retrieval/labelset/"]
        pages += ["/admin/annotation/campaign/"]
    return pages


def _crawl(client: Client, start: list[str], depth: int = 2):
    """GET every page of ``start`` and the local links on them, ``depth`` links deep; the
    status of each URL (after redirects), and the objects the pages showed (from their template context)."""
    status: dict[str, int] = {}
    shown: dict[str, set] = {"dataset": set(), "model": set(), "label_set": set()}
    level = {url: 0 for url in start}
    queue = list(start)
    while queue:
        url = queue.pop(0)
        if url in status:
            continue
        response = client.get(url, follow=True)
        status[url] = response.status_code
        context = response.context
        if context is not None and not url.startswith("/admin/"):
            for key in ("overview", "dataset"):
                if key in context and context[key] is not None:
                    shown["dataset"].add(context[key].name)
            if isinstance(context.get("model"), RetrievalModel):
                shown["model"].add((context["dataset"].name, context["model"].name))
            if isinstance(context.get("label_set"), LabelSet):
                shown["label_set"].add(context["label_set"].name)
        kind = response.get("Content-Type", "")
        if response.status_code != 200 or level[url] >= depth or "html" not in kind:
            continue
        for link in _links(response.content.decode()):
            admin_page = link.startswith("/admin/")
            if admin_page and not link.startswith(("/admin/retrieval/", "/admin/annotation/c")):
                continue
            if link not in level:
                level[link] = level[url] + 1
                queue.append(link)
    return status, shown


@pytest.mark.parametrize("role", [roles.RESEARCHER, roles.ADMIN])
def test_every_page_listing_hostile_names_renders_and_every_link_leads_to_its_object(world, role):
    status, shown = _crawl(_client(role), _start(role))
    broken = {url: code for url, code in status.items() if code != 200}
    assert not broken, broken
    # Each hostile dataset's page, each hostile model's page and each hostile label set's
    # report were reached by following links, and showed that very object.
    assert shown["dataset"] >= {*HOSTILE, "host"}
    assert shown["model"] >= {("host", name) for name in HOSTILE}
    # ``?labels=`` with nothing after it asks for the default set, so "" is not reachable
    # by name (the set is still listed, and its pages render).
    assert shown["label_set"] >= set(HOSTILE) - {""}


def test_annotators_judging_pages_list_hostile_campaign_names(world):
    client = _client(roles.ANNOTATOR)
    status, _ = _crawl(client, ["/", "/api/campaigns/"], depth=1)
    broken = {url: code for url, code in status.items() if code != 200}
    assert not broken, broken
    assert len([url for url in status if re.fullmatch(r"/judge/\d+/", url)]) == len(HOSTILE)

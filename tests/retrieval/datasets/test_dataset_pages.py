"""The dataset list and a dataset's page: splits, models and runs, label sets, campaigns."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotation.campaigns.service import CampaignSpec, create_campaign
from annotation.models import Campaign
from config import roles
from retrieval.datasets.overview import dataset_overview, dataset_summaries
from retrieval.label_sets.judged import Judged
from retrieval.label_sets.service import store_label_set
from retrieval.models import Caption, RetrievalModel, Video
from tests.browser_support import login, needs_chromium
from tests.factories import query_dataset, random_run

PASSWORD = "pw-dataset-12345"


@pytest.fixture
def dataset(db):
    """Six test queries, two train videos with a caption, three models (one without a run),
    two label sets (the first the default) and a paused campaign."""
    dataset, videos, captions = query_dataset("tiny")
    train = Video.objects.bulk_create(
        [Video(dataset=dataset, key=f"t{i}", split="train") for i in range(2)]
    )
    Caption.objects.create(
        dataset=dataset, key="tc", text="train caption", video=train[0], split="train"
    )
    alpha = random_run(dataset, "alpha", 0)
    random_run(dataset, "beta", 1)
    RetrievalModel.objects.create(dataset=dataset, name="gamma", source="encoder", encoder="mme")
    pairs = Judged.build([captions[0].pk], [videos[1].pk], [1])
    store_label_set(dataset, "first-labels", pairs, source="import")
    store_label_set(dataset, "second-labels", pairs, source="import")
    campaign = create_campaign(dataset, [alpha], CampaignSpec(name="tiny-campaign", depth=2))
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.PAUSED)
    return dataset


def signed_in(role: str) -> Client:
    user = get_user_model().objects.create_user(f"u-{role}", password=PASSWORD, is_staff=True)
    user.groups.add(roles.ensure_groups()[role])
    client = Client()
    client.force_login(user)
    return client


def test_the_overview_counts_splits_and_lists_models_campaigns_and_label_sets(dataset):
    overview = dataset_overview(dataset)
    assert [(s.name, s.videos, s.captions, s.queries) for s in overview.splits] == [
        ("test", 6, 6, 6),
        ("train", 2, 1, 0),
    ]
    assert [(m.name, [r.name for r in m.runs]) for m in overview.models] == [
        ("alpha", ["alpha"]),
        ("beta", ["beta"]),
        ("gamma", []),
    ]
    assert overview.run_count == 2
    assert [(c.name, c.status) for c in overview.campaigns] == [("tiny-campaign", "paused")]
    assert [(s.name, s.is_default) for s in overview.label_sets] == [
        ("first-labels", True),
        ("second-labels", False),
    ]
    (summary,) = dataset_summaries()
    assert (summary.name, summary.videos, summary.captions, summary.models) == ("tiny", 8, 7, 3)
    assert summary.label_sets == 2


def test_the_overview_takes_the_same_queries_however_many_models(
    dataset, django_assert_max_num_queries
):
    for i in range(5):
        random_run(dataset, f"more-{i}", i + 2)
    with django_assert_max_num_queries(6):
        dataset_overview(dataset)


def test_the_dataset_page_shows_everything_with_links(dataset):
    client = signed_in(roles.RESEARCHER)
    page = client.get("/datasets/tiny/")
    assert page.status_code == 200
    html = page.content.decode()
    for text in ("alpha", "beta", "gamma", "no run yet", "tiny-campaign", "paused"):
        assert text in html
    assert '<strong>first-labels</strong> <span class="status succeeded">default</span>' in html
    assert "<strong>second-labels</strong></td>" in html  # not marked default
    assert 'href="/reports/tiny/"' in html
    assert 'href="/reports/tiny/?labels=second-labels"' in html
    assert f'href="/campaigns/{dataset.campaigns.get().pk}/agreement/"' in html
    listing = client.get("/datasets/").content.decode()
    assert 'href="/datasets/tiny/"' in listing
    assert 'href="/datasets/"' in client.get("/").content.decode()


def test_annotators_and_strangers_do_not_see_dataset_pages(dataset):
    annotator = signed_in(roles.ANNOTATOR)
    assert annotator.get("/datasets/").status_code == 403
    assert annotator.get("/datasets/tiny/").status_code == 403
    assert Client().get("/datasets/tiny/")["Location"].startswith("/login/")
    assert signed_in(roles.ADMIN).get("/datasets/nope/").status_code == 404


@pytest.mark.browser
@needs_chromium
@pytest.mark.django_db(transaction=True)
def test_the_dataset_page_reads_well_at_1280_px(live_server, browser):
    from retrieval.datasets.demo.service import create_demo_dataset

    user = get_user_model().objects.create_user("res", password=PASSWORD, is_staff=True)
    user.groups.add(roles.ensure_groups()[roles.RESEARCHER])
    demo = create_demo_dataset(name="shot", n_videos=12, seed=3, workers=1)
    runs = [random_run(demo, name, seed) for seed, name in enumerate(("alpha", "beta"))]
    create_campaign(demo, runs, CampaignSpec(name="shot-campaign", depth=3))
    caption = Caption.objects.filter(dataset=demo, is_query=True).first()
    store_label_set(
        demo, "shot-labels", Judged.build([caption.pk], [caption.video_id], [1]), source="import"
    )
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    login(page, live_server.url, "res", PASSWORD)
    page.click("#all-datasets")
    page.click("text=shot")
    page.wait_for_url(f"{live_server.url}/datasets/shot/")
    page.screenshot(path="/tmp/firepool-dataset.png", full_page=True)
    # Nothing is cut off: the page is no wider than the window.
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    assert page.locator("a[href='/reports/shot/']", has_text="alpha").is_visible()
    assert page.locator("a[href='/datasets/shot/models/alpha/']").is_visible()
    assert page.get_by_text("shot-campaign").is_visible()
    assert page.locator("text=shot-labels >> xpath=.. >> .status").inner_text() == "default"

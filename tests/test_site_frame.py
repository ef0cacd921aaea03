"""The site's frame around its own answers: the 403 page says why, the 404 page is the
site's own in debug mode too, a favicon for every page, and the navigation's Reports."""

import xml.etree.ElementTree as ET

import pytest
from django.contrib.auth import get_user_model
from django.contrib.staticfiles import finders

from config.roles import ADMIN, ANNOTATOR, RESEARCHER, ensure_groups
from retrieval.models import Dataset
from tests.factories import make_campaign

pytestmark = pytest.mark.django_db


def person(role: str):
    user = get_user_model().objects.create_user(role, password="pw-12345-frame")
    user.groups.add(ensure_groups()[role])
    return user


def test_403_keeps_the_frame_and_says_why(client):
    campaign = make_campaign()
    client.force_login(person(RESEARCHER))
    page = client.get(f"/campaigns/{campaign.pk}/adjudicate/")
    assert page.status_code == 403
    html = page.content.decode()
    assert 'class="topbar"' in html and "Log out researcher" in html
    assert '<p class="error" id="forbidden-reason">Only admins can do this.</p>' in html
    assert 'href="/reports/"' in html, "the navigation the role may use is still there"


def test_403_for_an_annotator_names_the_roles_that_may(client):
    client.force_login(person(ANNOTATOR))
    page = client.get("/reports/")
    assert page.status_code == 403
    assert "Only researchers and admins can see reports." in page.content.decode()
    assert 'href="/reports/"' not in page.content.decode()


@pytest.mark.parametrize("debug", [False, True])
def test_unknown_urls_get_the_sites_404(client, settings, debug):
    settings.DEBUG = debug
    client.force_login(person(RESEARCHER))
    for url in ("/no-such-page/", "/datasets/no-such-dataset/"):
        page = client.get(url)
        assert page.status_code == 404, url
        html = page.content.decode()
        assert 'class="topbar"' in html and "<h1>Not found</h1>" in html, url
        assert "URLconf" not in html and "technical" not in html, url
    # The lookup's own message is kept (it says what is missing).
    missing = client.get("/datasets/no-such-dataset/").content.decode()
    assert "no dataset named &#x27;no-such-dataset&#x27;" in missing


def test_debug_404_keeps_the_trailing_slash_redirect(client, settings):
    settings.DEBUG = True
    client.force_login(person(RESEARCHER))
    page = client.get("/label-sets")
    assert page.status_code == 301 and page["Location"] == "/label-sets/"
    assert client.get("/label-sets/").status_code == 200


def test_debug_404_for_anonymous_visitors(client, settings):
    settings.DEBUG = True
    page = client.get("/nothing/here/")
    assert page.status_code == 404 and "<h1>Not found</h1>" in page.content.decode()


def test_favicon_is_linked_and_redirected(client):
    client.force_login(person(RESEARCHER))
    html = client.get("/label-sets/").content.decode()
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in html
    answer = client.get("/favicon.ico")
    assert answer.status_code == 301 and answer["Location"] == "/static/favicon.svg"
    path = finders.find("favicon.svg")
    assert path and ET.parse(path).getroot().tag == "{http://www.w3.org/2000/svg}svg"


def test_navigation_shows_datasets_and_reports_to_those_who_may_see_them(client):
    expected = {ANNOTATOR: False, RESEARCHER: True, ADMIN: True}
    for role, shown in expected.items():
        client.force_login(person(role))
        html = client.get("/judge/" if role == ANNOTATOR else "/").content.decode()
        assert ('href="/datasets/">Datasets</a>' in html) is shown, role
        assert ('href="/reports/">Reports</a>' in html) is shown, role


def test_reports_index_links_each_dataset_and_label_set(client):
    campaign = make_campaign()
    dataset = campaign.dataset
    Dataset.objects.filter(pk=dataset.pk).update(has_ground_truth=True)
    client.force_login(person(RESEARCHER))
    html = client.get("/reports/").content.decode()
    assert f'href="/reports/{dataset.name}/">Report</a>' in html
    assert f'href="/datasets/{dataset.name}/leaderboard/">Leaderboard</a>' in html
    assert f'href="/reports/{dataset.name}/judging-orders/"' in html
    assert "No label set yet" in html

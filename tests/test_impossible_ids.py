"""Ids no row can have, in every page URL and id field, are a 4xx, never a 5xx.

The API's integer slots are covered with the schema fuzzing (``test_api_schema_fuzz``); this
module walks the page routes with an integer in their path, and the id fields and page
numbers the pages read, with integers past 32 and 64 bits, negative and up to 10^30.
"""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import URLResolver, get_resolver

from annotation.models import Campaign
from config import roles
from tests.factories import make_campaign

EXTREMES = (10**30, 2**31, 2**63 - 1, 2**63, 2**64, 0)
"""Ids no row has (a negative one does not match an ``<int:...>`` route: a 404 by routing)."""


def int_routes() -> list[str]:
    """Every page route with an ``<int:...>`` part (the admin site routes by ``<path:...>``)."""

    def walk(resolver, prefix: str):
        for pattern in resolver.url_patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern, prefix + str(pattern.pattern))
            else:
                yield prefix + str(pattern.pattern)

    return sorted({route for route in walk(get_resolver(), "") if "<int:" in route})


def _url(route: str, value: int) -> str:
    parts = []
    for piece in route.split("/"):
        if piece.startswith("<int:"):
            parts.append(str(value))
        elif piece.startswith("<str:"):
            parts.append("qrels")
        else:
            parts.append(piece)
    return "/" + "/".join(parts)


@pytest.fixture
def admin(db):
    user = get_user_model().objects.create_user("ids-admin", is_staff=True, is_superuser=True)
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def test_the_routes_are_found():
    routes = int_routes()
    assert "jobs/<int:job_id>/" in routes and "campaigns/<int:campaign_id>/" in routes


@pytest.mark.parametrize("route", int_routes())
def test_an_impossible_id_in_a_page_route_is_a_404(admin, route):
    answers = [
        (method, value, getattr(admin, method)(_url(route, value)).status_code)
        for value in EXTREMES
        for method in ("get", "post")
    ]
    assert {status for *_, status in answers} <= {404, 405}, answers


def test_impossible_ids_in_page_forms_and_page_numbers(admin, db):
    campaign = make_campaign()
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.ACTIVE)
    roles.ensure_groups()
    base = f"/campaigns/{campaign.pk}"
    answers = []
    for value in (*EXTREMES, -(10**30), -1):
        answers += [
            (
                "adjudicate",
                value,
                admin.post(
                    f"{base}/adjudicate/", {"pair": value, "decision": "relevant"}
                ).status_code,
            ),  # fmt: skip
            ("promote", value, admin.post(f"{base}/gold/promote/", {"pair": value}).status_code),
            ("sample", value, admin.post(f"{base}/sample/", {"pairs": value}).status_code),
            ("page", value, admin.get(f"{base}/adjudicate/", {"page": value}).status_code),
            ("jobs page", value, admin.get("/jobs/", {"page": value}).status_code),
        ]
    assert all(status < 500 for *_, status in answers), [a for a in answers if a[2] >= 500]

"""The admin's dataset list reads its video and caption counts with the page."""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.factories import query_dataset


def list_page(client):
    with CaptureQueriesContext(connection) as captured:
        page = client.get("/admin/retrieval/dataset/")
    assert page.status_code == 200
    return page.content.decode(), len(captured.captured_queries)


@pytest.mark.django_db
def test_counts_are_right_and_cost_no_query_per_row(client):
    client.force_login(get_user_model().objects.create_superuser("root", "r@example.org", "pw-1"))
    query_dataset("one", n=2)
    _, one_row = list_page(client)
    query_dataset("two", n=5)
    query_dataset("three", n=3)
    html, three_rows = list_page(client)
    assert three_rows == one_row
    for name, n in (("one", 2), ("two", 5), ("three", 3)):
        row = html[html.index(f">{name}<") :].split("</tr>")[0]
        assert row.count(f'<td class="field-video_count">{n}</td>') == 1
        assert row.count(f'<td class="field-caption_count">{n}</td>') == 1

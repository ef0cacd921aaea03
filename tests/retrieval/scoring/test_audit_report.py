"""Report pages checked in an audit: the report's semantic-proxy table in points like every score table,
and a dataset's default label set chosen on the Label sets page (admins only, one service)."""

import pytest
from django.contrib.auth import get_user_model

from config.roles import ADMIN, RESEARCHER, ensure_groups
from retrieval.label_sets.service import LabelSetError, choose_default
from retrieval.models import LabelSet
from retrieval.scoring import report_figures
from tests.factories import pooled_world


@pytest.fixture
def world(db):
    return pooled_world("aud")


def person(role: str):
    user = get_user_model().objects.create_user(role, password="pw-12345-role", is_staff=True)
    user.groups.add(ensure_groups()[role])
    return user


def test_the_proxy_table_shows_ndcg_in_points(world, client, monkeypatch):
    section = report_figures.ProxySection(
        split="test",
        videos=24,
        texts=48,
        has_truth=False,
        error="",
        errors=[],
        missing=[],
        headings=["bow"],
        rows=[
            report_figures.ProxyModelRow(
                model="alpha", note="", cells=[report_figures.ProxyCell(0.4312, 0.5, 0.3624)]
            )
        ],
        taus=[],
        chart="",
    )
    monkeypatch.setattr(report_figures, "proxy_section", lambda proxies: section)
    client.force_login(person(RESEARCHER))
    html = client.get("/reports/aud/?labels=pooled").content.decode()
    table = html[html.index('id="proxy-ndcg"') :]
    table = table[: table.index("</table>")]
    assert ">43.1<" in table and 'title="v2t 50.0 · t2v 36.2"' in table
    assert "0.431" not in table and "0.500" not in table


def test_choose_default_makes_one_default_and_refuses_unknown_names(world):
    from retrieval.label_sets.judged import Judged
    from retrieval.label_sets.service import store_label_set

    pooled = world.label_sets.get(name="pooled")
    other = store_label_set(world, "other", Judged.build([], [], []), source="campaign")
    choose_default(world, "other")
    assert set(LabelSet.objects.filter(is_default=True).values_list("name", flat=True)) == {"other"}
    with pytest.raises(LabelSetError, match="no label set named 'ghost'.*known: other, pooled"):
        choose_default(world, "ghost")
    choose_default(world, pooled.name)
    other.refresh_from_db()
    assert not other.is_default and LabelSet.objects.get(pk=pooled.pk).is_default


def test_admins_choose_the_default_on_the_label_sets_page(world, client):
    from retrieval.label_sets.judged import Judged
    from retrieval.label_sets.service import store_label_set

    store_label_set(world, "other", Judged.build([], [], []), source="campaign")
    LabelSet.objects.update(is_default=False)
    client.force_login(person(RESEARCHER))
    report = client.get("/reports/aud/").content.decode()
    assert 'href="/label-sets/"' in report and "Admin › Label sets" not in report
    assert "default-label-set" not in client.get("/label-sets/").content.decode()
    assert (
        client.post("/datasets/aud/default-label-set/", {"label_set": "other"}).status_code == 403
    )
    assert not LabelSet.objects.filter(is_default=True).exists()

    client.force_login(person(ADMIN))
    page = client.get("/label-sets/").content.decode()
    assert 'action="/datasets/aud/default-label-set/"' in page
    answer = client.post("/datasets/aud/default-label-set/", {"label_set": "other"})
    assert answer.status_code == 302 and answer["Location"] == "/label-sets/"
    assert LabelSet.objects.get(is_default=True).name == "other"
    refused = client.post("/datasets/aud/default-label-set/", {"label_set": "ghost"})
    assert refused.status_code == 400 and "ghost" in refused.content.decode()
    assert LabelSet.objects.get(is_default=True).name == "other"
    assert client.get("/datasets/aud/default-label-set/").status_code == 405

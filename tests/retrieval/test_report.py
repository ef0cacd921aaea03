"""The report page, its JSON and the analyses command, on a small synthetic world."""

import io
import json

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from config.roles import ANNOTATOR, RESEARCHER, ensure_groups
from retrieval.judged import Judged
from retrieval.services.labelsets import store_label_set
from retrieval.services.rescoring import rescore_dataset
from tests.factories import pooled_world


@pytest.fixture
def world(db):
    """24 clips, two random runs, and a label set judging every pooled top-3 pair truthfully."""
    return pooled_world("rep")


def test_corrected_scores_sit_between_original_and_true(world):
    result = rescore_dataset(world, world.label_sets.get()).result
    for run in ("alpha", "beta"):
        original = result.blocks["original"][run].means["C@10"]
        corrected = result.blocks["corrected"][run].means["C@10"]
        true = result.blocks["true"][run].means["C@10"]
        assert original <= corrected <= true + 1e-12
        # Judging the pooled top 3 truthfully makes C@1..3 exact.
        assert result.blocks["corrected"][run].means["C@1"] == pytest.approx(
            result.blocks["true"][run].means["C@1"]
        )
    loro = result.blocks["leave_one_out"]
    assert loro["alpha"].means["C@1"] <= result.blocks["corrected"]["alpha"].means["C@1"]


def person(role: str):
    user = get_user_model().objects.create_user(role, password="pw-12345-role", is_staff=True)
    user.groups.add(ensure_groups()[role])
    return user


def test_report_page_and_data(world, client):
    client.force_login(person(ANNOTATOR))
    assert client.get("/reports/rep/").status_code == 403
    client.force_login(person(RESEARCHER))
    page = client.get("/reports/rep/?labels=pooled&metric=C@5")
    assert page.status_code == 200
    html = page.content.decode()
    for anchor in (
        'id="table1"',
        'id="table1-true"',
        'id="table3"',
        'id="table4"',
        'id="significance"',
    ):
        assert anchor in html
    assert html.count("<svg") == 5
    assert " + " in html  # the A (B + C) cells
    assert "unpooled bias" in html
    data = client.get("/reports/rep/data/?labels=pooled").json()
    assert {row["run"] for row in data["table1"]} == {"alpha", "beta"}
    assert data["table3"]["rows"][0]["rbo"] <= 1
    assert client.get("/reports/nope/").status_code == 404


def test_analyses_command_json(world):
    out = io.StringIO()
    call_command("analyses", dataset="rep", labels="pooled", resamples=500, stdout=out)
    data = json.loads(out.getvalue())
    assert data["queries"] > 0 and len(data["table4"]) == 2
    assert set(data["figures"]) >= {"positives_per_query", "length_positives", "correct_by_length"}
    counts = np.array(data["figures"]["positives_per_query"]["counts"])
    assert counts.sum() == data["queries"]


def test_report_uses_the_default_label_set_not_the_newest(world, client):
    store_label_set(world, "later", Judged.build([], [], []), source="jsonl")
    client.force_login(person(RESEARCHER))
    assert client.get("/reports/rep/data/").json()["label_set"] == "pooled"
    html = client.get("/reports/rep/").content.decode()
    assert '<option value="pooled" selected>pooled (resolved campaign' in html
    assert "pairs, default)" in html
    assert client.get("/reports/rep/data/?labels=later").json()["label_set"] == "later"
    assert client.get("/reports/rep/data/?labels=").json()["label_set"] is None


def test_unknown_label_set_is_an_error_not_a_fallback(world, client):
    client.force_login(person(RESEARCHER))
    page = client.get("/reports/rep/?labels=nope")
    assert page.status_code == 404
    html = page.content.decode()
    assert 'id="report-error"' in html
    assert "Dataset &#x27;rep&#x27; has no label set named &#x27;nope&#x27;" in html
    assert "(known: pooled)" in html
    assert 'id="table1"' not in html  # no report under some other label set
    assert '<option value="" selected>' not in html
    data = client.get("/reports/rep/data/?labels=nope")
    assert data.status_code == 404 and "no label set named 'nope'" in data.json()["detail"]


def test_report_get_writes_nothing(world, client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(person(RESEARCHER))
    client.get("/reports/rep/")  # warm caches outside the capture
    with CaptureQueriesContext(connection) as queries:
        for url in ("/reports/rep/", "/reports/rep/?labels=nope", "/reports/rep/data/"):
            client.get(url)
    writes = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].lstrip().split()[0].upper() in {"INSERT", "UPDATE", "DELETE", "REPLACE"}
    ]
    assert writes == []

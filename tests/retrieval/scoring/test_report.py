"""The report page, its JSON and the analyses command, on a small synthetic world."""

import io
import json

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from config.roles import ANNOTATOR, RESEARCHER, ensure_groups
from retrieval.label_sets.judged import Judged
from retrieval.label_sets.service import load_judged, store_label_set
from retrieval.scoring.rescoring import interval_text, points
from retrieval.scoring.rescoring_service import rescore_dataset
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


def test_one_run_gets_a_sentence_not_an_empty_overlap_table(world, client):
    """Table 3 compares runs two by two: with one run there is no row, so the page says why
    instead of showing a header over nothing."""
    world.runs.filter(name="beta").delete()
    client.force_login(person(RESEARCHER))
    html = client.get("/reports/rep/?labels=pooled").content.decode()
    assert 'id="table3"' not in html and 'id="table3-none"' in html
    assert "Needs two runs or more." in html


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


def with_probabilities(dataset, name: str = "noisy"):
    """The "pooled" labels again, each with a probability of relevance (as Dawid-Skene
    gives): the resolved labels are the same, the intervals are not exact."""
    pairs = load_judged(dataset.label_sets.get(name="pooled"))
    confidence = np.where(pairs.relevance == 1, 0.8, 0.15)
    store_label_set(
        dataset,
        name,
        Judged.build(pairs.caption_ids, pairs.video_ids, pairs.relevance, confidence=confidence),
        source="campaign",
        metadata={"pooled_runs": ["alpha", "beta"], "pool_depth": 3},
    )
    return rescore_dataset(dataset, dataset.label_sets.get(name=name)).result.intervals


def test_report_shows_each_corrected_score_with_its_interval(world, client):
    intervals = with_probabilities(world)
    client.force_login(person(RESEARCHER))
    html = client.get("/reports/rep/?labels=noisy").content.decode()
    table1 = html[html.index('id="table1"') : html.index('id="table1-intervals"')]
    table4 = html[html.index('id="table4"') : html.index('id="table4-intervals"')]
    for run in ("alpha", "beta"):
        for metric in ("C@1", "C@5", "C@10", "AP", "nDCG@10"):
            shown = intervals[run][metric]
            if not shown.parts:  # no labelling moves it (C@10 of a run always right by 10)
                assert interval_text(shown) == ""
                continue
            cell = f'{points(shown.value)} <span class="interval">{interval_text(shown)}</span>'
            assert interval_text(shown) == f"[{points(shown.low)}–{points(shown.high)}]"
            assert cell in table1 and cell in table4
    assert sum(bool(i.parts) for run in intervals.values() for i in run.values()) >= 6
    legend = html[html.index('id="table1-intervals"') :].split("</p>")[0]
    assert "95% interval" in legend and "label noise" in legend
    assert "unjudged" not in legend and "exact" in legend
    data = client.get("/reports/rep/data/?labels=noisy").json()
    for row in data["table1"]:
        for metric, interval in row["intervals"].items():
            expected = intervals[row["run"]][metric]
            assert interval == {"metric": metric, **expected.as_dict()}


def test_exact_scores_show_no_interval(world, client):
    """ "pooled" has no probabilities and nothing unjudged: no brackets, a legend saying so."""
    client.force_login(person(RESEARCHER))
    html = client.get("/reports/rep/?labels=pooled").content.decode()
    table1 = html[html.index('id="table1"') : html.index('id="table1-intervals"')]
    assert 'class="interval"' not in table1 and "[" not in table1
    legend = html[html.index('id="table1-intervals"') :].split("</p>")[0]
    assert "exact" in legend
    data = client.get("/reports/rep/data/?labels=pooled").json()
    for row in data["table1"]:
        for metric, interval in row["intervals"].items():
            assert interval["parts"] == []
            assert interval["low"] == interval["value"] == interval["high"]
            assert interval["value"] == pytest.approx(row["corrected"][metric])

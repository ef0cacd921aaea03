"""The leaderboard page, its exports and the leaderboard command on a small synthetic world."""

import csv
import io
import json
import re

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from config.roles import ANNOTATOR, RESEARCHER
from retrieval.label_sets.judged import Judged
from retrieval.label_sets.service import load_judged, store_label_set
from retrieval.scoring.leaderboard import sort_keys
from retrieval.scoring.leaderboard_service import build_leaderboard
from retrieval.scoring.rescoring import points
from retrieval.scoring.rescoring_service import rescore_dataset
from tests.factories import pooled_world, random_run
from tests.retrieval.scoring.test_report import person


def leaderboard_world(name: str):
    """alpha and beta pooled at depth 3 into "pooled", plus gamma, a run nobody pooled, and
    "imported", a copy of the label set that says nothing about pooling."""
    dataset = pooled_world(name)
    random_run(dataset, "gamma", 3)
    store_label_set(
        dataset, "imported", load_judged(dataset.label_sets.get(name="pooled")), source="jsonl"
    )
    return dataset


@pytest.fixture
def world(db):
    return leaderboard_world("rep")


def runs_in_page(html: str) -> list[str]:
    return re.findall(r'<tr class="run-row" data-run="([^"]+)"', html)


def test_service_rows(world):
    board = build_leaderboard(world, world.label_sets.get(name="pooled"), resamples=200)
    rows = {row.run: row for row in board.rows}
    assert set(rows) == {"alpha", "beta", "gamma"}
    assert rows["alpha"].pooled and rows["beta"].pooled and rows["gamma"].pooled is False
    assert board.bias_runs == ("alpha", "beta")
    for m, bias in board.bias.items():
        expected = (board.loo_errors["alpha"][m] + board.loo_errors["beta"][m]) / 2
        assert bias == pytest.approx(expected)
        assert rows["gamma"].adjusted[m] == pytest.approx(
            min(1.0, rows["gamma"].corrected[m].value + bias)
        )
    assert rows["alpha"].model == "alpha"
    unknown = build_leaderboard(world, world.label_sets.get(name="imported"), resamples=50)
    assert all(row.pooled is None for row in unknown.rows) and unknown.bias is None


def test_page_renders_and_sorts(world, client):
    client.force_login(person(RESEARCHER))
    page = client.get("/datasets/rep/leaderboard/?labels=pooled")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="leaderboard"' in html and 'id="leaderboard-exports"' in html
    assert set(runs_in_page(html)) == {"alpha", "beta", "gamma"}
    assert "Adjusted estimate" in html and "Webber &amp; Park 2009" in html
    assert 'id="pooling-bias"' in html
    assert "exhaustive ground truth" in html  # a synthetic dataset: true scores shown
    assert '<option value="pooled" selected>' in html
    board = build_leaderboard(world, world.label_sets.get(name="pooled"), sort="-AP")
    page = client.get("/datasets/rep/leaderboard/?labels=pooled&sort=-AP")
    assert runs_in_page(page.content.decode()) == [row.run for row in board.rows]
    by_run = client.get("/datasets/rep/leaderboard/?labels=pooled&sort=-run")
    assert runs_in_page(by_run.content.decode()) == ["gamma", "beta", "alpha"]
    for key in sort_keys():
        assert client.get("/datasets/rep/leaderboard/", {"sort": key}).status_code == 200
    # The dataset page links to it.
    assert 'href="/datasets/rep/leaderboard/"' in client.get("/datasets/rep/").content.decode()


def test_default_label_set_and_unknown_pooling(world, client):
    client.force_login(person(RESEARCHER))
    html = client.get("/datasets/rep/leaderboard/").content.decode()
    assert '<option value="pooled" selected>' in html  # the default set
    html = client.get("/datasets/rep/leaderboard/?labels=imported").content.decode()
    assert "does not record which runs were pooled" in html
    assert ">unknown<" in html and "Adjusted estimate" not in html


@pytest.mark.parametrize(
    "query, status",
    [
        ("labels=nope", 404),
        ("labels=%00", 404),
        ("labels=" + "x" * 5000, 404),
        ("sort=nope", 400),
        ("sort=%00", 400),
        ("sort=original:", 400),
        ("labels=pooled&sort=-", 400),
        ("labels[]=1&sort[]=2", 200),
    ],
)
def test_bad_parameters_are_4xx(world, client, query, status):
    client.force_login(person(RESEARCHER))
    page = client.get(f"/datasets/rep/leaderboard/?{query}")
    assert page.status_code == status
    if status != 200:
        assert 'id="leaderboard-error"' in page.content.decode()
    export = client.get(f"/datasets/rep/leaderboard/export/csv/?{query}")
    assert export.status_code == status


def test_exports(world, client):
    client.force_login(person(RESEARCHER))
    base = "/datasets/rep/leaderboard/export"
    response = client.get(f"{base}/csv/?labels=pooled&sort=run")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [row["run"] for row in rows] == ["alpha", "beta", "gamma"]
    assert rows[2]["pooled"] == "no" and rows[2]["adjusted C@1 (estimate)"]
    assert all(0 <= float(row["true C@1"]) <= 1 for row in rows)
    data = json.loads(client.get(f"{base}/json/?labels=pooled").content)
    assert data["label_set"] == "pooled" and len(data["rows"]) == 3
    latex = client.get(f"{base}/latex/?labels=pooled").content.decode()
    assert "\\toprule" in latex and "\\bottomrule" in latex
    fire = client.get(f"{base}/latex/?labels=pooled&layout=fire").content.decode()
    assert re.search(r"\d+\.\d \(\d+\.\d \+ \d+\.\d\)\\%", fire)
    assert client.get(f"{base}/xlsx/").status_code == 404
    assert client.get(f"{base}/latex/?layout=wide").status_code == 400
    assert client.get("/datasets/nope/leaderboard/export/csv/").status_code == 404


def test_annotators_are_kept_out(world, client):
    client.force_login(person(ANNOTATOR))
    assert client.get("/datasets/rep/leaderboard/").status_code == 403
    assert client.get("/datasets/rep/leaderboard/export/csv/").status_code == 403


def test_command_formats(world):
    def run(*args, **options):
        out = io.StringIO()
        call_command("leaderboard", *args, dataset="rep", stdout=out, resamples=100, **options)
        return out.getvalue()

    table = run(labels="pooled")
    assert "Corrected positives" in table and "gamma: adjusted estimate" in table
    rows = list(csv.DictReader(io.StringIO(run(labels="pooled", format="csv", sort="run"))))
    assert [row["run"] for row in rows] == ["alpha", "beta", "gamma"]
    data = json.loads(run(labels="pooled", format="json"))
    assert data["bias_runs"] == ["alpha", "beta"] and data["resamples"] == 100
    assert "\\toprule" in run(labels="pooled", format="latex", layout="fire")
    with pytest.raises(CommandError, match="no label set named"):
        run(labels="nope")
    with pytest.raises(CommandError, match="cannot sort by"):
        run(sort="nope")


def test_page_get_writes_nothing(world, client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(person(RESEARCHER))
    client.get("/datasets/rep/leaderboard/")
    with CaptureQueriesContext(connection) as queries:
        client.get("/datasets/rep/leaderboard/?labels=pooled")
        client.get("/datasets/rep/leaderboard/export/json/?labels=nope")
    writes = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
        and "django_session" not in q["sql"]
    ]
    assert writes == []


def test_no_label_set_at_all(db, client):
    from retrieval.datasets.demo.service import create_demo_dataset

    dataset = create_demo_dataset(name="bare", n_videos=8, seed=1, workers=1)
    random_run(dataset, "only", 0)
    client.force_login(person(RESEARCHER))
    page = client.get("/datasets/bare/leaderboard/")
    assert page.status_code == 200
    assert runs_in_page(page.content.decode()) == ["only"]
    assert client.get("/datasets/bare/leaderboard/export/csv/").status_code == 200
    store_label_set(dataset, "empty", Judged.build([], [], []), source="jsonl")
    assert client.get("/datasets/bare/leaderboard/?labels=empty").status_code == 200


JUNK = ["", "\x00", "1\x00", "nan", "-", "--C@1", "original:", "C@1'", "é" * 300, "x" * 3000]


def test_junk_parameters_never_give_a_server_error(world, client):
    import random

    client.force_login(person(RESEARCHER))
    rng = random.Random(0)
    urls = [
        "/datasets/rep/leaderboard/",
        *(f"/datasets/rep/leaderboard/export/{f}/" for f in ("csv", "json", "latex")),
    ]
    for _ in range(24):
        params = {
            name: rng.choice([*JUNK, "pooled", "imported", *sort_keys()])
            for name in rng.sample(["labels", "sort", "layout", "format"], rng.randint(1, 3))
        }
        response = client.get(rng.choice(urls), params)
        assert response.status_code in (200, 400, 404), (params, response.status_code)


def test_page_and_exports_show_the_labels_intervals(world, client):
    """A label set whose pairs each have a probability: each corrected C@K, AP and nDCG@10
    cell shows its interval from the labels; exact ones show none."""
    pairs = load_judged(world.label_sets.get(name="pooled"))
    confidence = np.where(pairs.relevance == 1, 0.8, 0.15)
    store_label_set(
        world,
        "noisy",
        Judged.build(pairs.caption_ids, pairs.video_ids, pairs.relevance, confidence=confidence),
        source="campaign",
        metadata={"pooled_runs": ["alpha", "beta"], "pool_depth": 3},
    )
    intervals = rescore_dataset(world, world.label_sets.get(name="noisy")).result.intervals
    client.force_login(person(RESEARCHER))
    html = client.get("/datasets/rep/leaderboard/?labels=noisy").content.decode()
    shown = 0
    for run, scores in intervals.items():
        row = html[html.index(f'<tr class="run-row" data-run="{run}"') :].split("</tr>")[0]
        for metric, interval in scores.items():
            text = f'<span class="labels-interval">[{points(interval.low)}–{points(interval.high)}]'
            assert (text in row) == bool(interval.parts), (run, metric)
            shown += bool(interval.parts)
    assert shown and 'id="leaderboard-intervals"' in html and "label noise" in html
    base = "/datasets/rep/leaderboard/export"
    rows = list(
        csv.DictReader(io.StringIO(client.get(f"{base}/csv/?labels=noisy").content.decode()))
    )
    for row in rows:
        c1 = intervals[row["run"]]["C@1"]
        assert float(row["corrected C@1 labels low"]) == pytest.approx(c1.low)
        assert float(row["corrected C@1 labels high"]) == pytest.approx(c1.high)
    data = json.loads(client.get(f"{base}/json/?labels=noisy").content)
    for row in data["rows"]:
        assert row["intervals"]["AP"] == {"metric": "AP", **intervals[row["run"]]["AP"].as_dict()}
    exact = client.get("/datasets/rep/leaderboard/?labels=pooled").content.decode()
    assert 'class="labels-interval"' not in exact
    legend = exact[exact.index('id="leaderboard-intervals"') :].split("</p>")[0]
    assert "exact" in legend

"""The circularity warning: a run whose model is of the family of a machine assessor that fed
the label set is flagged, in JSON, CSV, text and on the page; older sets flag nothing."""

import csv
import io
import json
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from config.roles import RESEARCHER
from retrieval.label_sets.service import load_judged, store_label_set
from retrieval.models import RetrievalModel
from retrieval.scoring import leaderboard
from retrieval.scoring.circularity import recorded_families, shared_families
from retrieval.scoring.leaderboard_formats import render
from retrieval.scoring.leaderboard_service import build_leaderboard, with_circularity
from tests.factories import random_run
from tests.retrieval.scoring.test_leaderboard_page import leaderboard_world
from tests.retrieval.scoring.test_report import person

WARNING = "judged with help of a machine assessor of the same family: mme"


@pytest.fixture
def world(db):
    """alpha (built-in encoder mme), beta (minilm) and gamma (an uploaded model named
    "gamma"), with "pooled" (no assessor families recorded) and "machine" (the same labels,
    fed by an MME assessor)."""
    dataset = leaderboard_world("circ")
    RetrievalModel.objects.filter(dataset=dataset, name="alpha").update(
        source="encoder", encoder="mme"
    )
    RetrievalModel.objects.filter(dataset=dataset, name="beta").update(
        source="encoder", encoder="minilm"
    )
    pooled = dataset.label_sets.get(name="pooled")
    store_label_set(
        dataset,
        "machine",
        load_judged(pooled),
        source="campaign",
        metadata={**pooled.metadata, "assessor_families": ["mme"]},
    )
    return dataset


def flagged(board):
    return {row.run: row.circular_families for row in board.rows if row.circular}


def test_a_family_matches_the_encoder_or_an_uploaded_models_name_prefix():
    assert shared_families(["MME", "clip"], "mme", "anything") == ("mme",)
    assert shared_families(["mme"], "jpose", "mme-like name") == ()  # the encoder decides
    assert shared_families(["clip"], "", "CLIP-ViT-L/14 finetuned") == ("clip",)
    assert shared_families(["clip"], "", "openclip") == ()
    assert shared_families(["", " "], "", "anything") == ()  # no family names nothing
    assert recorded_families({"assessor_families": ["Qwen", "clip", "qwen"]}) == ["clip", "qwen"]
    assert recorded_families({}) == [] and recorded_families(None) == []
    assert recorded_families({"assessor_families": "mme"}) == []


def test_the_mme_run_is_flagged_and_no_other(world):
    board = build_leaderboard(world, world.label_sets.get(name="machine"), resamples=50)
    assert flagged(board) == {"alpha": ("mme",)}
    assert board.assessor_families == ("mme",)
    rows = {row["run"]: row for row in board.to_json()["rows"]}
    assert {run: row["circular"] for run, row in rows.items()} == {
        "alpha": True,
        "beta": False,
        "gamma": False,
    }
    assert rows["alpha"]["circular_families"] == ["mme"]
    table = list(csv.DictReader(io.StringIO(render(board, "csv"))))
    assert {row["run"]: row["circular families"] for row in table} == {
        "alpha": "mme",
        "beta": "",
        "gamma": "",
    }
    assert f"note on alpha: {WARNING}" in render(board, "table")
    assert "note on beta: judged" not in render(board, "table")


def test_an_uploaded_model_named_after_the_family_is_flagged(world):
    random_run(world, "mme-finetuned", 4)
    board = build_leaderboard(world, world.label_sets.get(name="machine"), resamples=50)
    assert flagged(board) == {"alpha": ("mme",), "mme-finetuned": ("mme",)}


def test_a_label_set_without_the_key_flags_nothing(world):
    pooled = world.label_sets.get(name="pooled")
    assert "assessor_families" not in pooled.metadata
    board = build_leaderboard(world, pooled, resamples=50)
    assert flagged(board) == {} and board.assessor_families == ()
    assert not any(row["circular"] for row in board.to_json()["rows"])


def test_page_and_json_export_flag_the_mme_run(world, client):
    client.force_login(person(RESEARCHER))
    html = client.get("/datasets/circ/leaderboard/?labels=machine").content.decode()
    assert re.findall(r'data-run="([^"]+)" data-circular="([^"]+)"', html) == [("alpha", "mme")]
    alpha = html[html.index('<tr class="run-row" data-run="alpha"') :].split("</tr>")[0]
    assert WARNING in alpha
    assert html.count(WARNING) == 1
    data = json.loads(client.get("/datasets/circ/leaderboard/export/json/?labels=machine").content)
    assert {row["run"] for row in data["rows"] if row["circular"]} == {"alpha"}
    assert data["assessor_families"] == ["mme"]
    older = client.get("/datasets/circ/leaderboard/?labels=pooled").content.decode()
    assert "data-circular" not in older and "machine assessor of the same family" not in older
    older_json = json.loads(
        client.get("/datasets/circ/leaderboard/export/json/?labels=pooled").content
    )
    assert not any(row["circular"] for row in older_json["rows"])


def test_flagging_takes_one_query_whatever_the_runs(world):
    machine = world.label_sets.get(name="machine")
    counts = []
    for extra in ((), ("delta", "epsilon", "zeta")):
        for seed, name in enumerate(extra):
            random_run(world, name, 10 + seed)
        board = build_leaderboard(world, machine, resamples=20, permutations=50)
        unmarked = leaderboard.mark_circular(board, [], {})
        assert flagged(unmarked) == {}
        with CaptureQueriesContext(connection) as queries:
            marked = with_circularity(unmarked, world, machine)
        counts.append(len(queries))
        assert flagged(marked) == {"alpha": ("mme",)}
    assert counts == [1, 1]

"""The machine assessors on the campaign's annotators page, read in a fixed number of queries."""

import json
import re

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotation.assessors import service as assessors
from retrieval.models import RetrievalModel


def write(tmp_path, name, rows):
    path = tmp_path / name
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), "utf-8")
    return path


def test_the_annotators_page_shows_each_assessor_in_a_fixed_number_of_queries(
    judged, people, tmp_path
):
    client = Client()
    client.force_login(people["researcher"])
    url = f"/campaigns/{judged.pk}/annotators/"
    assert 'id="assessors-table"' not in client.get(url).content.decode()
    pairs = [("c0", "v0"), ("c0", "v1"), ("c1", "v3")]

    def page(names):
        rows = [
            {"caption": c, "video": v, "assessor": name, "score": 0.9, "family": "clip"}
            for name in names
            for c, v in pairs
        ]
        assessors.import_assessments(judged, write(tmp_path, f"run{len(names)}.jsonl", rows))
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url)
        assert response.status_code == 200
        return response.content.decode(), len(queries)

    one, one_count = page(["clip/L"])
    assert re.findall(r'data-assessor="([^"]+)"', one) == ["clip/L"]
    row = one[one.index('data-assessor="clip/L"') :].split("</tr>")[0]
    assert '<span class="when">from run1.jsonl</span>' in row
    # Judged 3; compared 3 (two relevant, one irrelevant, all called relevant).
    assert '<td class="num" data-label="Judged">3</td>' in row
    assert '<td class="num" data-label="Sensitivity">100.0%</td>' in row
    assert '<td class="num" data-label="Specificity">0.0%</td>' in row
    assert '<td data-label="Runs of its family" class="same-family">—</td>' in row
    three, three_count = page(["a<b>", "b\u00e9", "z/y"])
    assert re.findall(r'data-assessor="([^"]+)"', three) == [
        "a&lt;b&gt;",
        "b\u00e9",
        "clip/L",
        "z/y",
    ]
    assert three_count == one_count
    # The campaign's run is of the clip family: every clip assessor's row names it.
    run = judged.campaign_runs.get().run
    RetrievalModel.objects.filter(pk=run.model_id).update(encoder="clip")
    flagged, _ = page(["e"])
    for name in ("clip/L", "z/y"):
        row = flagged[flagged.index(f'data-assessor="{name}"') :].split("</tr>")[0]
        assert f">{run.name}</span></td>" in row
        assert "judged with help of a machine assessor of the same family: clip" in row

"""A run's queries are read in batches, so a run of 100,000 queries stays under PostgreSQL's
65,535 parameters a statement (firepool binds them on the server; see config.batches).
PostgreSQL only: SQLite has no such limit."""

import numpy as np
import pytest
from django.db import connection

from retrieval.models import Caption, Dataset, Video
from retrieval.scoring import rescoring_service as rescoring
from retrieval.scoring.evaluation import original_hits
from retrieval.search.runs import RankedLists

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="PostgreSQL's limit of 65,535 parameters a statement (`make test` starts one)",
)

QUERIES = 100_000


def analyse(*models) -> None:
    """Fresh planner statistics for tables this test filled. The migrations leave every table
    empty with statistics saying so (0 rows), and the test's rows are never committed, so
    autovacuum never looks again: PostgreSQL then planned the 100,000-id read as a nested
    loop of sequential scans (over 20 minutes in one run, depending on which tests ran
    first). A deployment's autovacuum analyses a table once a large import commits."""
    tables = ", ".join(connection.ops.quote_name(model._meta.db_table) for model in models)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {tables}")


def test_original_hits_of_a_run_of_100000_queries(db):
    dataset = Dataset.objects.create(name="wide")
    videos = Video.objects.bulk_create(
        [Video(dataset=dataset, key=f"v{i}", split="test") for i in range(10)]
    )
    captions = Caption.objects.bulk_create(
        [
            Caption(dataset=dataset, key=f"c{i}", text="c", video=videos[i % 10], split="test")
            for i in range(QUERIES)
        ],
        batch_size=10_000,
    )
    analyse(Caption, Video)
    query_ids = np.array([c.pk for c in captions], dtype=np.int64)
    items = np.array([[videos[0].pk] for _ in range(QUERIES)], dtype=np.int64)
    lists = RankedLists(query_ids, items, np.zeros(items.shape))
    hits = original_hits(None, lists)
    assert hits.shape == (QUERIES, 1)
    assert hits[:, 0].sum() == QUERIES // 10  # the queries whose own video is v0


def test_the_ground_truth_of_100000_queries(db):
    """Their splits, then their stored truth (``ground_truth_relevance``), read by batch;
    the ids match no caption, so each is a query without stored truth."""
    dataset = Dataset.objects.create(name="truth", has_ground_truth=True)
    padding = np.arange(10**9, 10**9 + QUERIES, dtype=np.int64)
    true, notes = rescoring._true_qrels(dataset, padding)
    assert notes[0].startswith(f"{QUERIES} queries have no stored ground truth")

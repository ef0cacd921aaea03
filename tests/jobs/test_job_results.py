"""A succeeded job's page tells its outcome in words with links, per kind: a re-score's table
in points and a link to the leaderboard; never the result as a Python dict."""

import pytest
from django.test import Client

from jobs import runner
from jobs.models import Job
from retrieval.models import RetrievalModel
from tests.factories import pooled_world

IMMEDIATE = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}


def run_now(kind: str, data: dict, user) -> Job:
    from django.test import TestCase

    with TestCase.captureOnCommitCallbacks(execute=True):
        job = runner.submit(kind, data, user)
    job.refresh_from_db()
    return job


def result_of(client: Client, job: Job) -> str:
    answer = client.get(f"/jobs/{job.pk}/")
    assert answer.status_code == 200
    page = answer.content.decode()
    assert 'id="job-result"' in page
    result = page[page.index('id="job-result"') :]
    assert "{&#x27;" not in result and "{'" not in result and "pprint" not in result
    return result


def test_a_rescore_shows_its_table_in_points_and_links_the_leaderboard(admin, settings):
    settings.TASKS = IMMEDIATE
    pooled_world("pw")
    job = run_now("rescore", {"dataset": "pw", "labels": "pooled"}, admin.user)
    assert job.status == Job.Status.SUCCEEDED, job.error
    page = result_of(admin, job)
    assert 'href="/datasets/pw/leaderboard/?labels=pooled"' in page
    assert 'id="job-scores"' in page and "C@10 (points)" in page
    corrected = job.result["runs"]["alpha"]["C@10"]
    original = job.result["original"]["alpha"]["C@10"]
    assert f"{100 * corrected:.1f} ({100 * original:.1f} + " in page
    assert "<td>alpha</td>" in page and "<td>beta</td>" in page


def test_a_scored_run_links_the_leaderboard_with_its_labels(admin, settings):
    settings.TASKS = IMMEDIATE
    pooled_world("pw")
    job = run_now("score_run", {"dataset": "pw", "run": "alpha", "labels": "pooled"}, admin.user)
    assert job.status == Job.Status.SUCCEEDED, job.error
    page = result_of(admin, job)
    assert "Scored the run <strong>alpha</strong>" in page
    assert 'href="/datasets/pw/leaderboard/?labels=pooled"' in page


SYNTHETIC = {
    "embed": ({"dataset": "pw", "model": "m"}, {"captions": 4, "videos": 5, "dim": 8}),
    "train": (
        {"dataset": "pw", "model": "m"},
        {"epochs": 2, "seconds": 1.5, "device": "cpu", "losses": [0.9, 0.51234]},
    ),
    "predict": ({"dataset": "pw", "model": "m"}, {"run": "m", "queries": 6, "depth": 20}),
    "build_model": (
        {"dataset": "pw", "model": "m"},
        {"page": "/datasets/pw/models/m/", "model": "m", "run": "m", "queries": 6, "steps": 4},
    ),
    "proxies": (
        {"dataset": "pw", "proxy": "all"},
        {
            "dataset": "pw",
            "proxies": [{"proxy": "bow", "split": "test", "videos": 3, "texts": 4, "mean": 0.25}],
        },
    ),
    "import_dataset": (
        {"name": "pw", "format": "csv"},
        {
            "page": "/datasets/pw/",
            "dataset": "pw",
            "format": "csv",
            "file": "c.csv",
            "dataset_created": True,
            "videos_created": 3,
            "videos_reused": 0,
            "captions": 9,
            "queries": 6,
            "splits": {"test": 9},
            "seconds": 0.5,
        },
    ),
    "pool": (
        {"dataset": "pw", "runs": "alpha,beta", "name": "camp"},
        {"campaign": "camp", "campaign_id": 7, "page": "/campaigns/7/", "pairs": 12},
    ),
    "export": (
        {"campaign": "camp", "format": "jsonl"},
        {
            "output": "/nowhere",
            "filename": "camp.jsonl",
            "campaign": "camp",
            "format": "jsonl",
            "characters": 120,
        },
    ),
    "unknown-kind": ({}, {"answer": 42, "nested": {"a": [1, 2]}, "flag": True}),
}
WORDS = {
    "embed": ["Embedded 4 captions and 5 videos", 'href="/datasets/pw/models/m/"'],
    "train": ["Trained for 2 epochs", "last loss 0.5123", 'href="/datasets/pw/models/m/"'],
    "predict": ["making the run <strong>m</strong>", 'href="/datasets/pw/leaderboard/"'],
    "build_model": ["Built the run <strong>m</strong> (6 queries)", 'id="result-model"'],
    "proxies": ["1 semantic-proxy relevance matrix", "bow", 'href="/reports/pw/"'],
    "import_dataset": ["Imported 9 captions from c.csv", "new dataset", "test (9)"],
    "pool": ['href="/campaigns/7/"', "12 pairs to judge"],
    "export": ["jsonl export of the campaign <strong>camp</strong>", "120 characters"],
    "unknown-kind": ["Answer", "42", "a 1, 2", "yes"],
}


@pytest.mark.parametrize("kind", list(SYNTHETIC))
def test_every_kind_tells_its_outcome_in_words(admin, kind):
    arguments, result = SYNTHETIC[kind]
    job = Job.objects.create(
        kind=kind, arguments=arguments, result=result, status=Job.Status.SUCCEEDED
    )
    page = result_of(admin, job)
    for words in WORDS[kind]:
        assert words in page, (words, page)


@pytest.mark.parametrize("kind", [k for k in SYNTHETIC if k != "unknown-kind"])
def test_results_with_missing_or_odd_fields_still_render(admin, kind):
    for result in ({}, {"runs": "x", "scores": [1], "proxies": "no", "losses": "x"}):
        job = Job.objects.create(
            kind=kind, arguments={"dataset": "a/b"}, result=result, status=Job.Status.SUCCEEDED
        )
        assert admin.get(f"/jobs/{job.pk}/").status_code == 200


def test_no_model_row_is_needed_to_link_a_model(admin):
    assert not RetrievalModel.objects.exists()
    job = Job.objects.create(
        kind="predict",
        arguments={"dataset": "x", "model": "y"},
        result={"run": "y"},
        status=Job.Status.SUCCEEDED,
    )
    assert 'href="/datasets/x/models/y/"' in result_of(admin, job)


@pytest.mark.django_db
def test_a_succeeded_job_shows_all_of_its_work_done():
    """The bar of a job that succeeded is full even when its last step counted less."""
    job = Job.objects.create(
        kind="rescore", arguments={}, status=Job.Status.SUCCEEDED, done=1, total=5
    )
    assert job.percent == 100.0
    job.status = Job.Status.RUNNING
    assert job.percent == 20.0


def test_a_score_tables_cells_carry_their_intervals_from_the_labels():
    from retrieval import job_results

    scores = {"C@1": 0.5, "C@5": 0.75, "C@10": 1.0, "AP": 0.4, "nDCG@10": 0.6}
    intervals = {
        "C@1": {"value": 0.5, "low": 0.25, "high": 0.75, "parts": ["label noise"]},
        "C@5": {"value": 0.75, "low": 0.75, "high": 0.75, "parts": []},  # exact: no bracket
    }
    result = {"runs": {"mine": scores}, "intervals": {"mine": intervals}}
    context = job_results.rescore({"dataset": "pw"}, result)
    ((run, cells),) = context["rows"]
    assert run == "mine" and cells[:2] == ["50.0 [25.0–75.0]", "75.0"]
    assert "label noise" in context["intervals_legend"]
    single = job_results.score_run(
        {"dataset": "pw"}, {"run": "mine", "scores": scores, "intervals": intervals}
    )
    assert single["rows"][0][1][0] == "50.0 [25.0–75.0]"
    older = job_results.rescore({"dataset": "pw"}, {"runs": {"mine": scores}})
    assert older["intervals_legend"] == "" and older["rows"][0][1][0] == "50.0"
    garbled = {"runs": {"mine": scores}, "intervals": {"mine": {"C@1": {"value": "x"}}}}
    assert job_results.rescore({}, garbled)["rows"][0][1][0] == "50.0"

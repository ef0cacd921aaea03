"""Figures computed once and served from storage (:mod:`jobs.figures`): a stored figure equals
a fresh computation, is computed again exactly when its inputs change, and pages say when it
was computed."""

import pytest

from config.roles import RESEARCHER
from jobs import figures
from jobs.models import StoredFigure
from retrieval.label_sets.judged import Judged
from retrieval.label_sets.service import load_judged, store_label_set
from retrieval.scoring.leaderboard_service import build_leaderboard, stored_leaderboard
from tests.factories import random_run
from tests.retrieval.scoring.test_leaderboard_page import leaderboard_world
from tests.retrieval.scoring.test_report import person


@pytest.mark.django_db
def test_exact_computes_once_per_inputs_and_stored_says_whether_current():
    calls = []

    def compute(value):
        def run():
            calls.append(value)
            return {"value": value}

        return run

    first = figures.exact("k", "s", figures.fingerprint(1), compute(1))
    again = figures.exact("k", "s", figures.fingerprint(1), compute(99))
    assert first.value == again.value == {"value": 1} and calls == [1] and again.current
    assert figures.stored("k", "s", figures.fingerprint(2)).current is False  # the last one
    changed = figures.exact("k", "s", figures.fingerprint(2), compute(2))
    assert changed.value == {"value": 2} and calls == [1, 2]
    assert StoredFigure.objects.filter(kind="k", subject="s").count() == 1  # replaced
    assert figures.stored("k", "other", figures.fingerprint(2)) is None
    StoredFigure.objects.filter(kind="k").update(payload=b"not a pickle")
    assert figures.stored("k", "s", figures.fingerprint(2)) is None  # an older shape: missing


def _rows(board):
    return [
        (row.run, {m: (c.value, c.low, c.high) for m, c in row.corrected.items()})
        for row in board.rows
    ]


@pytest.mark.django_db
def test_stored_leaderboard_equals_a_fresh_one_and_follows_its_inputs(
    django_assert_max_num_queries,
):
    world = leaderboard_world("fig")
    pooled = world.label_sets.get(name="pooled")
    stored = stored_leaderboard(world, pooled, sort="original:C@1")
    fresh = build_leaderboard(world, pooled, sort="original:C@1")
    assert _rows(stored.value) == _rows(fresh) and stored.value.sort == "original:C@1"
    with django_assert_max_num_queries(12):  # read back: no runs or labels loaded
        again = stored_leaderboard(world, pooled)
    assert again.computed_at == stored.computed_at and _rows(again.value) == _rows(
        build_leaderboard(world, pooled)
    )
    # A new version of the label set is a new board; the old one's stays.
    judged = load_judged(pooled)
    keep = judged.relevance > 0
    fewer = Judged.build(judged.caption_ids[keep], judged.video_ids[keep], judged.relevance[keep])
    version = store_label_set(world, "pooled-v2", fewer, source="jsonl", parent=pooled)
    assert _rows(stored_leaderboard(world, version).value) == _rows(
        build_leaderboard(world, version)
    )
    assert stored_leaderboard(world, pooled).computed_at == stored.computed_at
    # A new run of the dataset changes every board of it.
    random_run(world, "delta", 5)
    redone = stored_leaderboard(world, pooled)
    assert redone.computed_at > stored.computed_at
    assert "delta" in {row.run for row in redone.value.rows}
    assert _rows(redone.value) == _rows(build_leaderboard(world, pooled))


@pytest.mark.django_db
def test_the_leaderboard_page_says_when_its_board_was_computed(client):
    world = leaderboard_world("figpage")
    client.force_login(person(RESEARCHER))
    page = client.get("/datasets/figpage/leaderboard/?labels=pooled").content.decode()
    assert "Computed " in page and "computed again only when that changes" in page
    computed = StoredFigure.objects.get(kind="leaderboard").computed_at
    assert computed.strftime("%Y-%m-%d %H:%M") in page
    assert world.label_sets.filter(name="pooled").exists()


@pytest.mark.django_db
def test_the_judging_orders_comparison_is_stored_and_follows_the_runs(client):
    from annotation.simulation.replay_service import compare_orders, stored_comparison
    from retrieval.datasets.demo.service import create_demo_dataset

    world = create_demo_dataset(name="figorders", n_videos=24, seed=6, workers=1)
    random_run(world, "a", seed=1)
    stored = stored_comparison(world)
    assert stored.value == compare_orders(world)
    assert stored_comparison(world).computed_at == stored.computed_at  # read back
    client.force_login(person(RESEARCHER))
    page = client.get("/reports/figorders/judging-orders/")
    assert page.context["comparison"] == stored.value
    assert "computed again only when that changes" in page.content.decode()
    random_run(world, "b", seed=2)
    redone = stored_comparison(world)
    assert redone.computed_at > stored.computed_at and redone.value == compare_orders(world)
    assert redone.value != stored.value


@pytest.mark.django_db
def test_the_report_is_stored_per_metric_and_its_page_and_data_say_when(client):
    from retrieval.scoring.reports import build_report, stored_report

    world = leaderboard_world("figreport")
    pooled = world.label_sets.get(name="pooled")
    stored = stored_report(world, pooled, metric="C@5")
    assert stored.value.to_json() == build_report(world, pooled, metric="C@5").to_json()
    assert stored_report(world, pooled, metric="C@5").computed_at == stored.computed_at
    other = stored_report(world, pooled, metric="C@1")
    assert other.value.metric == "C@1" and other.computed_at > stored.computed_at
    client.force_login(person(RESEARCHER))
    page = client.get("/reports/figreport/?labels=pooled&metric=C@5").content.decode()
    assert "computed again only when that changes" in page
    data = client.get("/reports/figreport/data/?labels=pooled&metric=C@5").json()
    assert data["computed_at"] == stored.computed_at.isoformat()


@pytest.mark.django_db
def test_the_proxy_table_is_stored_until_a_proxy_is_cached(settings):
    from retrieval.proxies.service import proxy_table, stored_proxy_table

    world = leaderboard_world("figproxies")
    stored = stored_proxy_table(world)
    assert repr(stored.value) == repr(proxy_table(world, cache_only=True))
    assert stored_proxy_table(world).computed_at == stored.computed_at
    cache = settings.FIREPOOL_PROXY_CACHE_DIR
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "another-proxy.npz").write_bytes(b"cached since")
    assert stored_proxy_table(world).computed_at > stored.computed_at


@pytest.mark.django_db
def test_a_new_label_set_queues_the_job_that_computes_its_figures(
    settings, monkeypatch, django_capture_on_commit_callbacks
):
    from jobs import runner
    from jobs.registry import get_kind
    from jobs.runner import check_arguments
    from retrieval.label_sets import figures as stored_figures

    world = leaderboard_world("figwarm")
    pooled = world.label_sets.get(name="pooled")
    settings.FIREPOOL_WARM_FIGURES = True
    queued = []
    monkeypatch.setattr(runner, "submit", lambda kind, data: queued.append((kind, data)))
    with django_capture_on_commit_callbacks(execute=True):
        store_label_set(world, "warm", load_judged(pooled), source="jsonl")
    assert queued == [(stored_figures.JOB_KIND, {"dataset": "figwarm", "labels": "warm"})]
    kind = get_kind(stored_figures.JOB_KIND)

    class Reporter:
        def step(self, *args, **kwargs):
            pass

    result = kind.run(Reporter(), **check_arguments(kind, queued[0][1]))
    assert set(result["seconds"]) | set(result["not computed"]) == set(stored_figures.WARMERS)
    assert "judging orders" in stored_figures.WARMERS  # the annotation app's
    kinds = set(StoredFigure.objects.values_list("kind", flat=True))
    assert {"leaderboard", "report", "proxy-table"} <= kinds
    warm = world.label_sets.get(name="warm")
    computed = stored_leaderboard(world, warm).computed_at  # read, not computed again
    assert (
        StoredFigure.objects.get(kind="leaderboard", subject__endswith=f" {warm.pk}").computed_at
        == computed
    )


@pytest.mark.django_db
def test_resolving_again_makes_a_new_board():
    """A re-resolve replaces the campaign's label set (a new row): its board is computed
    again from the new labels, equal to a fresh one."""
    from annotation.campaign_read.resolution import resolve_campaign
    from tests.factories import make_campaign

    campaign = make_campaign(n_queries=3, depth=2)
    Pair = campaign.pairs.model
    first = resolve_campaign(campaign)
    before = stored_leaderboard(campaign.dataset, first)
    Pair.objects.filter(pk=campaign.pairs.order_by("pk").first().pk).update(
        adjudicated="relevant", status="relevant"
    )
    again = resolve_campaign(campaign)
    assert again.pk != first.pk
    after = stored_leaderboard(campaign.dataset, again)
    assert after.computed_at > before.computed_at
    assert _rows(after.value) == _rows(build_leaderboard(campaign.dataset, again))

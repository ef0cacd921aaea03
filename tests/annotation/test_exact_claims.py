"""A number that claims to be exact is exact, through the real path.

Small random campaigns are created and judged through the services (ranks as the database
stores them, int16), then every claim is checked against a brute-force re-scoring written
here in plain Python loops: the agreement page's "C@K settled" column, and the exact /
bounds / estimate kinds of the report page and of ``rescore --format json``.

A C@K is settled on a query when counting every unjudged pooled pair relevant and then
irrelevant gives the same value (C@K only grows with positives, so the two extremes cover
every labelling); AP is settled when every labelling of the query's unjudged pooled pairs
gives the same value (AP is not monotone: R grows with the positives too), found by trying
them all. A mean is settled when every query's value is.
"""

import itertools
import json
import random
import re
import uuid
from io import StringIO

import pytest
from django.core.management import call_command

from annotation.campaign_read import resolution
from annotation.campaigns.service import CampaignSpec, create_campaign
from annotation.judging import queue, submit
from annotation.models import Campaign, Pair
from annotation.ordering import samples, settle_width, settled
from retrieval.models import Caption
from retrieval.scoring.reports import build_report
from retrieval.search.runs_service import load_run
from tests.factories import query_dataset, random_run

KS = (1, 5, 10)
SEEDS = range(8)
ORDERS = ("depth", "metric-first", "rrf", "maxmean")
SHARES = (0.5, 0.3, 0.7, 0.0, 0.4, 1.0, 0.6, 0.2)  # of the pool judged, by seed


def _campaign(seed: int, annotator):
    """A random small campaign on a dataset of its own, each judging order in turn, part
    judged at random; with odd seeds an estimation sample is drawn and judged too."""
    rng = random.Random(seed)
    dataset, _, _ = query_dataset(f"exact-{seed}", n=rng.randint(5, 9))
    runs = [random_run(dataset, f"r{i}", seed=100 * seed + i) for i in range(rng.randint(1, 3))]
    spec = CampaignSpec.from_values(
        {
            "name": f"exact-{seed}",
            "depth": 1 + seed % 3,
            "second_label_rate": 0.0,
            "seed": seed,
            "judging_order": ORDERS[seed % len(ORDERS)],
        }
    )
    campaign = create_campaign(dataset, runs, spec)
    _judge(campaign, annotator, round(SHARES[seed] * campaign.pairs.count()), rng)
    if seed % 2 and campaign.pairs.filter(status=Pair.Status.PENDING, label_count=0).exists():
        drawn = samples.draw_sample(campaign, rng.randint(1, 4), seed=seed)
        _judge(Campaign.objects.get(pk=campaign.pk), annotator, drawn.pairs, rng)
    return Campaign.objects.select_related("dataset").get(pk=campaign.pk), runs


def _judge(campaign: Campaign, annotator, count: int, rng: random.Random) -> None:
    for _ in range(count):
        current = queue.assign(campaign, annotator).current
        if current is None:
            return
        label = "relevant" if rng.random() < 0.4 else "irrelevant"
        submit.submit(annotator, current.pair.pk, label, uuid.uuid4())


class World:
    """What the database holds, read row by row: each query's own video, the campaign's pairs
    by (caption, video) with their status, and each run's ranked lists."""

    def __init__(self, campaign: Campaign, runs) -> None:
        self.own = dict(
            Caption.objects.filter(dataset=campaign.dataset).values_list("pk", "video_id")
        )
        self.status = {
            (c, v): s for c, v, s in campaign.pairs.values_list("caption_id", "video_id", "status")
        }
        self.lists = {}
        for run in runs:
            lists = load_run(run)
            self.lists[run.name] = {
                int(q): [int(v) for v in items if v >= 0]
                for q, items in zip(lists.query_ids, lists.item_ids, strict=True)
            }

    def pending(self, caption: int) -> list[tuple[int, int]]:
        return sorted(
            pair
            for pair, status in self.status.items()
            if pair[0] == caption and status == Pair.Status.PENDING
        )

    def relevant(self, caption: int, video: int, chosen: set) -> bool:
        """Whether the pair counts as relevant when the ``chosen`` unjudged pairs are."""
        if video == self.own[caption]:
            return True
        status = self.status.get((caption, video))
        if status == Pair.Status.PENDING:
            return (caption, video) in chosen
        return status == Pair.Status.RELEVANT  # not pooled: irrelevant

    def correct_at(self, run: str, caption: int, k: int, chosen: set) -> float:
        top = self.lists[run].get(caption, [])[:k]
        return float(any(self.relevant(caption, v, chosen) for v in top))

    def average_precision(self, run: str, caption: int, chosen: set) -> float:
        positives = 1  # the caption's own video
        for pair, status in self.status.items():
            if pair[0] == caption:
                positives += status == Pair.Status.RELEVANT or pair in chosen
        found, total = 0, 0.0
        for at, video in enumerate(self.lists[run].get(caption, []), start=1):
            if self.relevant(caption, video, chosen):
                found += 1
                total += found / at
        return total / positives

    def readings(self, run: str, caption: int, metric: str) -> list[float]:
        """The metric's value on the query under every labelling that matters: the two
        extremes for C@K, all of them for AP."""
        pending = self.pending(caption)
        if metric.startswith("C@"):
            k = int(metric[2:])
            return [self.correct_at(run, caption, k, chosen) for chosen in (set(), set(pending))]
        return [
            self.average_precision(run, caption, set(chosen))
            for n in range(len(pending) + 1)
            for chosen in itertools.combinations(pending, n)
        ]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _cells(page: str, table_id: str) -> list[str]:
    """The data cells of one table of a page, in order (the run name's cell left out)."""
    table = page.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0]
    return re.findall(r'<td class="num">(.*?)</td>', table)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_agreement_page_says_exact_only_when_no_labelling_changes_correct_at_k(
    people, client, seed
):
    campaign, runs = _campaign(seed, people["annotator"])
    world = World(campaign, runs)
    queries = sorted({c for c, _ in world.status})
    status = settled.judging_status(campaign)
    exact = []
    for run, row in zip(runs, status.runs, strict=True):
        assert row.run == run.name
        for k, share in row.shares:
            is_settled = [len(set(world.readings(run.name, q, f"C@{k}"))) == 1 for q in queries]
            assert share == pytest.approx(_mean(is_settled)), (run.name, k)
            exact.append(all(is_settled))
            assert (share >= 1.0) == exact[-1], (run.name, k)

    client.force_login(people["researcher"])
    page = client.get(f"/campaigns/{campaign.pk}/agreement/").content.decode()
    cells = _cells(page, "exact-metrics")
    per_run = len(status.ks) + 1  # each C@K, then AP and nDCG
    correct_at = [cell for i, cell in enumerate(cells) if i % per_run < len(status.ks)]
    assert ["<strong>exact</strong>" in cell for cell in correct_at] == exact
    whole = cells[len(status.ks) :: per_run]
    assert len(whole) == len(runs)
    for run, cell in zip(runs, whole, strict=True):
        said_exact = "<strong>exact</strong>" in cell
        assert said_exact == (status.decided_share == 1.0), cell
        if said_exact:  # then no labelling changes any query's AP
            assert all(len(set(world.readings(run.name, q, "AP"))) == 1 for q in queries)

    # AP's bounds on the campaign page: the pooled queries with nothing pending are decided,
    # and the mean AP over every listed query (the report's) moves, over every labelling of
    # the pending pairs, within the spread they leave.
    assert status.decided_share == pytest.approx(_mean([not world.pending(q) for q in queries]))
    listed = sorted({q for lists in world.lists.values() for q in lists})
    spread = settle_width.whole_query_spread(status.decided_share)
    for run in runs:
        readings = [world.readings(run.name, q, "AP") for q in listed]
        moved = _mean([max(values) - min(values) for values in readings])
        assert moved / 2 * 100 <= spread.half_width + 1e-9, run.name
    assert (spread.kind == settle_width.EXACT) == (status.decided_share == 1.0)


def _kinds_from_everywhere(campaign: Campaign, label_set) -> list[dict]:
    """Run -> metric -> {kind, value, low, high} from the report page's service and from
    ``rescore --format json`` under the campaign's resolved label set."""
    report = build_report(campaign.dataset, label_set, resamples=10)
    from_report = {
        row.run: {
            s.metric: {"kind": s.kind, "value": s.value, "low": s.low, "high": s.high}
            for s in row.scores
        }
        for row in report.settled
    }
    out = StringIO()
    call_command(
        "rescore",
        "--dataset",
        campaign.dataset.name,
        "--labels",
        label_set.name,
        "--format",
        "json",
        stdout=out,
    )
    return [from_report, json.loads(out.getvalue()).get("kinds", {})]


@pytest.mark.parametrize("seed", SEEDS)
def test_report_and_rescore_kinds_say_exact_only_when_no_labelling_changes_the_score(
    people, client, seed
):
    campaign, runs = _campaign(seed, people["annotator"])
    world = World(campaign, runs)
    queries = sorted({q for lists in world.lists.values() for q in lists})
    metrics = (*(f"C@{k}" for k in KS), "AP")
    exact = []
    for run in runs:
        for metric in metrics:
            readings = [world.readings(run.name, q, metric) for q in queries]
            exact.append(all(len(set(values)) == 1 for values in readings))
    label_set = resolution.resolve_campaign(campaign)
    for kinds in _kinds_from_everywhere(campaign, label_set):
        if not kinds:  # every pooled pair judged: no score is qualified
            assert not any(world.pending(q) for q in queries)
            continue
        assert list(kinds) == [run.name for run in runs]
        at = iter(exact)
        for run in runs:
            assert list(kinds[run.name]) == list(metrics)
            for metric in metrics:
                score = kinds[run.name][metric]
                readings = [world.readings(run.name, q, metric) for q in queries]
                assert (score["kind"] == "exact") == next(at), (run.name, metric, score)
                # The unjudged pooled pairs counted irrelevant, then relevant.
                low = _mean([values[0] for values in readings])
                high = _mean([values[-1] for values in readings])
                if score["kind"] == "exact":
                    assert score["value"] == pytest.approx(low)
                elif score["kind"] == "bounds":
                    bounds = (score["low"], score["high"])
                    assert bounds == pytest.approx((min(low, high), max(low, high)))
                else:
                    assert score["kind"] == "estimate"
                    assert 0.0 <= score["low"] <= score["value"] <= score["high"] <= 1.0
                    if metric != "AP":  # C@K's extremes bound every labelling: AP's do not
                        assert low - 1e-9 <= score["value"] <= high + 1e-9

    client.force_login(people["researcher"])
    page = client.get(
        f"/reports/{campaign.dataset.name}/", {"labels": label_set.name}
    ).content.decode()
    if any(world.pending(q) for q in queries):
        cells = _cells(page, "settled-scores")
        assert [cell == "exact" for cell in cells] == exact
        # One interval per score, Table 1's bracket: none repeated here.
        assert not any("–" in cell or "[" in cell for cell in cells), cells
        assert "(see kinds)" not in page
        legend = page[page.index('id="table1-intervals"') :].split("</p>")[0]
        if "unjudged pairs" in legend:
            assert "the bounds they allow" in legend and "not a 95% interval" in legend

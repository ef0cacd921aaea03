"""Label-set arrays: building, merging, storing, and hits against a run."""

import io
import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from retrieval.label_sets import judged
from retrieval.label_sets.judged import Judged
from retrieval.label_sets.service import load_judged, store_label_set
from retrieval.models import Caption, Dataset, RetrievalModel, Video
from retrieval.scoring import plots
from retrieval.scoring.rescoring_service import rescore_dataset
from retrieval.search.runs import RankedLists
from retrieval.search.runs_service import store_run


def test_build_sorts_and_drops_exact_repeats():
    pairs = Judged.build([3, 1, 3, 1], [5, 9, 2, 9], [1, 0, -1, 0], votes=[2, 1, 3, 1])
    assert pairs.caption_ids.tolist() == [1, 3, 3]
    assert pairs.video_ids.tolist() == [9, 2, 5]
    assert pairs.relevance.tolist() == [0, -1, 1]
    assert pairs.votes.tolist() == [1, 3, 2]
    assert pairs.counts() == {"relevant": 1, "irrelevant": 1, "disagreement": 1}


def test_build_rejects_conflicts_and_bad_values():
    with pytest.raises(ValueError, match="two different relevance"):
        Judged.build([1, 1], [2, 2], [1, 0])
    with pytest.raises(ValueError, match="relevance must be"):
        Judged.build([1], [2], [2])
    with pytest.raises(ValueError, match="same length"):
        Judged.build([1, 2], [2], [1, 0])


def test_build_caps_votes_at_what_int16_holds_instead_of_wrapping():
    """Votes are stored as int16: a count past 32,767 saturates there (as every importer
    caps it), never wraps to a negative count."""
    pairs = Judged.build([1, 2], [3, 4], [1, 0], votes=[40_000, 70_000])
    assert pairs.votes.tolist() == [32_767, 32_767]


def test_round_trip_bytes():
    pairs = Judged.build([1, 2], [3, 4], [1, -1], votes=[3, 2], adjudicated=[True, False])
    back = Judged.from_bytes(pairs.to_bytes())
    for name in ("caption_ids", "video_ids", "relevance", "votes", "adjudicated"):
        assert getattr(back, name).tolist() == getattr(pairs, name).tolist()


def test_merge_later_set_wins():
    first = Judged.build([1, 1, 2], [1, 2, 3], [1, 0, 1])
    second = Judged.build([1, 4], [2, 4], [1, -1])
    merged = judged.merge([first, second])
    table = {
        (c, v): r
        for c, v, r in zip(merged.caption_ids, merged.video_ids, merged.relevance, strict=True)
    }
    assert table == {(1, 1): 1, (1, 2): 1, (2, 3): 1, (4, 4): -1}
    assert judged.merge([second, first]).relevance[1] == 0  # (1, 2) from the later set


def test_confidence_sorts_stores_and_merges():
    pairs = Judged.build([3, 1], [5, 9], [1, 0], confidence=[0.9, 0.2])
    assert pairs.confidence.tolist() == [0.2, 0.9]  # follows the (caption, video) order
    back = Judged.from_bytes(pairs.to_bytes())
    assert back.confidence.tolist() == [0.2, 0.9]
    assert Judged.from_bytes(Judged.build([1], [2], [1]).to_bytes()).confidence is None
    looked = pairs.confidence_of(np.array([3, 1, 7]), np.array([5, 9, 5]))
    assert looked[:2].tolist() == [0.9, 0.2] and np.isnan(looked[2])
    # A set without confidences merged with one that has them: unknown (NaN) where absent.
    merged = judged.merge([Judged.build([1, 4], [9, 4], [0, 1]), pairs])
    keys = zip(merged.caption_ids.tolist(), merged.video_ids.tolist(), strict=True)
    table = dict(zip(keys, merged.confidence.tolist(), strict=True))
    assert table[(1, 9)] == 0.2 and table[(3, 5)] == 0.9 and np.isnan(table[(4, 4)])
    assert judged.merge([Judged.build([1], [2], [1])]).confidence is None
    with pytest.raises(ValueError, match="between 0 and 1"):
        Judged.build([1], [2], [1], confidence=[1.5])


@pytest.fixture
def dataset(db):
    dataset = Dataset.objects.create(name="j")
    videos = Video.objects.bulk_create([Video(dataset=dataset, key=f"v{i}") for i in range(6)])
    captions = Caption.objects.bulk_create(
        [
            Caption(dataset=dataset, key=f"c{i}", text=f"t{i}", video=videos[i], is_query=True)
            for i in range(3)
        ]
    )
    model = RetrievalModel.objects.create(dataset=dataset, name="m", source="run")
    items = np.array([[videos[(q + r + 1) % 6].pk for r in range(4)] for q in range(3)])
    items[2, 3] = -1  # a shorter list
    scores = -np.arange(4, dtype=float)[None].repeat(3, 0)
    scores[2, 3] = np.nan
    store_run(model, "m", RankedLists(np.array([c.pk for c in captions]), items, scores))
    return dataset


def test_corrected_hits_match_a_brute_force_lookup(dataset):
    run = dataset.runs.get()
    captions = list(Caption.objects.filter(dataset=dataset).order_by("pk"))
    videos = list(Video.objects.filter(dataset=dataset).order_by("pk"))
    rng = np.random.default_rng(0)
    rows = [(c.pk, v.pk, int(rng.choice([1, 0, -1]))) for c in captions for v in videos]
    rows = [row for row in rows if rng.random() < 0.6]
    label_set = store_label_set(
        dataset, "random", Judged.build(*zip(*rows, strict=True)), source="qrels"
    )
    scored = rescore_dataset(dataset, label_set)
    judgements = scored.result.blocks["corrected"][run.name].judgements
    hits, judged_mask = judgements.relevant, judgements.judged
    table = {(c, v): r for c, v, r in rows}
    own = {c.pk: c.video_id for c in captions}
    for q, caption in enumerate(scored.caption_ids.tolist()):
        for r, video in enumerate(scored.runs[run.name][q].tolist()):
            rel = table.get((caption, video))
            original = video == own[caption]
            assert hits[q, r] == (video >= 0 and (original or rel == 1))
            assert judged_mask[q, r] == (video >= 0 and (original or rel in (0, 1)))


def test_merge_labels_command(dataset):
    c = Caption.objects.get(key="c0")
    v = Video.objects.filter(dataset=dataset).order_by("pk")
    store_label_set(dataset, "a", Judged.build([c.pk], [v[1].pk], [0]), source="qrels")
    store_label_set(
        dataset, "b", Judged.build([c.pk, c.pk], [v[1].pk, v[2].pk], [1, 1]), source="qrels"
    )
    out = io.StringIO()
    call_command("merge_labels", dataset="j", sets="a,b", name="ab", format="json", stdout=out)
    assert json.loads(out.getvalue())["relevant"] == 2
    merged = load_judged(dataset.label_sets.get(name="ab"))
    assert merged.relevance.tolist() == [1, 1]
    with pytest.raises(CommandError, match="no label set named 'zz'"):
        call_command("merge_labels", dataset="j", sets="a,zz", name="x")
    with pytest.raises(CommandError, match="already has a label set named 'ab'"):
        call_command("merge_labels", dataset="j", sets="a", name="ab")


def test_bar_chart_is_escaped_svg_with_one_bar_per_value():
    svg = plots.bar_chart(
        ["<1>", "2"],
        [plots.Series("a&b", [3.0, None]), plots.Series("c", [1.0, 2.0])],
        title="T <x>",
    )
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert svg.count("<rect") == 3 + 2  # three bars and two legend swatches
    assert "<1>" not in svg and "&lt;1&gt;" in svg and "a&amp;b" in svg
    assert plots.nice_max(7.3) == 10 and plots.nice_max(0.23) == 0.5

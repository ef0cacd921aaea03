"""Semantic proxies (BoW, PoS, SYN), video sets, the proxy nDCG and the CLI (Wray et al.,
CVPR 2021, §4)."""

import io
import json
import math
from itertools import permutations

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from retrieval.datasets.demo.service import create_demo_dataset
from retrieval.models import RetrievalModel, Video
from retrieval.proxies.captions import CaptionTerms, parse_captions
from retrieval.proxies.ndcg import (
    average_precision_per_query,
    ndcg_per_query,
    semantic_ndcg,
    thresholded_map,
)
from retrieval.proxies.overlap import group_sets, incidence, iou_matrix
from retrieval.proxies.relevance import (
    caption_set_matrix,
    set_proxy_sets,
    text_items,
    video_meteor_matrix,
    video_set_matrix,
)
from retrieval.proxies.synsets import (
    ClassFileError,
    LeskSynsets,
    caption_synsets,
    read_class_file,
)
from retrieval.proxies.wordnet import is_installed, register_nltk_path
from retrieval.search.artifacts import StoredEmbeddings, save_embeddings
from tests.factories import random_run


def pairwise(proxy, texts, synsets=None):
    terms = parse_captions(texts)
    return caption_set_matrix(set_proxy_sets(proxy, terms, synsets)), terms


# --- hand-computed proxy values ---------------------------------------------------------


def test_bow_and_pos_by_hand():
    texts = ["a man slices a red onion", "a woman slices an onion"]
    bow, terms = pairwise("bow", texts)
    # {man, slice, red, onion} vs {woman, slice, onion}: 2 shared of 5.
    assert terms[0].words == {"man", "slice", "red", "onion"}
    assert bow[0, 1] == pytest.approx(2 / 5)
    pos, _ = pairwise("pos", texts)
    # verbs {slice} vs {slice} = 1; nouns {man, onion} vs {woman, onion} = 1/3.
    assert pos[0, 1] == pytest.approx(0.5 * 1 + 0.5 * (1 / 3))
    assert bow[0, 0] == pytest.approx(1.0)


def test_stop_words_keep_caption_verbs():
    (terms,) = parse_captions(["put the onion in the pan"])
    # spaCy lists "put" as a stop word; as a verb it stays (see captions.py).
    assert terms.words == {"put", "onion", "pan"}


def test_syn_with_class_files_relates_put_and_place(tmp_path):
    verbs = tmp_path / "verbs.csv"
    verbs.write_text(
        "id,key,instances\n0,put,\"['put', 'place', 'put-down']\"\n1,take,\"['take']\"\n"
    )
    nouns = tmp_path / "nouns.csv"
    nouns.write_text("id,key,instances\n0,onion,\"['onion']\"\n1,pan,\"['pan', 'pan:frying']\"\n")
    maps = {"verb": read_class_file(verbs), "noun": read_class_file(nouns)}
    texts = ["put the onion in the pan", "place the onion in the pan", "take the onion"]
    terms = parse_captions(texts)
    groups = caption_synsets(terms, class_maps=maps)
    syn = caption_set_matrix(set_proxy_sets("syn", terms, groups))
    pos = caption_set_matrix(set_proxy_sets("pos", terms))
    assert syn[0, 1] == pytest.approx(1.0)  # put ~ place, same nouns
    assert pos[0, 1] == pytest.approx(0.5)  # verbs differ, nouns equal
    # take vs put: verbs differ; nouns {onion} vs {onion, pan} = 1/2.
    assert syn[0, 2] == pytest.approx(0.25)
    assert maps["noun"].lookup("frying pan") == "1"


def test_dataset_classes_win():
    terms = parse_captions(["open the fridge", "close the drawer"])
    classes = [
        {"verb_classes": [3], "noun_classes": [12]},
        {"verb_classes": [3], "noun_classes": [8]},
    ]
    groups = caption_synsets(terms, dataset_classes=classes)
    syn = caption_set_matrix(set_proxy_sets("syn", terms, groups))
    assert syn[0, 1] == pytest.approx(0.5)


def test_class_file_errors_name_file_line_and_field(tmp_path):
    bad = tmp_path / "verbs.csv"
    bad.write_text("id,key,instances\n0,put,\"['put'\n")
    with pytest.raises(ClassFileError, match=r"verbs.csv, line 2, field instances"):
        read_class_file(bad)
    missing = tmp_path / "nouns.csv"
    missing.write_text("name,words\nx,y\n")
    with pytest.raises(ClassFileError, match=r"line 1: missing column\(s\) id, key"):
        read_class_file(missing)


@pytest.mark.skipif(not is_installed(), reason="WordNet is installed by `make install`")
def test_wordnet_lesk_picks_a_sense_in_context():
    register_nltk_path()
    from nltk.wsd import lesk as nltk_lesk

    lesk = LeskSynsets()
    for context in (["deposit", "money", "in", "the", "bank"], ["the", "river", "bank"]):
        # The cached lookup gives what NLTK's Lesk gives on the full context.
        assert lesk.sense("bank", "n", context) == nltk_lesk(context, "bank", "n").name()
    assert lesk.sense("qwzzx", "n", ["qwzzx"]) is None
    terms = parse_captions(["a man stirs the soup", "a man stirs the soup"])
    groups = caption_synsets(terms)
    assert groups["verb"][0] == groups["verb"][1] and groups["verb"][0]
    assert all(s.startswith("wn:") for s in groups["noun"][0])


def test_empty_union_is_zero_not_an_error():
    a, _ = incidence([set(), {"x"}])
    out = iou_matrix(a, a)
    assert out[0, 0] == 0.0 and out[1, 1] == 1.0 and out[0, 1] == 0.0


# --- the sparse computation against a pair loop -------------------------------------------


def random_sets(rng, n, vocabulary=30):
    return [
        frozenset(f"w{w}" for w in rng.choice(vocabulary, rng.integers(0, 7))) for _ in range(n)
    ]


def naive_iou(a, b):
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def test_sparse_iou_matches_pair_loop_and_is_symmetric():
    rng = np.random.default_rng(3)
    verbs, nouns = random_sets(rng, 120, 12), random_sets(rng, 120, 40)
    terms = [CaptionTerms((), v | n, v, n) for v, n in zip(verbs, nouns, strict=True)]
    for proxy in ("bow", "pos"):
        fast = caption_set_matrix(set_proxy_sets(proxy, terms))
        if proxy == "bow":
            slow = [[naive_iou(a.words, b.words) for b in terms] for a in terms]
        else:
            slow = [
                [
                    0.5 * naive_iou(a.verbs, b.verbs) + 0.5 * naive_iou(a.nouns, b.nouns)
                    for b in terms
                ]
                for a in terms
            ]
        np.testing.assert_allclose(fast, np.array(slow), atol=1e-6)
        np.testing.assert_array_equal(fast, fast.T)


def test_iou_blocks_give_the_same_matrix():
    rng = np.random.default_rng(4)
    a, vocab = incidence(random_sets(rng, 50))
    b, _ = incidence(random_sets(rng, 33), vocab)
    np.testing.assert_array_equal(iou_matrix(a, b, block=7), iou_matrix(a, b, block=4096))


# --- videos with several captions --------------------------------------------------------


def test_video_sets_keep_words_in_a_quarter_of_the_captions():
    sets = [{"man", "dog"}, {"man", "ball"}, {"man"}, {"man", "park"}, {"dog", "ball"}]
    sets += [{"cat"}, {"cat", "hat"}, {"cat"}, {"cat"}, {"cat"}, {"cat"}, {"cat"}, {"cat"}]
    captions, vocab = incidence(sets)
    video_of = np.array([0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1])
    grouped = group_sets(captions, video_of, 3)
    names = {i: w for w, i in vocab.items()}
    words = [{names[j] for j in grouped[v].indices} for v in range(3)]
    # Video 0 has 5 captions: a word needs 2 (>= 1.25); "park" (1 of 5) is dropped.
    assert words[0] == {"man", "dog", "ball"}
    # Video 1 has 8: "hat" is in 1 of 8 (12.5%), dropped; 2 of 8 would be kept.
    assert words[1] == {"cat"}
    assert words[2] == set()  # no captions


def test_video_relevance_is_one_for_own_captions_and_iou_otherwise():
    texts = ["a man slices an onion", "a man slices a tomato", "a dog runs", "a Dog  runs"]
    terms = parse_captions(texts)
    caption_video = np.array([0, 0, 1, 2])
    items = text_items(texts, caption_video, 3)
    matrix = video_set_matrix(set_proxy_sets("bow", terms), items)
    assert matrix.shape == (3, 4)
    assert matrix[0, 0] == matrix[0, 1] == 1.0 and matrix[1, 2] == 1.0
    # Video 0's set (both captions, 2 >= 0.5): {man, slice, onion, tomato} vs {dog, run}.
    assert matrix[0, 2] == 0.0
    assert matrix[1, 3] == pytest.approx(1.0)  # same words, other video
    deduped = text_items(texts, caption_video, 3, dedupe=True)
    assert deduped.n_texts == 3
    merged = video_set_matrix(set_proxy_sets("bow", terms), deduped)
    assert merged[1, 2] == 1.0 and merged[2, 2] == 1.0  # one text, relevant to both videos


def test_meteor_video_rows_use_mean_and_max():
    items = text_items(["a", "b", "c"], np.array([0, 0, 1]), 2)
    table = np.array([[0.2, 0.9, 0.4], [0.6, 0.1, 0.8], [0.3, 0.5, 0.7]])

    def scores(references, hypotheses):
        return table[np.ix_(references, hypotheses)]

    matrix = video_meteor_matrix(scores, items)
    # Video 0 (captions 0, 1) against text 2: mean 0.6, max 0.8 -> 0.7.
    assert matrix[0, 2] == pytest.approx(0.7)
    assert matrix[1, 0] == pytest.approx(0.3)  # one caption: its own score
    assert matrix[0, 0] == matrix[0, 1] == matrix[1, 2] == 1.0


# --- nDCG -------------------------------------------------------------------------------


def test_ndcg_by_hand():
    relevance = np.array([[1.0, 0.5, 0.0, 0.25]])
    similarity = np.array([[0.1, 0.9, 0.8, 0.3]])  # ranks: item1, item2, item3, item0
    # Cut at 3 relevant items: gains 0.5, 0, 0.25 at ranks 1..3.
    dcg = 0.5 / math.log2(2) + 0.0 / math.log2(3) + 0.25 / math.log2(4)
    idcg = 1.0 / math.log2(2) + 0.5 / math.log2(3) + 0.25 / math.log2(4)
    assert ndcg_per_query(similarity, relevance)[0] == pytest.approx(dcg / idcg)
    exp = lambda s: 2**s - 1  # noqa: E731
    dcg_e = exp(0.5) + exp(0.25) / 2
    idcg_e = exp(1.0) + exp(0.5) / math.log2(3) + exp(0.25) / 2
    assert ndcg_per_query(similarity, relevance, gain="exp")[0] == pytest.approx(dcg_e / idcg_e)


def test_perfect_ranking_is_one_and_random_far_below():
    rng = np.random.default_rng(0)
    relevance = np.where(rng.random((60, 400)) < 0.05, rng.random((60, 400)), 0.0)
    relevance[:, 0] = 1.0
    assert np.allclose(ndcg_per_query(relevance, relevance), 1.0)
    random = np.nanmean(ndcg_per_query(rng.random((60, 400)), relevance))
    assert random < 0.3


def test_equal_relevance_items_in_any_order_score_the_same():
    relevance = np.array([[0.5, 0.5, 0.5, 1.0, 0.0, 0.0]])
    scores = set()
    for order in permutations(range(3)):
        similarity = np.zeros((1, 6))
        similarity[0, 3] = 10.0
        for rank, item in enumerate(order):
            similarity[0, item] = 5.0 - rank
        scores.add(round(float(ndcg_per_query(similarity, relevance)[0]), 12))
    assert scores == {1.0}
    # Swapping the two irrelevant items below the cut changes nothing either.
    similarity = np.array([[4.0, 3.0, 2.0, 5.0, 0.5, 0.4]])
    swapped = np.array([[4.0, 3.0, 2.0, 5.0, 0.4, 0.5]])
    assert ndcg_per_query(similarity, relevance)[0] == ndcg_per_query(swapped, relevance)[0]


def test_unretrieved_items_earn_nothing_and_queries_without_relevance_are_skipped():
    relevance = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    similarity = np.array([[0.9, -np.inf, 0.1], [0.3, 0.2, 0.1]])
    result = ndcg_per_query(similarity, relevance)
    assert result[0] == pytest.approx(1.0 / (1.0 + 1.0 / math.log2(3)))
    assert math.isnan(result[1])
    ap = average_precision_per_query(similarity, relevance > 0)
    assert ap[0] == pytest.approx(0.5)


def test_directions_and_thresholded_map():
    relevance = np.array([[1.0, 0.2], [0.6, 1.0]])  # videos x texts
    similarity = np.array([[0.1, 0.9], [0.8, 0.2]])
    score = semantic_ndcg(similarity, relevance)
    v2t = ndcg_per_query(similarity, relevance).mean()
    t2v = ndcg_per_query(similarity.T, relevance.T).mean()
    assert score.v2t == pytest.approx(v2t) and score.t2v == pytest.approx(t2v)
    assert score.mean == pytest.approx((v2t + t2v) / 2)
    maps = thresholded_map(similarity, relevance, 0.5)
    # v2t: video 0 has text 0 relevant at rank 2 -> 0.5; video 1 has both -> 1.
    assert maps.v2t == pytest.approx(0.75)
    with pytest.raises(ValueError, match="threshold"):
        thresholded_map(similarity, relevance, 0.0)


# --- service and commands ----------------------------------------------------------------


@pytest.fixture
def small_world(db):
    dataset = create_demo_dataset(name="prox", n_videos=24, seed=7, workers=1)
    random_run(dataset, "lucky", 3)
    videos = list(Video.objects.filter(dataset=dataset).order_by("pk"))
    captions = list(dataset.captions.order_by("pk"))
    rng = np.random.default_rng(1)
    model = RetrievalModel.objects.create(dataset=dataset, name="emb", source="embeddings")
    save_embeddings(
        model,
        StoredEmbeddings(
            np.array([c.pk for c in captions]),
            rng.normal(size=(len(captions), 8)).astype(np.float32),
            np.array([v.pk for v in videos]),
            rng.normal(size=(len(videos), 8)).astype(np.float32),
        ),
    )
    return dataset


def run_json(*args):
    out = io.StringIO()
    call_command(*args, "--format", "json", stdout=out)
    return json.loads(out.getvalue())


def test_proxies_command_caches_by_content(small_world):
    first = run_json("proxies", "--dataset", "prox", "--proxy", "bow")["proxies"][0]
    second = run_json("proxies", "--dataset", "prox", "--proxy", "bow")["proxies"][0]
    assert not first["cached"] and second["cached"] and first["path"] == second["path"]
    deduped = run_json("proxies", "--dataset", "prox", "--proxy", "bow", "--dedupe-captions")
    assert deduped["proxies"][0]["path"] != first["path"]
    assert deduped["proxies"][0]["texts"] <= first["texts"]
    caption = small_world.captions.filter(split="test").first()
    caption.text = caption.text + " quickly"
    caption.save()
    third = run_json("proxies", "--dataset", "prox", "--proxy", "bow")["proxies"][0]
    assert not third["cached"] and third["path"] != first["path"]
    # Every video has at least its own captions at S >= 1.
    assert min(first["relevant_per_video"]) >= 1


def test_ndcg_command_scores_embeddings_and_runs(small_world):
    emb = run_json("ndcg", "--dataset", "prox", "--model", "emb", "--proxy", "pos")
    assert set(emb) >= {"proxy", "nDCG", "v2t", "t2v", "queries", "items"}
    assert emb["nDCG"] == pytest.approx((emb["v2t"] + emb["t2v"]) / 2)
    assert emb["queries"]["v2t"] == emb["items"]["videos"]
    assert 0 < emb["nDCG"] < 1
    run = run_json("ndcg", "--dataset", "prox", "--model", "lucky", "--proxy", "bow")
    assert run["v2t"] is None and run["nDCG"] == run["t2v"]
    assert "depth" in run["scored_over"]
    truth = run_json(
        "ndcg", "--dataset", "prox", "--model", "emb", "--proxy", "truth", "--threshold", "0.5"
    )
    assert truth["mAP"] is not None and 0 < truth["nDCG"] <= 1
    with pytest.raises(CommandError, match="class file"):
        call_command(
            "ndcg", "--dataset", "prox", "--model", "emb", "--proxy", "syn",
            "--verb-classes", "/nonexistent.csv",
        )  # fmt: skip


def test_proxy_table_reports_a_missing_split_instead_of_failing(small_world):
    from retrieval.proxies.service import proxy_table

    table = proxy_table(small_world, split="val", cache_only=True)
    assert "no 'val' videos" in table["error"] and table["models"] == []


def test_truth_ndcg_needs_no_proxy_matrix(small_world, settings):
    run_json("ndcg", "--dataset", "prox", "--model", "emb", "--proxy", "truth")
    assert not list(settings.FIREPOOL_PROXY_CACHE_DIR.glob("*.npz"))

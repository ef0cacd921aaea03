"""Bulk METEOR (retrieval.proxies.meteor) must equal NLTK's single_meteor_score on every pair."""

import numpy as np
import pytest
from nltk.translate.meteor_score import single_meteor_score

from retrieval.proxies import meteor
from retrieval.proxies import wordnet as project_wordnet

# Repeated words, inflections, WordNet synonyms (put/place/set, stir/mix, man/person, ...),
# synonyms Porter breaks (car/automobile, big/large), case variants, words WordNet lacks.
VOCABULARY = (
    "a a a the the the is is in on and man Man person someone put puts putting place placing "
    "placed set sets stir stirring stirred Stir mix mixing pan saucepan pot car automobile "
    "big large cut cutting cuts Cut chop chopped slice slicing onion onions one The PUT "
    "xyzzy qwerty blorp zzkt cooking cook cooks kid child"
).split()


def nltk_matrix(captions: list[list[str]]) -> np.ndarray:
    return np.array([[single_meteor_score(ref, hyp) for hyp in captions] for ref in captions])


@pytest.fixture(scope="module")
def random_captions() -> list[list[str]]:
    rng = np.random.default_rng(20240601)
    lengths = [0, 0, 1, 1, 15, 15, *rng.integers(0, 16, 42)]
    return [[str(w) for w in rng.choice(VOCABULARY, n)] for n in lengths]


@pytest.fixture(scope="module")
def random_corpus(random_captions) -> meteor.MeteorCorpus:
    assert project_wordnet.is_installed(), "run `make install` to install WordNet"
    return meteor.prepare(random_captions)


def pair_score(corpus: meteor.MeteorCorpus, reference: int, hypothesis: int) -> float:
    """METEOR of one pair of caption indices, through the bulk pairs function."""
    return float(meteor.meteor_pairs(corpus, np.array([reference]), np.array([hypothesis]))[0])


def synonyms(corpus: meteor.MeteorCorpus, stem: str) -> list[str]:
    """Corpus stems a hypothesis ``stem`` matches in the WordNet stage (itself left out)."""
    h = corpus.stems.index(stem)
    return [
        corpus.stems[r] for r in corpus.syn_indices[corpus.syn_indptr[h] : corpus.syn_indptr[h + 1]]
    ]


def test_every_ordered_pair_equals_nltk(random_captions, random_corpus):
    """48 x 48 = 2,304 ordered pairs (both directions), empty captions included."""
    got = meteor.meteor_matrix(random_corpus, workers=1)
    expected = nltk_matrix(random_captions)
    assert got.shape == expected.shape == (48, 48)
    assert got.dtype == np.float64
    assert np.abs(got - expected).max() <= 1e-12
    assert np.array_equal(got, expected)  # the same float operations: bit-identical
    assert not np.array_equal(got, got.T)  # METEOR is asymmetric
    assert (got > 0).mean() > 0.5 and (got[[0, 1]] == 0).all() and (got[:, [0, 1]] == 0).all()


def test_sub_matrix_pairs_and_single_scores(random_captions, random_corpus):
    full = meteor.meteor_matrix(random_corpus, workers=1)
    refs, hyps = np.array([5, 2, 40, 5]), np.array([7, 3, 0, 11, 47])
    sub = meteor.meteor_matrix(random_corpus, refs, hyps, workers=1, dtype=np.float32)
    assert sub.dtype == np.float32
    assert np.array_equal(sub, full[np.ix_(refs, hyps)].astype(np.float32))
    rng = np.random.default_rng(3)
    pair_refs, pair_hyps = rng.integers(0, 48, 500), rng.integers(0, 48, 500)
    assert np.array_equal(
        meteor.meteor_pairs(random_corpus, pair_refs, pair_hyps), full[pair_refs, pair_hyps]
    )
    assert pair_score(random_corpus, 9, 4) == full[9, 4]


def test_two_workers_give_the_same_matrix(random_corpus):
    one = meteor.meteor_matrix(random_corpus, workers=1)
    two = meteor.meteor_matrix(random_corpus, workers=2, progress=True)
    assert np.array_equal(one, two)
    rng = np.random.default_rng(5)
    refs, hyps = rng.integers(0, 48, 300), rng.integers(0, 48, 300)
    assert np.array_equal(
        meteor.meteor_pairs(random_corpus, refs, hyps, workers=2), one[refs, hyps]
    )


def test_nltk_doctest_examples():
    hypothesis = (
        "It is a guide to action which ensures that the military always obeys the commands of "
        "the party"
    ).split()
    reference = (
        "It is a guide to action that ensures that the military will forever heed Party commands"
    ).split()
    corpus = meteor.prepare(
        [reference, hypothesis, "this is a cat".split(), "non matching hypothesis".split()]
    )
    assert round(pair_score(corpus, 0, 1), 4) == 0.6944
    assert pair_score(corpus, 0, 1) == single_meteor_score(reference, hypothesis)
    assert pair_score(corpus, 2, 3) == 0.0


def by_formula(m: int, chunks: int, hyp_len: int, ref_len: int) -> float:
    precision, recall = m / hyp_len, m / ref_len
    fmean = precision * recall / (0.9 * precision + (1 - 0.9) * recall)
    return (1 - 0.5 * (chunks / m) ** 3.0) * fmean


@pytest.mark.parametrize(
    ("reference", "hypothesis", "m", "chunks"),
    [
        # Exact stage, last to first: hyp "a" takes ref position 2 (not 0), then "x" takes 1,
        # giving one chunk (x a)/(x a); first-to-first would have made two.
        ("a x a", "x a", 2, 1),
        # Repeated words: (0,0) (1,1) | (2,3) (3,4) -> two chunks.
        ("the cat sat the cat", "the cat the cat", 4, 2),
        # Stem stage on what the exact stage left: cutting -> cuts (stems "cut").
        ("cuts x cut", "cut cutting", 2, 2),
        # WordNet stage on the stems: put -> place; then a continuation pan/pan is broken.
        ("place the pan", "put pan", 2, 2),
        # Synonym only after Porter: car -> automobile fails (stem "automobil").
        ("automobile", "car", 0, 0),
        # Case is ignored; stage order: STIR exact with stir, stirring by stem with stirred.
        ("stir stirred", "STIR stirring", 2, 1),
    ],
)
def test_hand_worked_alignments(reference, hypothesis, m, chunks):
    ref, hyp = reference.split(), hypothesis.split()
    corpus = meteor.prepare([ref, hyp])
    expected = by_formula(m, chunks, len(hyp), len(ref)) if m else 0.0
    assert single_meteor_score(ref, hyp) == expected  # the hand count agrees with NLTK
    assert pair_score(corpus, 0, 1) == expected


def test_long_captions_use_wider_masks():
    """References of 17-32, 33-64 and over 64 tokens take uint32, uint64 and Python-int masks."""
    rng = np.random.default_rng(11)
    captions = [[str(w) for w in rng.choice(VOCABULARY, n)] for n in (3, 12, 20, 40, 64, 65, 90)]
    got = meteor.meteor_matrix(meteor.prepare(captions), workers=1)
    assert np.array_equal(got, nltk_matrix(captions))


def test_synonym_relation_is_on_stems():
    corpus = meteor.prepare([["put", "place", "set", "automobile", "car", "large", "big"]])
    assert set(synonyms(corpus, "put")) == {"place", "set"}
    assert "automobil" not in synonyms(corpus, "car")
    assert "larg" not in synonyms(corpus, "big")


def test_caption_as_a_string_is_rejected():
    with pytest.raises(TypeError):
        meteor.prepare(["a man is cooking"])

"""The name rule, against an independent statement of it, and names in links both ways."""

import unicodedata
from urllib.parse import unquote, urlsplit

import pytest
from django.urls import resolve, reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.models import Campaign
from retrieval.datasets.names import (
    NAME_MAX_LENGTH,
    InvalidName,
    check_name,
    derived_name,
    name_problem,
    name_to_segment,
    segment_to_name,
)
from retrieval.models import Dataset, LabelSet, RetrievalModel, Run

ACCEPTED = [
    "demo",
    "MSR-VTT 1k-A",
    "run 2 (bm25, k=1000)",
    "Ünïcödé 名前 🎥",
    "a.b",
    "...",
    ".hidden",
    "=1+1",
    "<b>x",
    "100% & ?#",
    "a  b",
    "x" * NAME_MAX_LENGTH,
]

REFUSED = [
    ("", "is empty"),
    ("   ", "is only blanks"),
    (" x", "starts or ends with a blank"),
    ("x\u00a0", "starts or ends with a blank"),
    ("x" * (NAME_MAX_LENGTH + 1), "over the limit of 100"),
    (".", "cannot be '.' or '..'"),
    ("..", "cannot be '.' or '..'"),
    ("slash/name", "contains '/' at character 6"),
    ("<b>x</b>", "contains '/' at character 6"),
    ("back\\slash", "contains '\\\\' at character 5"),
    ("line\u2028break", "a line separator (U+2028) at character 5"),
    ("para\u2029graph", "a paragraph separator (U+2029)"),
    ("a\nb", "a control character (U+000A)"),
    ("a\rb", "a control character (U+000D)"),
    ("a\tb", "a control character (U+0009)"),
    ("a\x00b", "a control character (U+0000)"),
    ("a\x85b", "a control character (U+0085)"),
    ("zero\u200bwidth", "an invisible format character (U+200B)"),
    ("right\u202eto left", "an invisible format character (U+202E)"),
    ("bom\ufeff", "an invisible format character (U+FEFF)"),
    ("private\ue000", "a private-use character (U+E000)"),
    ("lone\ud800", "an unpaired surrogate (U+D800)"),
    ("unassigned\u0378", "an unassigned code point (U+0378)"),
]


@pytest.mark.parametrize("name", ACCEPTED)
def test_names_people_use_are_accepted(name):
    assert name_problem(name) is None
    assert check_name(name, "dataset") == name


@pytest.mark.parametrize(("name", "why"), REFUSED)
def test_refused_names_say_which_thing_and_why(name, why):
    with pytest.raises(InvalidName) as raised:
        check_name(name, "label set")
    message = str(raised.value)
    assert message.startswith(f"the label set name {name[:60]!r}"), message
    assert why in message, message
    assert raised.value.code == "invalid_name" and raised.value.status == 400


def test_anything_but_text_is_refused():
    for value in (None, 3, b"bytes", ["a"]):
        with pytest.raises(InvalidName, match="is not text"):
            check_name(value, "model")


def reference_accepts(name: str) -> bool:
    """The rule said another way: Python's own idea of a printable character (it excludes
    exactly the categories C* and Z* but the plain space), plus the other blanks (Zs) inside."""
    return (
        0 < len(name) <= NAME_MAX_LENGTH
        and name == name.strip()
        and name not in (".", "..")
        and "/" not in name
        and "\\" not in name
        and all(char.isprintable() or unicodedata.category(char) == "Zs" for char in name)
    )


ANY_TEXT = st.text(
    alphabet=st.characters(codec=None, exclude_categories=()), min_size=0, max_size=120
)
"""Any code points, surrogates and unassigned ones included."""
NAMEISH = st.one_of(
    ANY_TEXT,
    st.text(alphabet=st.sampled_from("ab ./\\\u2028\u200b\t%é"), max_size=8),
    st.sampled_from([".", "..", "", " ", "%2e%2E", "\\2F", "\\"]),
)


@settings(max_examples=600, deadline=None)
@given(NAMEISH)
def test_the_rule_agrees_with_an_independent_statement_of_it(name):
    assert (name_problem(name) is None) == reference_accepts(name)


@settings(max_examples=400, deadline=None)
@given(NAMEISH)
def test_derived_names_are_always_accepted_and_accepted_names_stay_as_they_are(name):
    derived = derived_name(name)
    assert name_problem(derived) is None, (name, derived)
    if name_problem(name) is None:
        assert derived == name


DOT_SEGMENTS = {".", "..", ".%2e", "%2e.", "%2e%2e"}
"""What the WHATWG URL Standard treats as single- and double-dot path segments."""


@settings(max_examples=400, deadline=None)
@given(NAMEISH)
def test_every_name_is_one_path_segment_and_comes_back_unchanged(name):
    segment = name_to_segment(name)
    assert segment and "/" not in segment and segment not in (".", "..")
    assert segment_to_name(segment) == name
    if name_problem(name) is None:
        assert segment == name  # readable links, hand-typed URLs keep working


@settings(max_examples=300, deadline=None)
@given(dataset=NAMEISH, model=NAMEISH)
def test_reversed_links_resolve_to_the_same_names(dataset, model):
    """``reverse`` quotes; the server unquotes before resolving, as here."""
    for name in (dataset, model):
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            return  # no database column stores a lone surrogate
    url = reverse("dataset-model", args=[dataset, model])
    path = urlsplit(url).path
    assert not url.startswith("//")
    for part in path.split("/"):
        assert part.lower() not in DOT_SEGMENTS
    match = resolve(unquote(path))
    assert match.url_name == "dataset-model"
    assert match.kwargs == {"dataset_name": dataset, "model_name": model}


def test_a_garbled_escaped_segment_matches_nothing():
    with pytest.raises(ValueError):
        segment_to_name("\\%ff")
    from django.urls import Resolver404

    with pytest.raises(Resolver404):
        resolve("/datasets/\\%ff/")


@pytest.mark.parametrize("model", [Dataset, RetrievalModel, Run, LabelSet, Campaign])
def test_every_named_thing_stores_names_as_long_as_the_rule_allows(model):
    assert model._meta.get_field("name").max_length == NAME_MAX_LENGTH

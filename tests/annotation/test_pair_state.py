"""The one writer of a pair's state, and the database constraints that back it."""

import pytest
from django.db import IntegrityError, transaction

from annotation.models import Pair
from annotation.services import pair_state
from tests.factories import make_campaign


@pytest.mark.parametrize(
    ("needed", "leased", "held", "expected"),
    [(2, 0, False, 2), (2, 1, False, 1), (1, 2, False, 0), (0, 1, False, 0), (2, 0, True, 0)],
)
def test_open_slots_rule(needed, leased, held, expected):
    assert pair_state.open_slots(needed, leased, held) == expected


@pytest.mark.django_db
def test_sql_rule_equals_python_rule():
    campaign = make_campaign(n_queries=2, depth=3)
    cases = [(2, 0, False), (2, 1, False), (1, 3, False), (0, 1, False), (2, 0, True)]
    pairs = list(Pair.objects.filter(campaign=campaign).order_by("pk"))[: len(cases)]
    for pair, (needed, leased, held) in zip(pairs, cases, strict=True):
        Pair.objects.filter(pk=pair.pk).update(
            needed=needed, leased=leased, held=held, open_slots=0
        )
    Pair.objects.filter(pk__in=[p.pk for p in pairs]).update(
        open_slots=pair_state.open_slots_expression()
    )
    for pair, case in zip(pairs, cases, strict=True):
        pair.refresh_from_db()
        assert pair.open_slots == pair_state.open_slots(*case)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "broken",
    [
        {"open_slots": -1},
        {"open_slots": 5, "needed": 1},
        {"held": True, "open_slots": 1},
        {"relevant_count": 3, "label_count": 2},
        {"leased": -1},
    ],
)
def test_a_writer_that_breaks_an_invariant_fails_loudly(broken):
    campaign = make_campaign()
    pair = campaign.pairs.first()
    with pytest.raises(IntegrityError), transaction.atomic():
        Pair.objects.filter(pk=pair.pk).update(**broken)


@pytest.mark.django_db
def test_adjudicating_a_leased_pair_keeps_the_invariants(django_user_model):
    """needed drops to 0 while a lease is live: open_slots is 0, not -1."""
    from annotation.services import assignment

    campaign = make_campaign()
    annotator = django_user_model.objects.create_user("a", password="pw-annotator-1")
    admin = django_user_model.objects.create_superuser("boss", "b@example.org", "pw-boss-123")
    pair = assignment.assign(campaign, annotator).current.pair
    assignment.adjudicate(
        Pair.objects.select_related("campaign").get(pk=pair.pk), admin, "relevant"
    )
    pair.refresh_from_db()
    assert (pair.needed, pair.leased, pair.open_slots, pair.status) == (0, 1, 0, "relevant")

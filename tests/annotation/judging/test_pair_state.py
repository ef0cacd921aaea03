"""The one writer of a pair's state, and the database constraints that back it."""

import ast
import contextlib
import random
import re
import traceback
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import Value
from django.utils import timezone

from annotation.judging import escalations, pair_state, queue, submit
from annotation.judging.errors import AssignmentError
from annotation.models import Campaign, Escalation, Judgement, Lease, Pair
from tests.factories import make_campaign

ROOT = Path(__file__).resolve().parents[3]
COUNTERS = {"label_count", "relevant_count", "needed", "leased", "open_slots", "held"}
"""A pair's counters: written by ``pair_state`` alone."""


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
        # The expression over the values being written (the check constraint then holds the
        # row to the expression over its columns: both must agree with the Python rule).
        slots = pair_state.open_slots_expression(Value(needed), Value(leased), held)
        Pair.objects.filter(pk=pair.pk).update(
            needed=needed, leased=leased, held=held, open_slots=slots
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
        {"open_slots": 0},
        {"needed": 2},
        {"leased": 1},
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
    from annotation.judging import queue

    campaign = make_campaign()
    annotator = django_user_model.objects.create_user("a", password="pw-annotator-1")
    admin = django_user_model.objects.create_superuser("boss", "b@example.org", "pw-boss-123")
    pair = queue.assign(campaign, annotator).current.pair
    escalations.adjudicate(
        Pair.objects.select_related("campaign").get(pk=pair.pk), admin, "relevant"
    )
    pair.refresh_from_db()
    assert (pair.needed, pair.leased, pair.open_slots, pair.status) == (0, 1, 0, "relevant")


CASES = [(n, leased, held) for n in range(4) for leased in range(4) for held in (False, True)]
"""Every small (needed, leased, held), held ones with no lease (a hold ends them)."""


def _pairs_in_states(cases):
    """A campaign with one pair in each (needed, leased, held) state, open slots by the rule."""
    campaign = make_campaign(n_queries=8, depth=9)
    pairs = list(Pair.objects.filter(campaign=campaign).order_by("pk"))
    campaign.pairs.filter(pk__in=[pair.pk for pair in pairs[len(cases) :]]).delete()
    pairs = pairs[: len(cases)]
    for pair, (needed, leased, held) in zip(pairs, cases, strict=True):
        slots = pair_state.open_slots(needed, leased, held)
        Pair.objects.filter(pk=pair.pk).update(
            needed=needed, leased=leased, held=held, open_slots=slots
        )
    return campaign, pairs


@pytest.mark.django_db
def test_servable_is_the_open_slots_rule_now_and_once_leases_end():
    cases = [case for case in CASES if not (case[2] and case[1])]
    campaign, pairs = _pairs_in_states(cases)
    for once_leases_end in (False, True):
        found = set(
            Pair.objects.filter(
                pair_state.servable(once_leases_end=once_leases_end), campaign=campaign
            ).values_list("pk", flat=True)
        )
        expected = {
            pair.pk
            for pair, (needed, leased, held) in zip(pairs, cases, strict=True)
            if pair_state.open_slots(needed, 0 if once_leases_end else leased, held) > 0
        }
        assert found == expected


def test_open_slots_rule_on_arrays_is_the_rule_per_pair():
    needed, leased, held = (np.array(column) for column in zip(*CASES, strict=True))
    slots = pair_state.open_slots(needed, leased, held)
    assert slots.tolist() == [pair_state.open_slots(*case) for case in CASES]
    assert type(pair_state.open_slots(2, 1, False)) is int


def test_new_pairs_state():
    state = pair_state.initial(pair_state.first_needed(np.array([0, 1, 0]), np.array([0, 0, 1])))
    assert state["needed"] == [1, 2, 0] and state["open_slots"] == [1, 2, 0]
    assert (state["label_count"], state["leased"], state["held"]) == (0, 0, False)
    one = pair_state.initial(0)
    assert (one["needed"], one["open_slots"], one["status"]) == (0, 0, "pending")


@pytest.mark.django_db
def test_a_lease_taken_and_ended_moves_open_slots_by_the_rule(django_user_model):
    """The compiled lease statement agrees with the rule, held pairs and full ones too."""
    cases = [case for case in CASES if not case[2]]
    campaign, pairs = _pairs_in_states(cases)
    annotator = django_user_model.objects.create_user("a", password="pw-annotator-1")
    now = timezone.now()
    for pair, (needed, leased, held) in zip(pairs, cases, strict=True):
        pair.refresh_from_db()
        pair_state.take_lease(pair, annotator, campaign, now)
        in_memory = (pair.leased, pair.open_slots)
        pair.refresh_from_db()
        assert (pair.leased, pair.open_slots) == in_memory
        assert pair.open_slots == pair_state.open_slots(needed, leased + 1, held)
        assert pair_state.end_lease(pair.pk, annotator.pk)
        assert not pair_state.end_lease(pair.pk, annotator.pk)
        pair.refresh_from_db()
        assert (pair.leased, pair.open_slots) == (
            leased,
            pair_state.open_slots(*(needed, leased, held)),
        )


@contextlib.contextmanager
def pair_writes_checked():
    """Record every UPDATE of a pair's counters or status that ``pair_state`` did not make
    (its innermost project frame, past ``sql`` and ``raw_sql``, is elsewhere); yields the list."""
    quote = connection.ops.quote_name
    table = quote(Pair._meta.db_table)
    columns = [quote(name) for name in (*COUNTERS, "status")]
    strangers = []

    def check(execute, statement, params, many, context):
        head, _, rest = statement.partition(" SET ")
        writes = any(column in rest.split(" WHERE ")[0] for column in columns)
        if head.lstrip().upper().startswith("UPDATE") and table in head and writes:
            frames = [
                frame.filename
                for frame in traceback.extract_stack()[:-1]  # less this function
                if frame.filename.startswith(str(ROOT))
                and "/.venv/" not in frame.filename
                and not frame.filename.endswith(
                    ("annotation/judging/statements.py", "config/raw_sql.py")
                )
            ]
            if not frames or not frames[-1].endswith("annotation/judging/pair_state.py"):
                strangers.append((statement, frames[-1:]))
        return execute(statement, params, many, context)

    with connection.execute_wrapper(check):
        yield strangers


def _probe(campaign, annotator, now):
    """Whether ``assign`` would serve the annotator a pair at ``now``; changes nothing."""
    with transaction.atomic():
        got = queue.assign(Campaign.objects.get(pk=campaign.pk), annotator, now)
        transaction.set_rollback(True)
    return got.current is not None


def _random_state(rng: random.Random, campaign, annotators, admin, now):
    """Labels, leases, escalations, adjudications and parked pairs, taken at random."""
    for _ in range(rng.randint(0, 14)):
        annotator = rng.choice(annotators)
        action = rng.random()
        current = queue.assign(campaign, annotator, now).current
        if current is None:
            continue
        if action < 0.6:
            submit.submit(
                annotator,
                current.pair.pk,
                rng.choice(["relevant", "irrelevant"]),
                uuid.uuid4(),
                now=now,
            )
        elif action < 0.7:
            escalations.escalate(annotator, current.pair.pk, "unclear", uuid.uuid4(), now=now)
        elif action < 0.8:
            pair = Pair.objects.select_related("campaign").get(pk=current.pair.pk)
            escalations.adjudicate(pair, admin, rng.choice(["relevant", "irrelevant"]))
        elif action < 0.85:
            with contextlib.suppress(AssignmentError):
                submit.undo(annotator, campaign, now)
        elif action < 0.9:
            escalation = Escalation.objects.filter(resolved_at__isnull=True).first()
            if escalation is not None:
                escalations.resolve_escalation(escalation, admin)
        elif action < 0.95:
            unleased = campaign.pairs.filter(leased=0, label_count=0).values_list("pk", flat=True)
            pair_state.place(rng.sample(list(unleased), min(2, len(unleased))))
        now += timedelta(seconds=rng.randint(1, 20))
    return now


@pytest.mark.django_db
@pytest.mark.parametrize("seed", range(10))
def test_there_is_work_exactly_when_the_next_pair_query_serves_one(seed, django_user_model):
    """``has_work_for`` and the next-pair query ask one question: for random campaign states,
    there is work for an annotator iff ``assign`` serves them a pair once every lease has
    ended; and ``assign`` serves one now iff they hold a lease or a pair they have not
    judged is :func:`pair_state.servable` now."""
    rng = random.Random(seed)
    campaign = make_campaign(
        n_queries=rng.randint(1, 3),
        depth=rng.randint(1, 3),
        rate=rng.choice([0.0, 0.5, 1.0]),
        seed=seed,
        lease_seconds=600,
        judging_order=["depth", "maxmean"][seed % 2],
    )
    annotators = [
        django_user_model.objects.create_user(f"a{seed}-{i}", password="pw-annotator-1")
        for i in range(3)
    ]
    admin = django_user_model.objects.create_superuser("boss", "b@example.org", "pw-boss-123")
    with pair_writes_checked() as strangers:
        now = _random_state(rng, campaign, annotators, admin, datetime(2030, 1, 1, tzinfo=UTC))
    assert strangers == []
    for annotator in annotators:
        judged = Judgement.objects.filter(annotator=annotator, undone_at__isnull=True)
        servable_now = (
            Pair.objects.filter(pair_state.servable(), campaign=campaign)
            .exclude(pk__in=judged.values("pair_id"))
            .exists()
        )
        holds = Lease.objects.filter(annotator=annotator, pair__campaign=campaign).exists()
        assert _probe(campaign, annotator, now) == (servable_now or holds)
        later = now + timedelta(days=1)
        assert queue.has_work_for(campaign, annotator) == _probe(campaign, annotator, later)


WRITES = {"update", "bulk_update", "create", "bulk_create", "get_or_create", "update_or_create"}
SQL_SET = re.compile(r"\bSET\b.*\b(" + "|".join(sorted(COUNTERS)) + r")\b\s*=", re.I | re.S)
SQL_WRITERS = {"save_counts"}
"""Statements of ``sql`` that write a pair's state: only ``pair_state`` may call them."""
SQL_STATEMENTS = {"LEASES_MOVED"}
"""Registered statements of ``sql`` that write a pair's state: only ``pair_state`` runs them."""
EXEMPT = {
    "annotation/judging/pair_state.py": "the writer",
    "annotation/judging/statements.py": "holds the writer's statements (SQL_WRITERS)",
    "bench/export_bench.py": "fabricates a finished 600,000-pair campaign in one bulk update",
}


def _writes(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) of each write of a pair counter the module's syntax shows."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for part in ast.walk(target):
                    if isinstance(part, ast.Attribute) and part.attr in COUNTERS:
                        found.append((node.lineno, f".{part.attr} assigned"))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in WRITES or name == "Pair":
                found += [
                    (node.lineno, f"{name}({k.arg}=)") for k in node.keywords if k.arg in COUNTERS
                ]
                found += [
                    (node.lineno, f"{name}('{c.value}')")
                    for arg in [*node.args, *(k.value for k in node.keywords)]
                    for c in ast.walk(arg)
                    if isinstance(c, ast.Constant) and c.value in COUNTERS
                ]
            if name in SQL_WRITERS:
                found.append((node.lineno, f"sql.{name}()"))
        elif isinstance(node, ast.Attribute) and node.attr in SQL_STATEMENTS:
            found.append((node.lineno, f"sql.{node.attr}"))
        elif isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            found += [(node.lineno, f"{{'{k}': ...}}") for k in keys if k in COUNTERS]
        elif isinstance(node, ast.Constant) and SQL_SET.search(str(node.value)):
            found.append((node.lineno, "SQL UPDATE ... SET"))
    return found


def test_only_pair_state_writes_a_pairs_counters():
    """No module of the app or the benchmarks but ``pair_state`` writes ``label_count``,
    ``relevant_count``, ``needed``, ``leased``, ``open_slots`` or ``held``: not by ORM
    update, create or keyword, attribute assignment, column dict, nor SQL text."""
    sources = [*ROOT.glob("annotation/**/*.py"), *ROOT.glob("bench/**/*.py")]
    found = []
    for path in sources:
        name = path.relative_to(ROOT).as_posix()
        if "/migrations/" in name or name in EXEMPT:
            continue
        tree = ast.parse(path.read_text(), name)
        found += [f"{name}:{line}: {what}" for line, what in _writes(tree)]
    assert found == []
    assert len(sources) > 50  # the glob found the tree


def test_the_scan_sees_each_kind_of_write():
    written = """
pair.leased -= 1
Pair.objects.filter(pk=1).update(open_slots=0)
Pair(needed=0)
Pair.objects.bulk_update(pairs, ["held"])
sql.insert(Pair, {"label_count": 0})
sql.save_counts(pair)
cursor.execute("UPDATE pair SET relevant_count = 1 WHERE id = 2")
sql.LEASES_MOVED.execute({"pair": 1, "step": -1})
"""
    read = """
Pair.objects.filter(needed__gt=0, held=False).values_list("leased")
needed = pair.needed - pair.leased
"""
    assert len(_writes(ast.parse(written))) == 8
    assert _writes(ast.parse(read)) == []


@pytest.mark.django_db
def test_the_runtime_check_sees_a_write_elsewhere():
    pair = make_campaign().pairs.first()
    with pair_writes_checked() as strangers:
        Pair.objects.filter(pk=pair.pk).update(needed=0, open_slots=0)
        pair_state.place([pair.pk])
    assert len(strangers) == 1


@pytest.mark.django_db
def test_escalating_a_pair_with_a_free_slot_holds_it(django_user_model):
    """A double-sample pair leased once still has a slot open: holding it closes the slot
    in the same statement (setting ``held`` alone broke ``pair_held_has_no_slots``)."""
    campaign = make_campaign(rate=1.0)
    annotator = django_user_model.objects.create_user("a", password="pw-annotator-1")
    pair = queue.assign(campaign, annotator).current.pair
    pair.refresh_from_db()
    assert (pair.needed, pair.leased, pair.open_slots) == (2, 1, 1)
    escalations.escalate(annotator, pair.pk, "too dark", uuid.uuid4())
    pair.refresh_from_db()
    assert (pair.held, pair.leased, pair.open_slots) == (True, 0, 0)
    escalation = Escalation.objects.get(pair=pair)
    admin = django_user_model.objects.create_superuser("boss", "b@example.org", "pw-boss-123")
    escalations.resolve_escalation(escalation, admin)
    pair.refresh_from_db()
    assert (pair.held, pair.leased, pair.open_slots) == (False, 0, 2)

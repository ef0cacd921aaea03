"""The gold path's hand-written statements: serving a gold task, storing and scoring an
answer on it, and an annotator's qualification, each in one statement (the judging path's
trade, measured in RESULTS: composing them through the ORM cost several times their run).
Written and registered as :mod:`annotation.judging.statements`' are.
"""

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from django.db import connection

from annotation.judging.statements import (
    PAIR_ROW,
    WITH_CAPTION_AND_VIDEO,
    Inserted,
    aware_time,
    in_list,
    inserted_id,
    statement,
    uuid_value,
)
from annotation.models import GoldJudgement
from config.raw_sql import Sources, instances, model_row


class QualificationRow(NamedTuple):
    """A campaign's gold pairs, and one qualification attempt of an annotator in it."""

    gold_pairs: int
    id: int | None
    passed: bool | None
    admitted_by: int | None
    finished_at: datetime | None
    correct: int | None
    total: int | None
    answered: int


QUALIFICATION = statement(
    "qualification",
    """
    SELECT (SELECT COUNT(*) FROM {gold_pair} g WHERE g.{gold_pair.campaign} = %(campaign)s)
            AS gold_pairs,
        a.{attempt.id} AS id, a.{attempt.passed} AS passed,
        a.{attempt.admitted_by} AS admitted_by, a.{attempt.finished_at} AS finished_at,
        a.{attempt.correct} AS correct, a.{attempt.total} AS total,
        (SELECT COUNT(*) FROM {gold_judgement} j WHERE j.{gold_judgement.attempt} = a.{attempt.id}
            AND j.{gold_judgement.undone_at} IS NULL) AS answered
    FROM (SELECT 1 AS one) x LEFT JOIN {attempt} a
        ON a.{attempt.campaign} = %(campaign)s AND a.{attempt.annotator} = %(annotator)s
    ORDER BY a.{attempt.started_at}, a.{attempt.id}""",
    QualificationRow,
)
"""A campaign's gold pairs and an annotator's attempts in it, oldest first, with answers
counted (a row with a null ``id`` when there is no attempt)."""


def qualification(campaign_id: int, annotator_id: int) -> tuple[int, list[QualificationRow]]:
    """(gold pairs, attempt rows) of :data:`QUALIFICATION`, times aware."""
    found = QUALIFICATION.rows({"campaign": campaign_id, "annotator": annotator_id})
    attempts = [
        row._replace(finished_at=None if row.finished_at is None else aware_time(row.finished_at))
        for row in found
        if row.id is not None
    ]
    return int(found[0].gold_pairs), attempts


def _gold_task_text(excluded: int) -> str:
    """A random gold task (:data:`PAIR_ROW`) the annotator has not answered in the queue nor
    holds, not excluded; ``untasked`` counts the campaign's gold pairs without a task."""
    return (
        """
    SELECT {pair:p.*}, {caption:c.*}, {video:v.*},
        (SELECT COUNT(*) FROM {gold_pair} u
            WHERE u.{gold_pair.campaign} = %(campaign)s AND u.{gold_pair.task} IS NULL) AS untasked
    FROM {gold_pair} g JOIN {pair} p ON p.{pair.id} = g.{gold_pair.task}"""
        + WITH_CAPTION_AND_VIDEO
        + """
    WHERE g.{gold_pair.campaign} = %(campaign)s
      AND NOT EXISTS (SELECT 1 FROM {gold_judgement} a
            WHERE a.{gold_judgement.gold_pair} = g.{gold_pair.id}
              AND a.{gold_judgement.annotator} = %(annotator)s
              AND a.{gold_judgement.purpose} = %(queue)s AND a.{gold_judgement.undone_at} IS NULL)
      AND NOT EXISTS (SELECT 1 FROM {lease} l
            WHERE l.{lease.pair} = p.{pair.id} AND l.{lease.annotator} = %(annotator)s)"""
        + (f" AND p.{{pair.id}} NOT IN ({in_list('exclude', excluded)})" if excluded else "")
        + " ORDER BY RANDOM() LIMIT 1"
    )


GoldTaskRow = model_row("GoldTaskRow", PAIR_ROW, "untasked")
GOLD_TASK = statement("gold_task", _gold_task_text, GoldTaskRow, [{"excluded": 0}, {"excluded": 2}])


def gold_task(campaign_id: int, annotator_id: int, exclude: Sequence[int]) -> GoldTaskRow | None:
    """The row of :data:`GOLD_TASK`, or None when no gold task is left to serve."""
    params = {
        "campaign": campaign_id,
        "annotator": annotator_id,
        "queue": GoldJudgement.Purpose.QUEUE.value,
    }
    params.update((f"exclude_{i}", pk) for i, pk in enumerate(exclude))
    found = GOLD_TASK.rows(params, excluded=len(exclude))
    return found[0] if found else None


def _gold_since_reinstated(value: str, name: str) -> str:
    """``value`` over the annotator's live queue answers on gold since their reinstatement."""
    return (
        f"(SELECT {value} FROM {{gold_judgement}} a "
        "JOIN {gold_pair} h ON h.{gold_pair.id} = a.{gold_judgement.gold_pair} "
        "WHERE h.{gold_pair.campaign} = g.{gold_pair.campaign} "
        "AND a.{gold_judgement.annotator} = %(annotator)s AND a.{gold_judgement.purpose} = %(queue)s "
        "AND a.{gold_judgement.undone_at} IS NULL AND (s.{standing.reinstated_at} IS NULL "
        f"OR a.{{gold_judgement.created_at}} > s.{{standing.reinstated_at}})) AS {name}"
    )


GOLD_JUDGEMENT_ROW: Sources = ((GoldJudgement, "e"),)
GoldAnswerRow = model_row(
    "GoldAnswerRow",
    *("gold", "campaign", "label", "explanation", "guideline", "attempt", "answered"),
    *("label_uses", "paused_at", "gold_total", "gold_correct"),
    GOLD_JUDGEMENT_ROW,
)
GOLD_ANSWER = statement(
    "gold_answer",
    """
    SELECT g.{gold_pair.id} AS gold, g.{gold_pair.campaign} AS campaign,
        g.{gold_pair.label} AS label, g.{gold_pair.explanation} AS explanation,
        g.{gold_pair.guideline} AS guideline,
        (SELECT a.{attempt.id} FROM {attempt} a WHERE a.{attempt.campaign} = g.{gold_pair.campaign}
            AND a.{attempt.annotator} = %(annotator)s AND a.{attempt.finished_at} IS NULL
            ORDER BY a.{attempt.id} LIMIT 1) AS attempt,
        (SELECT COUNT(*) FROM {gold_judgement} q WHERE q.{gold_judgement.gold_pair} = g.{gold_pair.id}
            AND q.{gold_judgement.annotator} = %(annotator)s AND q.{gold_judgement.purpose} = %(queue)s
            AND q.{gold_judgement.undone_at} IS NULL) AS answered,
        (SELECT j.{judgement.id} FROM {judgement} j WHERE j.{judgement.uuid} = %(uuid)s) AS label_uses,
        s.{standing.paused_at} AS paused_at, """
    + _gold_since_reinstated("COUNT(*)", "gold_total")
    + ", "
    + _gold_since_reinstated(
        "COALESCE(SUM(CASE WHEN a.{gold_judgement.label} = h.{gold_pair.label} THEN 1 ELSE 0 END), 0)",
        "gold_correct",
    )
    + """, {gold_judgement:e.*}
    FROM (SELECT 1 AS one) x
    LEFT JOIN {gold_pair} g ON g.{gold_pair.task} = %(task)s
    LEFT JOIN {standing} s ON s.{standing.campaign} = g.{gold_pair.campaign}
        AND s.{standing.annotator} = %(annotator)s
    LEFT JOIN {gold_judgement} e ON e.{gold_judgement.uuid} = %(uuid)s""",
    GoldAnswerRow,
)
"""Everything an answer on a gold task needs, in one row: the gold pair (null when gone),
the attempt in progress, whether it was answered in the queue already, the answer or
campaign label (``label_uses``) the client's id names, and the standing as
:data:`GOLD_EVIDENCE` reads it, so scoring the answer takes no statement of its own."""


def gold_answer(task_id: int, annotator_id: int, client_uuid: object) -> tuple:
    """The row of :data:`GOLD_ANSWER`; ``stored`` is the stored answer or None."""
    params = {
        "task": task_id,
        "annotator": annotator_id,
        "queue": GoldJudgement.Purpose.QUEUE.value,
        "uuid": uuid_value(client_uuid),
    }
    (row,) = GOLD_ANSWER.rows(params)
    stored = instances(GOLD_JUDGEMENT_ROW, row)[0] if row.e_id is not None else None
    return row._replace(
        gold_total=int(row.gold_total or 0), gold_correct=int(row.gold_correct or 0)
    ), stored


INSERT_GOLD_JUDGEMENT = statement(
    "insert_gold_judgement",
    """
    INSERT INTO {gold_judgement} ({gold_judgement.uuid}, {gold_judgement.gold_pair},
        {gold_judgement.annotator}, {gold_judgement.label}, {gold_judgement.seconds},
        {gold_judgement.seconds_played}, {gold_judgement.created_at}, {gold_judgement.purpose},
        {gold_judgement.attempt})
    VALUES (%(uuid)s, %(gold)s, %(annotator)s, %(label)s, %(seconds)s, %(played)s, %(now)s,
        %(purpose)s, %(attempt)s)
    RETURNING {gold_judgement.id}""",
    Inserted,
)


def insert_gold_judgement(
    client_uuid: object,
    gold_pair_id: int,
    annotator_id: int,
    label: str,
    seconds,
    now: datetime,
    purpose: str,
    attempt_id: int | None,
    played=None,
) -> GoldJudgement:
    """Store an answer on a gold pair (:data:`INSERT_GOLD_JUDGEMENT`) made at ``now``,
    ``played`` seconds of its video seen."""
    params = {
        "uuid": uuid_value(client_uuid),
        "gold": gold_pair_id,
        "annotator": annotator_id,
        "label": label,
        "seconds": seconds,
        "played": played,
        "now": connection.ops.adapt_datetimefield_value(now),
        "purpose": purpose,
        "attempt": attempt_id,
    }
    judgement_id = inserted_id(INSERT_GOLD_JUDGEMENT, params)
    return GoldJudgement(
        pk=judgement_id,
        uuid=client_uuid,
        gold_pair_id=gold_pair_id,
        annotator_id=annotator_id,
        label=label,
        seconds=seconds,
        seconds_played=played,
        created_at=now,
        purpose=purpose,
        attempt_id=attempt_id,
    )


class GoldEvidence(NamedTuple):
    """An annotator's standing in a campaign and their queue answers on its gold since."""

    paused_at: datetime | None
    reinstated_at: datetime | None
    total: int
    correct: int


GOLD_EVIDENCE = statement(
    "gold_evidence",
    """
    SELECT s.{standing.paused_at} AS paused_at, s.{standing.reinstated_at} AS reinstated_at,
        COUNT(a.{gold_judgement.id}) AS total,
        COALESCE(SUM(CASE WHEN a.{gold_judgement.label} = g.{gold_pair.label} THEN 1 ELSE 0 END), 0)
            AS correct
    FROM (SELECT 1 AS one) x
    LEFT JOIN {standing} s
        ON s.{standing.campaign} = %(campaign)s AND s.{standing.annotator} = %(annotator)s
    LEFT JOIN {gold_judgement} a ON a.{gold_judgement.annotator} = %(annotator)s
        AND a.{gold_judgement.purpose} = %(queue)s AND a.{gold_judgement.undone_at} IS NULL
        AND (s.{standing.reinstated_at} IS NULL
            OR a.{gold_judgement.created_at} > s.{standing.reinstated_at})
        AND a.{gold_judgement.gold_pair} IN (SELECT g2.{gold_pair.id} FROM {gold_pair} g2
            WHERE g2.{gold_pair.campaign} = %(campaign)s)
    LEFT JOIN {gold_pair} g ON g.{gold_pair.id} = a.{gold_judgement.gold_pair}
    GROUP BY s.{standing.paused_at}, s.{standing.reinstated_at}""",
    GoldEvidence,
)
"""An annotator's standing in a campaign and their queue answers on its gold since the
reinstatement: how many, how many right."""


def gold_evidence(campaign_id: int, annotator_id: int) -> GoldEvidence:
    """The row of :data:`GOLD_EVIDENCE`, times as aware datetimes or None and counts as ints."""
    params = {
        "campaign": campaign_id,
        "annotator": annotator_id,
        "queue": GoldJudgement.Purpose.QUEUE.value,
    }
    (row,) = GOLD_EVIDENCE.rows(params)
    return row._replace(
        paused_at=None if row.paused_at is None else aware_time(row.paused_at),
        reinstated_at=None if row.reinstated_at is None else aware_time(row.reinstated_at),
        total=int(row.total),
        correct=int(row.correct),
    )

"""The running totals of migration 0004, kept by SQLite triggers too.

PostgreSQL keeps ``CampaignTally`` and ``AnnotatorTally`` with statement-level triggers
(0004); SQLite has only row-level ones, so these apply each row's change as it is written,
to the same rows under the same rules (shard ``pair id % 16``; a pair counts while not
held; a judgement counts on its UTC day while not undone). Updates fire only when a
column the totals read changes, so the judging path's lease counts cost nothing. With
both backends keeping the totals, progress reads them the same way everywhere. The price
is on bulk writes: inserting 200,000 pairs through ``executemany`` took 3.8-4.0 s with the
triggers against 1.6-1.9 s without (SQLite 3.40, in memory), which SQLite, the development
and test backend, can pay. On PostgreSQL this migration does nothing.
"""

from django.db import migrations

SHARDS = 16

PAIR_ADD = """
    INSERT INTO annotation_campaigntally (campaign_id, shard, pairs, labels_left)
    VALUES ({row}.campaign_id, {row}.id % {shards},
            CASE WHEN {row}.held THEN 0 ELSE 1 END, CASE WHEN {row}.held THEN 0 ELSE {row}.needed END)
    ON CONFLICT (campaign_id, shard) DO UPDATE
        SET pairs = pairs + excluded.pairs, labels_left = labels_left + excluded.labels_left;
"""

PAIR_SUBTRACT = """
    UPDATE annotation_campaigntally
    SET pairs = pairs - (CASE WHEN {row}.held THEN 0 ELSE 1 END),
        labels_left = labels_left - (CASE WHEN {row}.held THEN 0 ELSE {row}.needed END)
    WHERE campaign_id = {row}.campaign_id AND shard = {row}.id % {shards};
"""

JUDGEMENT_KEY = """
    (SELECT campaign_id FROM annotation_pair WHERE id = {row}.pair_id), {row}.annotator_id,
    date({row}.created_at)
"""

JUDGEMENT_ADD = """
    INSERT INTO annotation_annotatortally (campaign_id, annotator_id, day, judged)
    SELECT {key}, 1 WHERE {row}.undone_at IS NULL
        AND EXISTS (SELECT 1 FROM annotation_pair WHERE id = {row}.pair_id)
    ON CONFLICT (campaign_id, annotator_id, day) DO UPDATE SET judged = judged + 1;
"""

JUDGEMENT_SUBTRACT = """
    UPDATE annotation_annotatortally SET judged = judged - 1
    WHERE {row}.undone_at IS NULL
      AND campaign_id = (SELECT campaign_id FROM annotation_pair WHERE id = {row}.pair_id)
      AND annotator_id = {row}.annotator_id AND day = date({row}.created_at);
"""


def _pair(step: str, row: str) -> str:
    return step.format(row=row, shards=SHARDS)


def _judgement(step: str, row: str) -> str:
    return step.format(row=row, key=JUDGEMENT_KEY.format(row=row))


TRIGGERS = [
    "CREATE TRIGGER annotation_pair_tally_insert AFTER INSERT ON annotation_pair BEGIN"
    f"{_pair(PAIR_ADD, 'NEW')} END",
    "CREATE TRIGGER annotation_pair_tally_update AFTER UPDATE OF campaign_id, held, needed "
    "ON annotation_pair WHEN OLD.campaign_id IS NOT NEW.campaign_id "
    "OR OLD.held IS NOT NEW.held OR OLD.needed IS NOT NEW.needed BEGIN"
    f"{_pair(PAIR_SUBTRACT, 'OLD')}{_pair(PAIR_ADD, 'NEW')} END",
    # An update only: when a whole campaign goes, its tally rows may already be gone.
    "CREATE TRIGGER annotation_pair_tally_delete AFTER DELETE ON annotation_pair BEGIN"
    f"{_pair(PAIR_SUBTRACT, 'OLD')} END",
    "CREATE TRIGGER annotation_judgement_tally_insert AFTER INSERT ON annotation_judgement BEGIN"
    f"{_judgement(JUDGEMENT_ADD, 'NEW')} END",
    "CREATE TRIGGER annotation_judgement_tally_update AFTER UPDATE OF pair_id, annotator_id, "
    "created_at, undone_at ON annotation_judgement WHEN OLD.pair_id IS NOT NEW.pair_id "
    "OR OLD.annotator_id IS NOT NEW.annotator_id OR OLD.created_at IS NOT NEW.created_at "
    "OR OLD.undone_at IS NOT NEW.undone_at BEGIN"
    f"{_judgement(JUDGEMENT_SUBTRACT, 'OLD')}{_judgement(JUDGEMENT_ADD, 'NEW')} END",
    "CREATE TRIGGER annotation_judgement_tally_delete AFTER DELETE ON annotation_judgement BEGIN"
    f"{_judgement(JUDGEMENT_SUBTRACT, 'OLD')} END",
]

COUNT_EXISTING = [
    "DELETE FROM annotation_campaigntally",
    "DELETE FROM annotation_annotatortally",
    f"""INSERT INTO annotation_campaigntally (campaign_id, shard, pairs, labels_left)
    SELECT campaign_id, id % {SHARDS}, sum(CASE WHEN held THEN 0 ELSE 1 END),
           sum(CASE WHEN held THEN 0 ELSE needed END)
    FROM annotation_pair GROUP BY 1, 2""",
    """INSERT INTO annotation_annotatortally (campaign_id, annotator_id, day, judged)
    SELECT p.campaign_id, j.annotator_id, date(j.created_at), count(*)
    FROM annotation_judgement j JOIN annotation_pair p ON p.id = j.pair_id
    WHERE j.undone_at IS NULL GROUP BY 1, 2, 3""",
]

UNINSTALL = [
    f"DROP TRIGGER IF EXISTS annotation_{table}_tally_{event}"
    for table in ("pair", "judgement")
    for event in ("insert", "update", "delete")
]


def install(apps, schema_editor) -> None:
    """Create the SQLite triggers and count what is already there (SQLite only: PostgreSQL
    has its own since 0004)."""
    if schema_editor.connection.vendor == "sqlite":
        for statement in TRIGGERS + COUNT_EXISTING:
            schema_editor.execute(statement, params=None)


def uninstall(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "sqlite":
        for statement in UNINSTALL:
            schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [("annotation", "0015_pair_open_slots_rule")]

    operations = [migrations.RunPython(install, uninstall)]

"""Running totals that progress reads, kept exact by PostgreSQL triggers.

``CampaignTally``: pairs not held and the labels they still need, per campaign and shard
(``pair id % 16``). ``AnnotatorTally``: live judgements per campaign, annotator and UTC
day. Statement-level triggers with transition tables see every write to the pair and
judgement tables (the ORM, ``create_campaign``'s raw INSERTs, COPY, bulk updates,
cascading deletes) and apply its change in the same transaction; rows are updated in key
order, so two multi-row statements cannot deadlock on them. On SQLite nothing is
installed here: migration 0013 adds its row-level triggers.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

SHARDS = 16

PAIR_TRIGGERS = f"""
CREATE FUNCTION annotation_pair_tally_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO annotation_campaigntally (campaign_id, shard, pairs, labels_left)
    SELECT campaign_id, (id % {SHARDS})::smallint,
           count(*) FILTER (WHERE NOT held), coalesce(sum(needed) FILTER (WHERE NOT held), 0)
    FROM tally_new GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (campaign_id, shard) DO UPDATE
        SET pairs = annotation_campaigntally.pairs + EXCLUDED.pairs,
            labels_left = annotation_campaigntally.labels_left + EXCLUDED.labels_left;
    RETURN NULL;
END $$;

CREATE FUNCTION annotation_pair_tally_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    change record;
BEGIN
    FOR change IN
        SELECT campaign_id, shard, sum(pairs) AS pairs, sum(labels_left) AS labels_left
        FROM (
            SELECT campaign_id, (id % {SHARDS})::smallint AS shard,
                   CASE WHEN held THEN 0 ELSE 1 END AS pairs,
                   CASE WHEN held THEN 0 ELSE needed END AS labels_left
            FROM tally_new
            UNION ALL
            SELECT campaign_id, (id % {SHARDS})::smallint,
                   CASE WHEN held THEN 0 ELSE -1 END, CASE WHEN held THEN 0 ELSE -needed END
            FROM tally_old
        ) AS rows
        GROUP BY campaign_id, shard
        HAVING sum(pairs) <> 0 OR sum(labels_left) <> 0
        ORDER BY campaign_id, shard
    LOOP
        UPDATE annotation_campaigntally
        SET pairs = pairs + change.pairs, labels_left = labels_left + change.labels_left
        WHERE campaign_id = change.campaign_id AND shard = change.shard;
    END LOOP;
    RETURN NULL;
END $$;

CREATE FUNCTION annotation_pair_tally_delete() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    change record;
BEGIN
    FOR change IN
        SELECT campaign_id, (id % {SHARDS})::smallint AS shard,
               count(*) FILTER (WHERE NOT held) AS pairs,
               coalesce(sum(needed) FILTER (WHERE NOT held), 0) AS labels_left
        FROM tally_old GROUP BY 1, 2 ORDER BY 1, 2
    LOOP
        -- An update only: when a whole campaign goes, its tally rows may already be gone.
        UPDATE annotation_campaigntally
        SET pairs = pairs - change.pairs, labels_left = labels_left - change.labels_left
        WHERE campaign_id = change.campaign_id AND shard = change.shard;
    END LOOP;
    RETURN NULL;
END $$;

CREATE FUNCTION annotation_pair_tally_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM annotation_campaigntally;
    RETURN NULL;
END $$;

CREATE TRIGGER annotation_pair_tally_insert AFTER INSERT ON annotation_pair
    REFERENCING NEW TABLE AS tally_new
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_pair_tally_insert();
CREATE TRIGGER annotation_pair_tally_update AFTER UPDATE ON annotation_pair
    REFERENCING OLD TABLE AS tally_old NEW TABLE AS tally_new
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_pair_tally_update();
CREATE TRIGGER annotation_pair_tally_delete AFTER DELETE ON annotation_pair
    REFERENCING OLD TABLE AS tally_old
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_pair_tally_delete();
CREATE TRIGGER annotation_pair_tally_truncate AFTER TRUNCATE ON annotation_pair
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_pair_tally_truncate();

INSERT INTO annotation_campaigntally (campaign_id, shard, pairs, labels_left)
SELECT campaign_id, (id % {SHARDS})::smallint,
       count(*) FILTER (WHERE NOT held), coalesce(sum(needed) FILTER (WHERE NOT held), 0)
FROM annotation_pair GROUP BY 1, 2;
"""

JUDGEMENT_TRIGGERS = """
CREATE FUNCTION annotation_judgement_tally_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO annotation_annotatortally (campaign_id, annotator_id, day, judged)
    SELECT p.campaign_id, j.annotator_id, (j.created_at AT TIME ZONE 'UTC')::date, count(*)
    FROM tally_new j JOIN annotation_pair p ON p.id = j.pair_id
    WHERE j.undone_at IS NULL
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (campaign_id, annotator_id, day) DO UPDATE
        SET judged = annotation_annotatortally.judged + EXCLUDED.judged;
    RETURN NULL;
END $$;

CREATE FUNCTION annotation_judgement_tally_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    change record;
BEGIN
    FOR change IN
        SELECT campaign_id, annotator_id, day, sum(judged) AS judged
        FROM (
            SELECT p.campaign_id, j.annotator_id, (j.created_at AT TIME ZONE 'UTC')::date AS day,
                   CASE WHEN j.undone_at IS NULL THEN 1 ELSE 0 END AS judged
            FROM tally_new j JOIN annotation_pair p ON p.id = j.pair_id
            UNION ALL
            SELECT p.campaign_id, j.annotator_id, (j.created_at AT TIME ZONE 'UTC')::date,
                   CASE WHEN j.undone_at IS NULL THEN -1 ELSE 0 END
            FROM tally_old j JOIN annotation_pair p ON p.id = j.pair_id
        ) AS rows
        GROUP BY 1, 2, 3
        HAVING sum(judged) <> 0
        ORDER BY 1, 2, 3
    LOOP
        INSERT INTO annotation_annotatortally (campaign_id, annotator_id, day, judged)
        VALUES (change.campaign_id, change.annotator_id, change.day, change.judged)
        ON CONFLICT (campaign_id, annotator_id, day) DO UPDATE
            SET judged = annotation_annotatortally.judged + EXCLUDED.judged;
    END LOOP;
    RETURN NULL;
END $$;

CREATE FUNCTION annotation_judgement_tally_delete() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    change record;
BEGIN
    FOR change IN
        SELECT p.campaign_id, j.annotator_id, (j.created_at AT TIME ZONE 'UTC')::date AS day,
               count(*) AS judged
        FROM tally_old j JOIN annotation_pair p ON p.id = j.pair_id
        WHERE j.undone_at IS NULL
        GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    LOOP
        -- An update only: when a whole campaign goes, its tally rows may already be gone.
        UPDATE annotation_annotatortally SET judged = judged - change.judged
        WHERE campaign_id = change.campaign_id AND annotator_id = change.annotator_id
          AND day = change.day;
    END LOOP;
    RETURN NULL;
END $$;

CREATE FUNCTION annotation_judgement_tally_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM annotation_annotatortally;
    RETURN NULL;
END $$;

CREATE TRIGGER annotation_judgement_tally_insert AFTER INSERT ON annotation_judgement
    REFERENCING NEW TABLE AS tally_new
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_judgement_tally_insert();
CREATE TRIGGER annotation_judgement_tally_update AFTER UPDATE ON annotation_judgement
    REFERENCING OLD TABLE AS tally_old NEW TABLE AS tally_new
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_judgement_tally_update();
CREATE TRIGGER annotation_judgement_tally_delete AFTER DELETE ON annotation_judgement
    REFERENCING OLD TABLE AS tally_old
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_judgement_tally_delete();
CREATE TRIGGER annotation_judgement_tally_truncate AFTER TRUNCATE ON annotation_judgement
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_judgement_tally_truncate();

INSERT INTO annotation_annotatortally (campaign_id, annotator_id, day, judged)
SELECT p.campaign_id, j.annotator_id, (j.created_at AT TIME ZONE 'UTC')::date, count(*)
FROM annotation_judgement j JOIN annotation_pair p ON p.id = j.pair_id
WHERE j.undone_at IS NULL
GROUP BY 1, 2, 3;
"""

UNINSTALL = """
DROP TRIGGER IF EXISTS annotation_pair_tally_insert ON annotation_pair;
DROP TRIGGER IF EXISTS annotation_pair_tally_update ON annotation_pair;
DROP TRIGGER IF EXISTS annotation_pair_tally_delete ON annotation_pair;
DROP TRIGGER IF EXISTS annotation_pair_tally_truncate ON annotation_pair;
DROP FUNCTION IF EXISTS annotation_pair_tally_insert();
DROP FUNCTION IF EXISTS annotation_pair_tally_update();
DROP FUNCTION IF EXISTS annotation_pair_tally_delete();
DROP FUNCTION IF EXISTS annotation_pair_tally_truncate();
DROP TRIGGER IF EXISTS annotation_judgement_tally_insert ON annotation_judgement;
DROP TRIGGER IF EXISTS annotation_judgement_tally_update ON annotation_judgement;
DROP TRIGGER IF EXISTS annotation_judgement_tally_delete ON annotation_judgement;
DROP TRIGGER IF EXISTS annotation_judgement_tally_truncate ON annotation_judgement;
DROP FUNCTION IF EXISTS annotation_judgement_tally_insert();
DROP FUNCTION IF EXISTS annotation_judgement_tally_update();
DROP FUNCTION IF EXISTS annotation_judgement_tally_delete();
DROP FUNCTION IF EXISTS annotation_judgement_tally_truncate();
"""


def install(apps, schema_editor) -> None:
    """Create the triggers and count what is already there (PostgreSQL only)."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PAIR_TRIGGERS, params=None)
        schema_editor.execute(JUDGEMENT_TRIGGERS, params=None)


def uninstall(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(UNINSTALL, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0003_pair_auto_label"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="AnnotatorTally",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("day", models.DateField()),
                ("judged", models.IntegerField(default=0)),
                (
                    "annotator",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "campaign",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="annotation.campaign",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("campaign", "annotator", "day"), name="annotator_tally_day"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="CampaignTally",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("shard", models.SmallIntegerField()),
                ("pairs", models.BigIntegerField(default=0, help_text="Pairs not held.")),
                (
                    "labels_left",
                    models.BigIntegerField(
                        default=0, help_text="Sum of needed over pairs not held."
                    ),
                ),
                (
                    "campaign",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="tallies",
                        to="annotation.campaign",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("campaign", "shard"), name="campaign_tally_shard"
                    )
                ],
            },
        ),
        migrations.RunPython(install, uninstall),
    ]

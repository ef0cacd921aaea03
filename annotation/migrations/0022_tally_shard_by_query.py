"""A pair counts in its query's tally shard (``caption id % 16``), not its own (``pair id % 16``).

A label under an adaptive judging order re-orders its whole query (the label's pair, then
pairs parked or reopened in later statements), so the submit locks the query's tally rows
up front, in shard order. With shards by pair id a query of ten pairs took about ten of a
campaign's sixteen rows, so almost every two concurrent submits waited for each other
(PostgreSQL sessions waiting on a tally row in 32% of samples at 250 annotators,
``bench/load.py --watch-locks``; 2.3% after). By caption every pair of a query shares one
row. Sums over a campaign's shards, all that readers take, are unchanged.

The triggers of migrations 0004 (PostgreSQL) and 0016 (SQLite) are installed again with the
shard taken from the caption, their text derived from those migrations' own, and the rows
counted again, the pair table locked against writers meanwhile; going back restores the
pair id.
"""

import importlib

from django.db import migrations

POSTGRES = importlib.import_module("annotation.migrations.0004_tallies")
SQLITE = importlib.import_module("annotation.migrations.0016_sqlite_tallies")


def _postgres(key: str) -> str:
    """0004's pair-tally functions, replaced, with the shard taken from ``key``, and the
    recount 0004 ends with."""
    functions, rest = POSTGRES.PAIR_TRIGGERS.split("CREATE TRIGGER", 1)
    recount = rest[rest.index("INSERT INTO annotation_campaigntally") :]
    text = (
        "LOCK TABLE annotation_pair IN SHARE ROW EXCLUSIVE MODE;\n"
        + functions.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION")
        + "DELETE FROM annotation_campaigntally;\n"
        + recount
    )
    return text.replace("(id % ", f"({key} % ")


def _sqlite(key: str) -> list[str]:
    """0016's pair triggers with the shard taken from ``key``, and its recount of the pairs."""
    pair_triggers = [t for t in SQLITE.TRIGGERS if " ON annotation_pair " in t]
    recount = [s for s in SQLITE.COUNT_EXISTING if "annotation_campaigntally" in s]
    return [
        *(s for s in SQLITE.UNINSTALL if "_pair_" in s),
        *(
            t.replace("NEW.id %", f"NEW.{key} %").replace("OLD.id %", f"OLD.{key} %")
            for t in pair_triggers
        ),
        *(s.replace("SELECT campaign_id, id %", f"SELECT campaign_id, {key} %") for s in recount),
    ]


def _reshard(key: str):
    def run(apps, schema_editor) -> None:
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(_postgres(key), params=None)
        elif schema_editor.connection.vendor == "sqlite":
            for statement in _sqlite(key):
                schema_editor.execute(statement, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [("annotation", "0021_judging_page_media")]
    operations = [migrations.RunPython(_reshard("caption_id"), _reshard("id"))]

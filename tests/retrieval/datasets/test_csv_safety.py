"""CSV cells a spreadsheet would run as formulas: neutralised in every retrieval export, and
undone by the readers of the files firepool reads back."""

import csv
import io
import math
import random

import numpy as np
import pytest
from django.core.management import call_command

from retrieval.formats import csv_safety
from retrieval.formats.generic import csv_rows
from retrieval.models import RetrievalModel, Run
from retrieval.scoring.leaderboard import JUDGED
from tests.factories import pooled_world, random_run

HOSTILE = ('=HYPERLINK("http://x","y")', "+1", "-1+2", "@SUM(A1)", "\tx", "\rx")
"""Names a spreadsheet would evaluate (OWASP's triggers), each stored as a name."""


def parse(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


def assert_numeric(value: str) -> None:
    """A number cell: written bare, and a spreadsheet (or float) reads it as a number."""
    assert not value.startswith(csv_safety.QUOTE), value
    assert math.isfinite(float(value)), value


# The helper on its own.


def test_triggers_get_a_quote_and_numbers_stay_numbers():
    line = csv_safety.csv_line([*HOSTILE, -0.5, -3, np.float64(-0.25), np.int64(-7), None, "ok"])
    cells = next(csv.reader(io.StringIO(line, newline="")))
    assert cells[: len(HOSTILE)] == ["'" + name for name in HOSTILE]
    assert cells[len(HOSTILE) :] == ["-0.5", "-3", "-0.25", "-7", "", "ok"]
    # Text that looks like a number is still text: a name "-1" is escaped, the number is not.
    assert csv_safety.csv_line(["-1", -1]) == "'-1,-1\n"
    # Excel reads -inf as a formula too; NaN and inf cannot start one.
    assert csv_safety.csv_line([-math.inf, math.inf, math.nan]) == "'-inf,inf,nan\n"
    assert csv_safety.csv_line([True, ""]) == "True,\n"
    assert csv_safety.csv_line([""]) == '""\n'


def test_separators_other_locales_use_are_quoted():
    """A spreadsheet splitting on ``;`` or tab must not find a cell starting at ``=``."""
    line = csv_safety.csv_line(["a;=1+1", "b\t=2", "plain"])
    assert line == '"a;=1+1","b\t=2",plain\n'


def random_text(rng: random.Random) -> str:
    alphabet = "'=+-@\t\r\n\0,;\" ax1é"
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 6)))


def test_escape_is_undone_exactly_and_is_safe():
    """Against brute force over short strings of the interesting characters: every written
    cell is safe, and reading it back (csv, then unescape) gives the text written."""
    rng = random.Random(26)
    texts = {random_text(rng) for _ in range(20_000)} | {"'", "''", "'=", "''=x", "'a", "-"}
    for text in sorted(texts):
        escaped = csv_safety.escape(text)
        assert escaped[:1] not in csv_safety.TRIGGERS or escaped == "", repr(text)
        assert csv_safety.unescape(escaped) == text, repr(text)
        written = csv_safety.csv_line([text, 1.5])
        cells = next(csv.reader(io.StringIO(written, newline="")))
        assert cells == [escaped, "1.5"], repr(text)
    # Text nobody escaped reads as itself unless it is quotes then a trigger.
    assert csv_safety.unescape("'tis") == "'tis" and csv_safety.unescape("'=x") == "=x"


def test_csv_rows_undoes_the_escape(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text(
        csv_safety.csv_line(["caption_key", "video_key"])
        + "".join(csv_safety.csv_line([name, f"v{i}"]) for i, name in enumerate(HOSTILE)),
        encoding="utf-8",
        newline="",
    )
    rows = [values for _, values in csv_rows(path, ("caption_key",))]
    assert [row["caption_key"] for row in rows] == list(HOSTILE)


# The exports: hostile names stored, file fetched through the real view or command.


@pytest.fixture
def hostile_world(db):
    """The pooled world with six more runs, every run and model renamed to a hostile name
    straight in the database (whatever rule the forms apply, the rows are what is written)."""
    dataset = pooled_world("hostile")
    for i in range(len(HOSTILE) - 2):
        random_run(dataset, f"extra{i}", 10 + i)
    runs = list(Run.objects.filter(dataset=dataset).order_by("pk"))
    assert len(runs) == len(HOSTILE)
    for run, name in zip(runs, HOSTILE, strict=True):
        Run.objects.filter(pk=run.pk).update(name=name)
        RetrievalModel.objects.filter(pk=run.model_id).update(name=name)
    return dataset


def test_leaderboard_csv_neutralises_names(hostile_world, admin_client):
    response = admin_client.get("/datasets/hostile/leaderboard/export/csv/?labels=pooled")
    assert response.status_code == 200
    rows = parse(response.content.decode())
    assert sorted(row["run"] for row in rows) == sorted("'" + name for name in HOSTILE)
    assert sorted(row["model"] for row in rows) == sorted("'" + name for name in HOSTILE)
    numeric = [c for c in rows[0] if c.startswith(("corrected ", "original ", "true ", "bias "))]
    numeric = [c for c in numeric if not c.endswith(" mark")]
    assert numeric
    for row in rows:
        for column in numeric:
            if row[column]:
                assert_numeric(row[column])
        assert_numeric(row[JUDGED])


def test_leaderboard_command_csv_neutralises_names(hostile_world):
    out = io.StringIO()
    call_command(
        "leaderboard", dataset="hostile", labels="pooled", format="csv", resamples=20, stdout=out
    )
    rows = parse(out.getvalue())
    assert sorted(row["run"] for row in rows) == sorted("'" + name for name in HOSTILE)


def test_rescore_csv_neutralises_names(hostile_world):
    out = io.StringIO()
    call_command("rescore", dataset="hostile", labels="pooled", format="csv", stdout=out)
    rows = parse(out.getvalue())
    assert {row["run"] for row in rows} == {"'" + name for name in HOSTILE}
    for row in rows:
        for column, value in row.items():
            if column not in ("run", "positives") and value:
                assert_numeric(value)

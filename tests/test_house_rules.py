"""Rules of the house that no linter knows, checked over the source (CONTRIBUTING.md)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("config", "jobs", "retrieval", "annotation")
CHECKED = (*APPS, "bench")
"""Where no code may read the database vendor: the apps and the benchmarks."""

READS_THE_VENDOR = {
    # The one place that says what differs between the databases.
    "config/backends.py",
    # The statement registry keys each compiled statement by the backend it was filled for.
    "config/raw_sql.py",
}


def _sources(packages=APPS):
    for app in packages:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path.relative_to(ROOT).as_posix(), path


def vendor_reads(source: str) -> list[int]:
    """The lines of ``source`` that read a connection's ``vendor``."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and node.attr == "vendor"
    ]


def test_the_check_finds_a_vendor_branch():
    assert vendor_reads("if connection.vendor == 'postgresql':\n    pass\n") == [1]
    assert vendor_reads("x = BACKENDS.get(conn.vendor)\ny = vendor\n") == [1]


def test_no_code_branches_on_the_database_vendor():
    """A difference between databases is an operation of :mod:`config.backends` (or a
    migration's own SQL): services and benchmarks ask it, never which database they run on."""
    sources = list(_sources(CHECKED))
    assert any(name.startswith("bench/") for name, _ in sources)  # the benchmarks are read
    found = [
        f"{name}:{line}"
        for name, path in sources
        if name not in READS_THE_VENDOR
        for line in vendor_reads(path.read_text())
    ]
    assert found == []

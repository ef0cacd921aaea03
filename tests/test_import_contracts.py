"""The ``acyclic_modules`` contract finds every module cycle, and only cycles."""

import grimp

from tests.import_contracts import _cycles


def _graph(*imports: tuple[str, str]) -> grimp.ImportGraph:
    graph = grimp.ImportGraph()
    for importer, imported in imports:
        graph.add_import(importer=importer, imported=imported)
    return graph


def test_a_chain_is_no_cycle_and_a_closed_chain_is_one():
    chain = (("a.x", "a.y"), ("a.y", "b.z"), ("a.x", "b.z"))
    assert _cycles(_graph(*chain), {"a", "b"}) == []
    closed = _graph(*chain, ("b.z", "a.x"), ("c.p", "c.q"), ("c.q", "c.p"))
    assert _cycles(closed, {"a", "b", "c"}) == [["a.x", "a.y", "b.z"], ["c.p", "c.q"]]
    # Only the packages asked about.
    assert _cycles(closed, {"c"}) == [["c.p", "c.q"]]


def test_packages_that_import_each_other_through_different_modules_are_no_cycle():
    # gold.tasks uses the pair store; the judging path serves gold tasks: no module cycle.
    graph = _graph(
        ("annotation.gold.tasks", "annotation.judging.pair_state"),
        ("annotation.judging.submit", "annotation.gold.tasks"),
    )
    assert _cycles(graph, {"annotation"}) == []

"""Contract types of our own for ``lint-imports`` (registered in pyproject.toml).

``acyclic_modules``: no import cycle between modules anywhere under the given packages, lazy
imports included. import-linter's ``acyclic_siblings`` squashes each child package into one
node, which forbids a concept package (``annotation.gold``: its pure core, its service, its
views) from using the pair store of ``annotation.judging`` while the judging path serves gold
tasks; what must never happen is a cycle between the modules themselves, which this checks
over the whole graph (Tarjan's strongly connected components).
"""

from __future__ import annotations

import grimp
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


def _cycles(graph: grimp.ImportGraph, roots: set[str]) -> list[list[str]]:
    """The strongly connected components of more than one module (or a module importing
    itself) among the modules under ``roots``."""
    nodes = sorted(m for m in graph.modules if m.split(".")[0] in roots)
    inside = set(nodes)
    edges = {
        m: sorted(i for i in graph.find_modules_directly_imported_by(m) if i in inside)
        for m in nodes
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in nodes:
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            node, position = work.pop()
            if position == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            recursed = False
            for j in range(position, len(edges[node])):
                child = edges[node][j]
                if child not in index:
                    work.append((node, j + 1))
                    work.append((child, 0))
                    recursed = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if recursed:
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges[node]:
                    found.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


class AcyclicModulesContract(Contract):
    """No import cycle between any two modules under ``packages``."""

    type_name = "acyclic_modules"
    packages = fields.ListField(subfield=fields.StringField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        cycles = _cycles(graph, set(self.packages))  # type: ignore[arg-type]
        return ContractCheck(kept=not cycles, metadata={"cycles": cycles})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for component in check.metadata["cycles"]:
            output.print_error(f"Modules importing each other: {', '.join(component)}")
            output.new_line()

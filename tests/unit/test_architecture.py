"""The package layout holds: layers point one way, no import cycles (lazy imports included)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.fixtures.paths import ROOT

PACKAGES = ("schemas", "agents", "streams")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere in its body (top level or lazily)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for target in targets:
                owner = _owner(target, modules)
                if owner and target.startswith(owner):
                    deps.add(owner)
                    break
        deps.discard(name)
        graph[name] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_sees_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_the_graph_sees_lazy_imports() -> None:
    graph = import_graph()
    # streams.runtime.worker imports the app inside ``run`` only.
    assert "streams.runtime.app" in graph["streams.runtime.worker"]


def test_no_module_imports_itself_back() -> None:
    assert cycles(import_graph()) == []


def _reaches_outside(
    graph: dict[str, set[str]], package: str, allowed: tuple[str, ...]
) -> set[str]:
    return {
        dep
        for name, deps in graph.items()
        if name.split(".")[0] == package
        for dep in deps
        if dep.split(".")[0] not in (package, *allowed)
    }


def test_layers_point_one_way() -> None:
    """schemas is the contract, agents build on it, streams runs them: never the other way."""
    graph = import_graph()
    assert _reaches_outside(graph, "schemas", ()) == set()
    assert _reaches_outside(graph, "agents", ("schemas",)) == set()


def test_the_layer_check_sees_a_step_back() -> None:
    graph = {"agents.stage": {"schemas.records", "streams.app"}, "schemas.records": set()}
    assert _reaches_outside(graph, "agents", ("schemas",)) == {"streams.app"}

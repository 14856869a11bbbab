"""The package layout holds: layers point one way, no import cycles (lazy imports included)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from tests.fixtures.paths import ROOT, tree

PACKAGES = ("schemas", "agents", "streams")
# The one top-level import name: the folders above are its subpackages.
TOP = "baton_kafka"


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join((TOP, *(parts[:-1] if parts[-1] == "__init__" else parts)))
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
    assert (
        "baton_kafka.streams.runtime.faust_app.app" in graph["baton_kafka.streams.runtime.worker"]
    )


def test_no_module_imports_itself_back() -> None:
    assert cycles(import_graph()) == []


def _reaches_outside(
    graph: dict[str, set[str]], package: str, allowed: tuple[str, ...]
) -> set[str]:
    return {
        dep
        for name, deps in graph.items()
        if name.split(".")[1] == package
        for dep in deps
        if dep.split(".")[1] not in (package, *allowed)
    }


def test_layers_point_one_way() -> None:
    """schemas is the contract, agents build on it, streams runs them: never the other way."""
    graph = import_graph()
    assert _reaches_outside(graph, "schemas", ()) == set()
    assert _reaches_outside(graph, "agents", ("schemas",)) == set()


def test_the_layer_check_sees_a_step_back() -> None:
    graph = {
        "baton_kafka.agents.stage": {"baton_kafka.schemas.records", "baton_kafka.streams.app"},
        "baton_kafka.schemas.records": set(),
    }
    assert _reaches_outside(graph, "agents", ("schemas",)) == {"baton_kafka.streams.app"}


def _bare_imports(source: str) -> list[str]:
    """The imports in ``source`` that name a package folder without the one import name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        found += [n for n in names if n.split(".")[0] in PACKAGES]
    return found


def test_the_bare_import_check_sees_one() -> None:
    assert _bare_imports("import streams.runtime\nfrom agents import x\n") == [
        "streams.runtime",
        "agents",
    ]
    assert _bare_imports(f"from {TOP}.agents import x\nimport {TOP}.schemas\n") == []


def test_everything_imports_the_packages_by_the_one_import_name() -> None:
    """`agents` and `schemas` are other distributions' import names: baton never uses them bare."""
    tops = (*PACKAGES, "tests", "examples")
    bare = {
        str(path.relative_to(ROOT)): hits
        for top in tops
        for path in tree(ROOT / top, "*.py")
        if (hits := _bare_imports(path.read_text("utf-8")))
    }
    assert bare == {}


def test_loading_the_packages_leaves_no_bare_module_behind() -> None:
    import sys

    for name in _modules():
        if not name.endswith("__main__"):
            importlib.import_module(name)
    assert sorted(m for m in sys.modules if m.split(".")[0] in PACKAGES) == []

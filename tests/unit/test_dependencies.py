"""Every third-party module the package imports comes from a distribution it declares."""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
import sys
import tomllib
from importlib.metadata import distribution, packages_distributions
from pathlib import Path

from tests.fixtures.paths import ROOT

PACKAGE_DIRS = ("agents", "schemas", "streams")
# Only for the suite: package code must not need them.
TEST_ONLY_EXTRAS = {"dev"}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> set[str]:
    """The distributions pyproject.toml names: the core list and every extra but the tests'."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra, listed in project["optional-dependencies"].items():
        if extra not in TEST_ONLY_EXTRAS:
            requirements += listed
    return {_normal(re.split(r"[\[<>=!~;\s]", r, maxsplit=1)[0]) for r in requirements}


def imported() -> dict[str, set[str]]:
    """Every absolute import of a module outside the standard library and the package, with the
    files that import it."""
    found: dict[str, set[str]] = {}
    for folder in PACKAGE_DIRS:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.partition(".")[0]
                    if top in sys.stdlib_module_names or top == "baton_kafka":
                        continue
                    found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return found


@functools.cache
def _distributions() -> dict[str, list[str]]:
    return packages_distributions()


def providers(module: str) -> set[str]:
    """The installed distributions a module can come from; for a namespace shared by several
    (``opentelemetry``), only those whose files hold this module."""
    top = module.partition(".")[0]
    candidates = {_normal(d) for d in _distributions().get(top, [])}
    if len(candidates) <= 1:
        return candidates
    spec = importlib.util.find_spec(module)
    origin = Path(spec.origin).resolve() if spec and spec.origin else None
    holders = set()
    for name in candidates:
        files = distribution(name).files or []
        if origin and any(Path(str(f.locate())).resolve() == origin for f in files):
            holders.add(name)
    return holders or candidates


def test_every_imported_distribution_is_declared() -> None:
    names = declared()
    undeclared = {}
    for module, files in sorted(imported().items()):
        dists = providers(module)
        assert dists, f"{module} (imported by {sorted(files)}) is not installed"
        if not dists & names:
            undeclared[module] = (sorted(dists), sorted(files))
    assert not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"


def test_every_declared_distribution_is_pinned() -> None:
    pinned = {
        _normal(line.split("==")[0])
        for line in (ROOT / "constraints.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    }
    assert declared() - pinned == set()


def test_the_check_sees_a_namespace_package_by_its_own_distribution() -> None:
    # opentelemetry is one namespace over several distributions: trace is the API's.
    assert providers("opentelemetry.trace") == {"opentelemetry-api"}
    assert "faust-streaming" in providers("faust")

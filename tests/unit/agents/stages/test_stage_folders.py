"""Each built-in stage lives in its own folder: nothing outside it quotes the stage's name.

A built-in stage's folder (``agents/stages/<name>/``) holds its prompt text, offline rule,
validators, baton update and function, and declares the stage with ``stage()`` as a shop does
(``declared.STAGE``); the rest of baton names it through the folder's ``NAME`` or through the
chain. The chain module is the one place that lists the stages in order.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from baton_kafka.agents.stages import ORDER
from baton_kafka.streams.runtime.chain import BUILTIN
from tests.fixtures.paths import ROOT

PACKAGES = ("schemas", "agents", "streams")
FOLDERS = ROOT / "agents" / "stages"
CHAIN = ROOT / "streams" / "runtime" / "chain.py"
# The one place a ``Stage`` is made: ``stage()``, which every stage is declared with.
DECLARE = ROOT / "agents" / "declare.py"
# Built-in stages still declared outside a folder of their own.
NOT_YET_MOVED: frozenset[str] = frozenset()
# Quotes of a stage's name that are not the stage: (file, name) -> how many, and why.
NOT_THE_STAGE: dict[tuple[str, str], int] = {
    # An HTTP action map's ``lookup`` key (how a remote id is found), a word of that format.
    ("streams/actions/http_map.py", "lookup"): 2,
    # The wire contract: a stored chain entry written before its ``reply`` field was the
    # built-in answering stage's (a record's field value, read by the schema alone).
    ("schemas/baton.py", "strategy"): 1,
}


def _folders() -> dict[str, Path]:
    """Stage name (the folder's ``NAME``) -> its folder."""
    found = {}
    for init in sorted(FOLDERS.glob("*/__init__.py")):
        module = importlib.import_module(f"baton_kafka.agents.stages.{init.parent.name}")
        found[module.NAME] = init.parent
    return found


def quotes(source: str, names: frozenset[str]) -> list[str]:
    """Each string constant in ``source`` that is exactly one of ``names``, in order; those in
    ``__all__`` name a Python object (the ``understand`` function), not the stage."""
    tree = ast.parse(source)
    exported = {
        id(element)
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign | ast.AnnAssign)
        and any(
            isinstance(t, ast.Name) and t.id == "__all__"
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        )
        and node.value is not None
        for element in ast.walk(node.value)
    }
    return [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and n.value in names
        and id(n) not in exported
    ]


def _quoted_outside(folders: dict[str, Path]) -> dict[tuple[str, str], int]:
    found: dict[tuple[str, str], int] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == CHAIN:
                continue
            names = frozenset(n for n, f in folders.items() if f not in path.parents)
            for name in quotes(path.read_text("utf-8"), names):
                key = (path.relative_to(ROOT).as_posix(), name)
                found[key] = found.get(key, 0) + 1
    return found


def test_every_built_in_stage_has_its_folder() -> None:
    assert set(_folders()) | NOT_YET_MOVED == set(BUILTIN.names)
    assert not set(_folders()) & NOT_YET_MOVED


def test_the_folders_order_is_the_chains() -> None:
    assert BUILTIN.names == ORDER


def test_a_stage_folder_holds_the_whole_stage() -> None:
    for name, folder in _folders().items():
        stage = BUILTIN[name]
        parts = {stage.run, stage.update, stage.offline}
        files = [importlib.import_module(part.__module__).__file__ for part in parts if part]
        homes = {Path(f or "").resolve() for f in files}
        assert all(folder.resolve() in home.parents for home in homes), (name, homes)
        prompt = importlib.import_module(f"baton_kafka.agents.stages.{folder.name}.prompt")
        assert stage.prompt.startswith(prompt.TEXT)  # the strategy adds its examples


def test_each_built_in_stage_is_declared_in_its_folder_with_stage() -> None:
    for name, folder in _folders().items():
        declared = importlib.import_module(f"baton_kafka.agents.stages.{folder.name}.declared")
        assert declared.STAGE is BUILTIN[name]


def made_stages(source: str) -> int:
    """How many times ``source`` calls ``Stage(...)`` itself (bare or as an attribute)."""
    return sum(
        isinstance(n, ast.Call)
        and (
            (isinstance(n.func, ast.Name) and n.func.id == "Stage")
            or (isinstance(n.func, ast.Attribute) and n.func.attr == "Stage")
        )
        for n in ast.walk(ast.parse(source))
    )


def test_every_stage_is_made_by_stage_alone() -> None:
    made = {
        path.relative_to(ROOT).as_posix(): count
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if (count := made_stages(path.read_text("utf-8")))
    }
    assert made == {DECLARE.relative_to(ROOT).as_posix(): 1}


def test_the_maker_finder_sees_a_stage_made_directly() -> None:
    assert made_stages("S = Stage(name='x')\nT = stages.Stage(name='y')\nU = stage('z')\n") == 2


def test_only_the_chain_lists_the_built_in_stages_together() -> None:
    declared = {f"baton_kafka.agents.stages.{f.name}.declared" for f in _folders().values()}
    listing = set()
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text("utf-8"))
            imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
            if len(imported & declared) > 1:
                listing.add(path)
    assert listing == {CHAIN}


def test_no_built_in_stage_name_is_quoted_outside_its_folder_and_the_chain() -> None:
    assert _quoted_outside(_folders()) == NOT_THE_STAGE


def test_the_quote_finder_sees_a_quote_and_skips_prose() -> None:
    source = 'X = ("a", "lookup")\nif s == \'lookup\': pass\n"""the lookup docstring"""\n'
    assert quotes(source, frozenset({"lookup"})) == ["lookup", "lookup"]
    assert quotes('__all__ = ["understand"]\nY = "understand"\n', frozenset({"understand"})) == [
        "understand"
    ]

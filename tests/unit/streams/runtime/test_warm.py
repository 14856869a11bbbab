"""A worker compiles the language packs' patterns before its first ticket, not while reading one
(a burst in languages the worker had not read yet paid for them all)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from baton_kafka.agents import packs, risk, staff_notes
from baton_kafka.agents.guards import clauses
from baton_kafka.agents.orders import SQLiteOrderStore
from tests.fixtures.pipelines import in_memory


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every pattern compiled from now on (the ``re`` module's cache hits are not compiles)."""
    compiled: list[object] = []
    inner: Callable[..., Any] = re._compiler.compile  # type: ignore[attr-defined]

    def counted(pattern: object, flags: int = 0) -> Any:
        compiled.append(pattern)
        return inner(pattern, flags)

    monkeypatch.setattr(re._compiler, "compile", counted)  # type: ignore[attr-defined]
    return compiled


def _fresh() -> None:
    """As in a fresh worker: no pattern compiled yet, no reading kept."""
    packs.reset()
    re.purge()
    risk._compiled.cache_clear()
    risk._read_once.cache_clear()
    staff_notes._kinds.cache_clear()


def _read_in_every_language() -> None:
    """What the stages read with the packs, in each shipped language."""
    for language in packs.languages(risk.CONCERN):
        risk.scan("the kettle caught fire", language)
        for concern, group in (("commitments", "kinds"), ("claims", "claims")):
            clauses.marks(concern, language, group)
    staff_notes.flags("please call the customer back")


async def test_a_new_pipeline_has_every_language_pattern_compiled(
    store: SQLiteOrderStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fresh()
    in_memory(store)
    compiled = _counting(monkeypatch)
    _read_in_every_language()
    assert compiled == []


def test_the_count_sees_a_pattern_compiled_on_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    _fresh()
    compiled = _counting(monkeypatch)
    _read_in_every_language()
    assert len(compiled) > 10


def test_warming_the_risk_packs_takes_the_shops_triggers_too() -> None:
    _fresh()
    shop: risk.Triggers = {"xx": {"safety": ("zorbled",)}}
    risk.warm(shop)
    misses = risk._compiled.cache_info().misses
    assert [f.kind for f in risk.scan("it zorbled twice", "xx", extra=shop)] == ["safety"]
    assert risk._compiled.cache_info().misses == misses

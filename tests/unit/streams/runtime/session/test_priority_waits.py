"""``ChainPriority.waited`` and ``working`` without generators do what the context managers do."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from baton_kafka.streams.runtime.session.priority import ChainPriority


class _Plain(ChainPriority):
    """The plain reading: every wait is ``async with self.waiting()``, every turn the
    generator-based context manager whatever the switch says."""

    async def waited(self, awaitable: Awaitable[Any]) -> Any:
        async with self.waiting():
            return await awaitable

    @asynccontextmanager
    async def working(self, first: bool):  # type: ignore[no-untyped-def,override]
        if not self.enabled:
            yield
            return
        async with self._working(first):
            yield


def _inner(kind: str, gate: asyncio.Event) -> Callable[[], Awaitable[str]]:
    async def wait() -> str:
        await gate.wait()
        if kind == "fails":
            raise ValueError("the model failed")
        if kind == "cancelled":
            raise asyncio.CancelledError
        return "answer"

    return wait


async def _script(
    p: ChainPriority, side: str, kind: str, where: str, others: tuple[bool, ...]
) -> list[Any]:
    """One record waiting (``where``: inside its turn, outside any, from a task it started)
    while ``others`` (first stage or not) try to work; every count seen, in order."""
    seen: list[Any] = []
    gate = asyncio.Event()

    def note(label: str) -> None:
        seen.append((label, p.first, p.later, p.overdue, len(p._line)))

    async def waits() -> None:
        try:
            note(f"got {await p.waited(_inner(kind, gate)())}")
        except (ValueError, asyncio.CancelledError) as exc:
            note(f"raised {type(exc).__name__}")

    async def record() -> None:
        if where == "outside":
            await waits()
            return
        async with p.working(first=side == "first"):
            note("working")
            if where == "task":
                await asyncio.create_task(waits())
            else:
                await waits()
            note("done")

    async def other(n: int, first: bool) -> None:
        async with p.working(first=first):
            note(f"other {n} working")
            await asyncio.sleep(0)
        note(f"other {n} done")

    main = asyncio.create_task(record())
    for _ in range(3):
        await asyncio.sleep(0)
    rest = [asyncio.create_task(other(n, first)) for n, first in enumerate(others)]
    for _ in range(5):
        await asyncio.sleep(0)
    note("before the wait ends")
    gate.set()
    await asyncio.gather(main, *rest)
    note("end")
    return seen


CASES = list(
    itertools.product(
        (True, False),  # the priority on or off
        ("first", "later"),
        ("answers", "fails", "cancelled"),
        ("inside", "outside", "task"),
        ((True,), (False,), (True, True, False)),
    )
)


@pytest.mark.parametrize(("enabled", "side", "kind", "where", "others"), CASES)
async def test_waited_and_working_count_as_the_context_managers_do(
    enabled: bool, side: str, kind: str, where: str, others: tuple[bool, ...]
) -> None:
    def made(cls: type[ChainPriority]) -> ChainPriority:
        return cls(first_lanes=1, max_wait_s=30, enabled=enabled)

    fast = await _script(made(ChainPriority), side, kind, where, others)
    plain = await _script(made(_Plain), side, kind, where, others)
    assert fast == plain


async def test_off_a_turn_is_one_shared_object_that_lets_errors_through() -> None:
    p = ChainPriority(enabled=False)
    assert p.working(True) is p.working(False)
    with pytest.raises(ValueError):
        async with p.working(True):
            raise ValueError("the stage failed")
    assert (p.first, p.later) == (0, 0)

"""The stages' turns on one event loop: a ticket already in the chain before a new one."""

from __future__ import annotations

import asyncio
import functools
import heapq
import inspect
import itertools
from collections.abc import AsyncIterator, Awaitable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass
class _Work:
    """One record's work on a stage: which side it is on, its place in line, whether counted."""

    first: bool
    seq: int
    # The task doing it: a task started from within it inherits the context, not the work.
    task: asyncio.Task[Any] | None
    working: bool = False


# The work the running task does, so a wait inside it (a model call) can step aside.
_CURRENT: ContextVar[_Work | None] = ContextVar("baton_chain_priority", default=None)


class ChainPriority:
    """A ticket already in the chain goes before a new ticket's first stage.

    One event loop runs every ready task in turn, so in a burst each ticket's later stages
    wait behind the new tickets' first stage and every ticket finishes late. Here work on the
    first stage starts, and goes on after each wait (a model call, the broker), only while no
    later stage is working and fewer than ``first_lanes`` first-stage records are; the oldest
    ticket waiting goes first. Later stages never wait. A record that waited ``max_wait_s``
    goes on anyway: work waiting on something not marked as a wait holds nothing back long,
    and with a slow model the first stage keeps starting new tickets' calls (a hold of 0.5 s
    halved the model calls in flight of the latency workload on a loaded machine).
    """

    def __init__(
        self, first_lanes: int = 2, max_wait_s: float = 0.05, *, enabled: bool = True
    ) -> None:
        if first_lanes < 1:
            raise ValueError("first_lanes must be at least 1")
        # Off: every record goes on at once, as with no priority at all.
        self.enabled = enabled
        self.first_lanes = first_lanes
        self.max_wait_s = max_wait_s
        # Records working now (not inside a wait), by side.
        self.first = 0
        self.later = 0
        # Records that waited their full ``max_wait_s`` and went on anyway.
        self.overdue = 0
        # (ticket's place, entry's place, future): a record may be in line again after it
        # gave up waiting, so the entry's own place keeps futures from being compared.
        self._line: list[tuple[int, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()
        self._entries = itertools.count()

    def working(self, first: bool) -> AbstractAsyncContextManager[None]:
        """Hold one record's work on a stage: ``first`` for the chain's first stage."""
        # Off, every record's turn is a no-op: one shared object, no generator per record.
        return self._working(first) if self.enabled else _IDLE

    @asynccontextmanager
    async def _working(self, first: bool) -> AsyncIterator[None]:
        work = _Work(first, next(self._seq), asyncio.current_task())
        token = _CURRENT.set(work)
        try:
            await self._start(work)
            try:
                yield
            finally:
                self._stop(work)
        finally:
            _CURRENT.reset(token)

    @asynccontextmanager
    async def waiting(self) -> AsyncIterator[None]:
        """Step aside while the running record waits (a model, the broker, its session)."""
        work = self._aside()
        if work is None:
            yield
            return
        try:
            yield
        except BaseException:
            self._claim(work)  # on its way out (an error, a cancel): no wait in line
            raise
        await self._start(work)

    async def waited(self, awaitable: Awaitable[T]) -> T:
        """``await awaitable`` as a wait: ``async with self.waiting()`` around it, without the
        context manager's generator (every reply and send of a record waits here)."""
        work = self._aside()
        if work is None:
            return await awaitable
        try:
            result = await awaitable
        except BaseException:
            self._claim(work)  # as ``waiting``: on its way out, no wait in line
            raise
        await self._start(work)
        return result

    def _aside(self) -> _Work | None:
        """The running task's work, stopped for a wait; None when it holds no turn."""
        work = _CURRENT.get()
        if work is None or not work.working or work.task is not asyncio.current_task():
            return None
        self._stop(work)
        return work

    def _free(self) -> bool:
        return self.later == 0 and self.first < self.first_lanes

    async def _start(self, work: _Work) -> None:
        if not work.first or (self._free() and not self._line):
            self._claim(work)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._line, (work.seq, next(self._entries), future))
        self._pump()
        if not future.done():
            try:
                await asyncio.wait([future], timeout=self.max_wait_s)
            except asyncio.CancelledError:
                if future.done():
                    # Granted as it was cancelled: give the place on.
                    self.first -= 1
                    self._pump()
                else:
                    future.cancel()
                raise
            if not future.done():
                future.cancel()  # left in line, skipped
                self.first += 1
                self.overdue += 1
        work.working = True

    def _claim(self, work: _Work) -> None:
        if work.first:
            self.first += 1
        else:
            self.later += 1
        work.working = True

    def _stop(self, work: _Work) -> None:
        if not work.working:
            return
        work.working = False
        if work.first:
            self.first -= 1
        else:
            self.later -= 1
        self._pump()

    def _pump(self) -> None:
        """Let the oldest waiting first-stage records go on while there is room."""
        while self._line and self._free():
            _, _, future = heapq.heappop(self._line)
            if future.done():
                continue  # gave up waiting, or cancelled
            future.set_result(None)
            self.first += 1


# A turn when the priority is off: ``async with`` it does nothing.
_IDLE: AbstractAsyncContextManager[None] = nullcontext()


class Paced:
    """``target`` with every call that returns an awaitable counted as a wait of
    ``priority`` (a model's or an order source's calls): the chain's other work goes on."""

    def __init__(self, target: Any, priority: ChainPriority) -> None:
        self._target = target
        self._priority = priority

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if not callable(value) or inspect.isclass(value):
            return value
        priority = self._priority

        @functools.wraps(value)
        def call(*args: Any, **kwargs: Any) -> Any:
            result = value(*args, **kwargs)
            return priority.waited(result) if inspect.isawaitable(result) else result

        return call

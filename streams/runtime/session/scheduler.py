"""Concurrency without losing order: sessions run side by side, each one strictly in sequence."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from baton_kafka.streams.observe.shown import shown

log = logging.getLogger("baton.scheduler")

Handler = Callable[[Any], Awaitable[None]]


@dataclass
class _Held:
    """A record not acked yet; ``done`` once its handler finished."""

    event: Any
    done: bool = False


class SessionScheduler:
    """Feeds a stream's events to ``handle``: concurrent across keys, sequential within a key.

    An event is acked only when its handler and those of every earlier record of its partition
    finished. Faust commits the acked offsets, so a crash replays every unfinished record.

    With ``max_queued_per_key``, a key that already has that many records held gets its next
    ones passed to the ``overflow`` handler of :meth:`run` at once instead of queued: one busy
    key cannot take every buffered place and stall the other keys.
    """

    def __init__(
        self,
        name: str,
        *,
        max_running: int,
        max_buffered: int,
        max_queued_per_key: int | None = None,
    ) -> None:
        self.name = name
        self._running = asyncio.Semaphore(max_running)
        self._buffered = asyncio.Semaphore(max_buffered)
        self.max_queued_per_key = max_queued_per_key
        self._tails: dict[bytes, asyncio.Task[None]] = {}
        # Per key, its records held and not finished (running or waiting their turn).
        self._queued: dict[bytes, int] = {}
        # Overflow tasks, referenced until done (the loop keeps only weak references).
        self._overflowing: set[asyncio.Task[None]] = set()
        # Per partition, its records in offset order with a "handler finished" mark. Acks go
        # out strictly in this order: Faust (0.15) commits past a single unacked record at the
        # head of a partition when the offsets acked after it are consecutive.
        self._unacked: dict[Any, deque[_Held]] = {}
        self._ack_lock = asyncio.Lock()
        self.in_flight = 0

    async def run(
        self,
        stream: Any,
        handle: Handler,
        overflow: Handler | None = None,
        bypass: Callable[[Any], bool] | None = None,
        prepare: Callable[[Any], Any] | None = None,
        arrived: Callable[[Any], None] | None = None,
        ready: Handler | None = None,
        key_of: Callable[[Any], bytes] | None = None,
    ) -> None:
        """Consume ``stream`` (a Faust stream with acks disabled) until it ends.

        ``prepare`` turns each event into what ``bypass`` and the handlers are given, once per
        event (the event itself when None); the event is what gets acked. ``key_of`` reads the
        key records run in sequence by from that (the record's key when None).

        ``overflow`` takes the records of a key beyond ``max_queued_per_key``; it runs at once,
        beside the key's queued records, and its record is acked like any other once it returns.
        A record ``bypass`` holds true of (one its key's session will refuse: it touches no
        state of the key) goes to ``handle`` at once, beside the key's queue, and takes no
        place in it: another sender cannot fill or hold up a session's queue. ``arrived`` is
        told of each record as it takes its place in its key's queue; ``ready``, awaited once
        the key's earlier records finished and before the record takes one of the running
        places, holds it back without holding up the other keys.
        """
        if self.max_queued_per_key is not None and overflow is None:
            raise ValueError("a scheduler with max_queued_per_key needs an overflow handler")
        async for event in stream.events():
            await self._buffered.acquire()
            held = self._hold(event)
            item = event if prepare is None else prepare(event)
            key = bytes(event.key or b"") if key_of is None else key_of(item)
            queued = self._queued.get(key, 0)
            cap = self.max_queued_per_key
            aside = None
            if bypass is not None and bypass(item):
                aside = handle
            elif overflow is not None and cap is not None and queued >= cap:
                aside = overflow
            if aside is not None:
                task = asyncio.create_task(self._one(None, held, item, aside, stream))
                self._overflowing.add(task)
                task.add_done_callback(self._overflowing.discard)
                continue
            self._queued[key] = queued + 1
            if arrived is not None:
                arrived(item)
            # The task copies this context, so Faust's current event stays this record's:
            # table writes go to the record's changelog partition.
            previous = self._tails.get(key)
            task = asyncio.create_task(self._one(previous, held, item, handle, stream, ready))
            self._tails[key] = task
            task.add_done_callback(functools.partial(self._forget, key))

    def _forget(self, key: bytes, task: asyncio.Task[None]) -> None:
        if self._tails.get(key) is task:
            del self._tails[key]
        left = self._queued.get(key, 1) - 1
        if left > 0:
            self._queued[key] = left
        else:
            self._queued.pop(key, None)

    def queued(self, key: bytes) -> int:
        """Records of ``key`` held and not finished."""
        return self._queued.get(key, 0)

    def _hold(self, event: Any) -> _Held:
        queue = self._unacked.setdefault(event.message.tp, deque())
        if queue and event.message.offset <= queue[-1].event.message.offset:
            # The partition is read again from its committed offset (rebalance): what was
            # held before is being redelivered and needs no ack from here.
            queue.clear()
        held = _Held(event)
        queue.append(held)
        return held

    async def _acknowledge(self, held: _Held, stream: Any) -> None:
        """Mark ``held`` finished and ack every finished record at its partition's head."""
        held.done = True
        async with self._ack_lock:
            queue = self._unacked.get(held.event.message.tp)
            while queue and queue[0].done:
                await stream.ack(queue.popleft().event)

    async def _one(
        self,
        previous: asyncio.Task[None] | None,
        held: _Held,
        item: Any,
        handle: Handler,
        stream: Any,
        ready: Handler | None = None,
    ) -> None:
        event = held.event
        acked = False
        try:
            if previous is not None:
                await asyncio.wait([previous])
            if ready is not None:
                await ready(item)
            async with self._running:
                self.in_flight += 1
                try:
                    await handle(item)
                    acked = True
                finally:
                    self.in_flight -= 1
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # The handler dead-letters what it can; reaching here means even that failed,
            # so the record stays unacked (holding back its partition's later acks) and is
            # redelivered after a restart or rebalance.
            log.error(
                "%s: record at offset %s left unacked (%s)",
                self.name,
                event.message.offset,
                type(exc).__name__,
            )
            log.debug("%s: the handler failed", self.name, exc_info=True)
        finally:
            if acked:
                await self._acknowledge(held, stream)
            self._buffered.release()


class SessionGate:
    """One ticket per session in the pipeline: ticket k+1 starts after ticket k's reply."""

    def __init__(self, timeout_s: float = 300.0) -> None:
        self.timeout_s = timeout_s
        self._open: dict[str, tuple[str, asyncio.Event]] = {}

    async def enter(
        self, session_id: str, ticket_id: str, pending: Callable[[], str | None]
    ) -> None:
        """Wait until no other ticket of the session is in flight, then hold the session.

        ``pending`` reports an unfinished ticket recorded in the baton, which covers tickets
        that started in a worker that crashed or lost the partition.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        told = False
        while True:
            held = self._open.get(session_id)
            if held is not None and held[0] != ticket_id:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    log.warning(
                        "session %s: gave up waiting for %s", shown(session_id), shown(held[0])
                    )
                    break
                try:
                    await asyncio.wait_for(held[1].wait(), remaining)
                except TimeoutError:
                    continue
                continue
            other = pending()
            if held is None and other is not None and other != ticket_id:
                if not told:
                    # Said once: a session that stays held shows here what it waits for.
                    told = True
                    log.info(
                        "session %s: ticket %s waits for %s, which its baton shows started "
                        "and not answered",
                        shown(session_id),
                        shown(ticket_id),
                        shown(other),
                    )
                if loop.time() >= deadline:
                    log.warning(
                        "session %s: ticket %s never finished", shown(session_id), shown(other)
                    )
                    break
                await asyncio.sleep(0.2)
                continue
            break
        held = self._open.get(session_id)
        # A copy of the holding ticket keeps its event: the tickets waiting on it must wake.
        if held is None or held[0] != ticket_id:
            self._open[session_id] = (ticket_id, asyncio.Event())

    def held(self, session_id: str, ticket_id: str) -> bool:
        """Whether another ticket holds the session now (``enter`` would wait for it)."""
        held = self._open.get(session_id)
        return held is not None and held[0] != ticket_id

    def leave(self, session_id: str, ticket_id: str) -> None:
        """Release the session after ``ticket_id``'s reply (or final failure)."""
        held = self._open.get(session_id)
        if held is not None and held[0] == ticket_id:
            del self._open[session_id]
            held[1].set()

    def __len__(self) -> int:
        return len(self._open)

"""Acks in each partition's order: a record is acked once it and every earlier one are done."""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from typing import Any


@dataclass
class Held:
    """A record not acked yet; ``done`` once its work finished."""

    event: Any
    done: bool = False


class InOrderAcks:
    """A stream's records held per partition in offset order, acked strictly in that order.

    Faust (0.15) commits past a single unacked record at the head of a partition when the
    offsets acked after it are consecutive, so a record finished early waits for the ones
    before it. A record never finished holds back its partition's later acks: after a restart
    or a rebalance it is read again, with everything after it.
    """

    def __init__(self) -> None:
        self._unacked: dict[Any, deque[Held]] = {}
        self._lock = asyncio.Lock()

    def hold(self, event: Any) -> Held:
        """Take ``event`` in, behind its partition's records held before it."""
        queue = self._unacked.setdefault(event.message.tp, deque())
        if queue and event.message.offset <= queue[-1].event.message.offset:
            # The partition is read again from its committed offset (rebalance): what was
            # held before is being redelivered and needs no ack from here.
            queue.clear()
        held = Held(event)
        queue.append(held)
        return held

    async def finish(self, held: Held, stream: Any) -> None:
        """Mark ``held`` finished and ack every finished record at its partition's head."""
        held.done = True
        async with self._lock:
            queue = self._unacked.get(held.event.message.tp)
            while queue and queue[0].done:
                await stream.ack(queue.popleft().event)

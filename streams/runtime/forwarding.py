"""Records forwarded back to back: each queued in the order read, acked once its forward is."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from baton_kafka.streams.runtime.acks import Held, InOrderAcks

log = logging.getLogger("baton.forwarding")

Forward = Callable[[Any], Awaitable[Awaitable[None]]]


class Forwarder:
    """Feeds a stream's events to ``forward`` one at a time, without waiting for the broker.

    ``forward`` returns once the event's output is queued behind the outputs of the events
    before it (so a partition's order, and a session's, is kept) with an awaitable of its
    acknowledgement. The event is acked when that completes and every earlier event of its
    partition is acked: Faust commits only what was forwarded. At most ``window`` forwards
    wait for their acknowledgement at once. A forward that fails leaves its event unacked,
    holding back its partition's later acks, so it is read again after a restart or a
    rebalance (as a failing stage handler's record is).
    """

    def __init__(self, name: str, window: int) -> None:
        self.name = name
        self._window = asyncio.Semaphore(window)
        self._acks = InOrderAcks()
        # Settling tasks, referenced until done (the loop keeps only weak references).
        self._settling: set[asyncio.Task[None]] = set()

    async def run(self, stream: Any, forward: Forward) -> None:
        """Consume ``stream`` (a Faust stream with acks disabled) until it ends."""
        async for event in stream.events():
            await self._window.acquire()
            held = self._acks.hold(event)
            try:
                acked = await forward(event)
            except BaseException:
                self._window.release()
                raise
            task = asyncio.create_task(self._settle(held, acked, stream))
            self._settling.add(task)
            task.add_done_callback(self._settling.discard)

    async def _settle(self, held: Held, acked: Awaitable[None], stream: Any) -> None:
        try:
            await acked
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.error(
                "%s: record at offset %s left unacked, its forward failed (%s)",
                self.name,
                held.event.message.offset,
                type(exc).__name__,
            )
            return
        finally:
            self._window.release()
        await self._acks.finish(held, stream)

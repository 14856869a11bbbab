"""Pacing model calls: an adaptive concurrency limit, jittered backoff, per-ticket time budgets."""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

Clock = Callable[[], float]


class AdaptiveLimit:
    """At most ``slots`` holders at once; the limit halves on overload and creeps back on success.

    Additive increase, multiplicative decrease, as TCP's congestion window: every success adds
    ``1 / limit`` (about one slot per round of calls), an overload signal (429, 529) halves it.
    Cuts are at least ``cooldown_s`` apart, so a burst of errors from one overload counts once.
    """

    def __init__(
        self,
        maximum: int,
        *,
        minimum: int = 1,
        cooldown_s: float = 1.0,
        clock: Clock = time.monotonic,
    ) -> None:
        self.maximum = max(1, maximum)
        self.minimum = min(max(1, minimum), self.maximum)
        self.limit = float(self.maximum)
        self.cooldown_s = cooldown_s
        self.in_use = 0
        self.cuts = 0
        self._clock = clock
        self._last_cut = -math.inf
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def slots(self) -> int:
        """Calls allowed in flight right now."""
        return max(self.minimum, int(self.limit))

    async def acquire(self) -> None:
        """Wait for a free slot and take it."""
        while self.in_use >= self.slots:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                else:
                    self._wake()  # it was woken for a slot it will not take: pass it on
                raise
        self.in_use += 1

    def release(self) -> None:
        """Give a slot back."""
        self.in_use -= 1
        self._wake()

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold a slot for the body."""
        await self.acquire()
        try:
            yield
        finally:
            self.release()

    def succeeded(self) -> None:
        """A call went through: grow the limit by a fraction of a slot."""
        self.limit = min(float(self.maximum), self.limit + 1.0 / self.limit)
        self._wake()

    def overloaded(self) -> bool:
        """The API said it is overloaded: halve the limit (once per cooldown); True if cut."""
        now = self._clock()
        if now - self._last_cut < self.cooldown_s:
            return False
        self._last_cut = now
        self.cuts += 1
        self.limit = max(float(self.minimum), self.limit / 2)
        return True

    def _wake(self) -> None:
        free = self.slots - self.in_use
        while free > 0 and self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                free -= 1


def backoff_s(
    retry: int, *, base_s: float = 0.5, cap_s: float = 20.0, rng: random.Random | None = None
) -> float:
    """Delay before retry number ``retry`` (0-based): exponential, capped, half of it jittered."""
    ceiling = min(cap_s, base_s * 2**retry)
    return ceiling / 2 + (rng or random).uniform(0, ceiling / 2)


def retry_delay_s(
    retry: int, retry_after_s: float | None, *, rng: random.Random | None = None, **backoff: float
) -> float:
    """The backoff, but never sooner than the server's ``retry-after`` (plus up to 25% jitter).

    The jitter keeps callers told the same ``retry-after`` from all coming back at once.
    """
    delay = backoff_s(retry, rng=rng, **backoff)
    if retry_after_s is not None and retry_after_s > 0:
        delay = max(delay, retry_after_s * (1 + (rng or random).uniform(0, 0.25)))
    return delay


class TicketClock:
    """Seconds of model time each ticket has used, against a per-ticket budget.

    Only the newest ``keep`` tickets are remembered: a ticket's stages run one after another
    within seconds or minutes, so an old entry is never needed again.
    """

    def __init__(self, budget_s: float, *, keep: int = 5_000) -> None:
        self.budget_s = budget_s
        self.keep = keep
        self._spent: OrderedDict[str, float] = OrderedDict()

    def left(self, ticket_id: str | None) -> float:
        """Seconds the ticket may still spend on model calls (the whole budget if unknown)."""
        if ticket_id is None:
            return self.budget_s
        return self.budget_s - self._spent.get(ticket_id, 0.0)

    def exhaust(self, ticket_id: str | None) -> None:
        """Mark the ticket's budget spent: it gave up because a retry no longer fit."""
        if ticket_id is not None:
            self.spend(ticket_id, max(0.0, self.left(ticket_id)))

    def spend(self, ticket_id: str | None, seconds: float) -> None:
        """Charge ``seconds`` to the ticket."""
        if ticket_id is None:
            return
        self._spent[ticket_id] = self._spent.get(ticket_id, 0.0) + max(0.0, seconds)
        self._spent.move_to_end(ticket_id)
        while len(self._spent) > self.keep:
            self._spent.popitem(last=False)


class Throttle:
    """Says yes at most once per ``interval_s``, counting the times it said no in between."""

    def __init__(self, interval_s: float, *, clock: Clock = time.monotonic) -> None:
        self.interval_s = interval_s
        self._clock = clock
        self._last = -math.inf
        self.suppressed = 0

    def ready(self) -> int | None:
        """None when it is too soon; else how many were suppressed since the last yes."""
        now = self._clock()
        if now - self._last < self.interval_s:
            self.suppressed += 1
            return None
        self._last = now
        swallowed, self.suppressed = self.suppressed, 0
        return swallowed

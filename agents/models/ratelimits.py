"""The API's ``anthropic-ratelimit-*`` headers read, and new calls held back before a 429.

Every Messages API response (errors included) says, per budget (requests, tokens, input
tokens, output tokens), its limit, what remains and when it is full again. ``RateLimitPacer``
keeps the newest of these per model, counts the calls it let out since, and holds a new call
while a budget is at or under its reserve, until that budget's reset (never longer than
``max_wait_s`` per call). Until a model's first response arrives nothing is known, so the first
call to it goes alone (for a few seconds at most): a worker that starts with a burst probes the
budget instead of spending it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

import httpx2

from baton_kafka.agents.models.pacing import Clock

PREFIX = "anthropic-ratelimit-"
KINDS = ("requests", "tokens", "input-tokens", "output-tokens")
# Each kind's header names: remaining, limit, reset.
_KEYS = tuple(
    (kind, f"{PREFIX}{kind}-remaining", f"{PREFIX}{kind}-limit", f"{PREFIX}{kind}-reset")
    for kind in KINDS
)
# Reset times are whole seconds on the real API; a call sent on the dot may still be counted
# in the old window.
RESET_MARGIN_S = 0.05


@dataclass(frozen=True)
class Budget:
    """One budget as a response reported it."""

    limit: int | None
    remaining: int
    reset_in_s: float | None


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _reset_in_s(value: str | None, now_wall: float) -> float | None:
    if not value:
        return None
    reset = _reset_at(value)
    return None if reset is None else max(0.0, reset - now_wall)


@functools.lru_cache(maxsize=64)
def _reset_at(value: str) -> float | None:
    # The budgets of one response, and of the responses of one second, share their reset
    # time: each text is parsed once.
    try:
        reset = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if reset.tzinfo is None:
        return None
    return reset.timestamp()


def read_rate_limits(headers: Mapping[str, str], now_wall: float) -> dict[str, Budget]:
    """The budgets ``headers`` report, by kind (``requests``, ``input-tokens``…); empty if none.

    ``now_wall`` is the wall-clock time (``time.time()``) the reset times are measured from.
    """
    if isinstance(headers, httpx2.Headers):
        # httpx's headers scan the whole list on each lookup; their items() are the same
        # values by lower-case name (repeated headers joined alike), read in one pass.
        headers = dict(headers.items())
    budgets = {}
    for kind, remaining_key, limit_key, reset_key in _KEYS:
        remaining = _int(headers.get(remaining_key))
        if remaining is None:
            continue
        budgets[kind] = Budget(
            limit=_int(headers.get(limit_key)),
            remaining=remaining,
            reset_in_s=_reset_in_s(headers.get(reset_key), now_wall),
        )
    return budgets


@dataclass
class _Model:
    """What the pacer knows of one model's budgets."""

    known: bool = False
    in_flight: int = 0
    requests_left: int | None = None
    requests_limit: int | None = None
    requests_reset_at: float = -math.inf
    tokens_low_until: float = -math.inf
    settled: asyncio.Event = field(default_factory=asyncio.Event)


class RateLimitPacer:
    """Holds new calls of a model while its last reported budget is (nearly) spent.

    ``reserve`` is the share of each limit kept back (other workers spend the same budget
    between two of our responses); a budget at or under it holds new calls until its reset.
    ``max_wait_s`` bounds one call's wait; 0 turns pacing off (the headers are still read).
    Until a model's first answer, other calls wait for it at most ``probe_wait_s``.
    """

    def __init__(
        self,
        *,
        reserve: float = 0.05,
        max_wait_s: float = 30.0,
        probe_wait_s: float = 2.0,
        clock: Clock = time.monotonic,
        wall: Clock = time.time,
    ) -> None:
        self.reserve = min(max(0.0, reserve), 1.0)
        self.max_wait_s = max(0.0, max_wait_s)
        self.probe_wait_s = probe_wait_s
        self.held = 0
        self._clock = clock
        self._wall = wall
        self._models: dict[str, _Model] = {}
        # Optional: called as on_budgets(model, budgets) with every response's budgets.
        self.on_budgets: Callable[[str, Mapping[str, Budget]], None] | None = None

    def _model(self, model: str) -> _Model:
        state = self._models.get(model)
        if state is None:
            state = self._models[model] = _Model()
        return state

    def _kept(self, limit: int | None) -> int:
        return math.floor(limit * self.reserve) if limit else 0

    def hold_until(self, model: str) -> float | None:
        """When a new call of ``model`` may go (clock time), or None if it may go now; ``inf``
        until an answer tells the end of a window whose budget is already spent."""
        state = self._model(model)
        now = self._clock()
        until = -math.inf
        if state.requests_left is not None and state.requests_left <= self._kept(
            state.requests_limit
        ):
            if state.requests_reset_at > now:
                until = state.requests_reset_at
            else:
                # The window turned over: the whole limit is back (unknown without one), and
                # the new window's end comes with its first answer.
                state.requests_left = state.requests_limit
                state.requests_reset_at = math.inf
        until = max(until, state.tokens_low_until)
        return until if until > now else None

    async def admit(self, model: str) -> None:
        """Wait until a call of ``model`` may go, then count it as in flight."""
        state = self._model(model)
        waited = probed = 0.0
        while self.max_wait_s > 0:
            if not state.known and state.in_flight > 0 and probed < self.probe_wait_s:
                # The first call is the probe: the others wait for what it reports, but not
                # for long, so a hanging first call does not stall every session.
                started = self._clock()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(state.settled.wait(), self.probe_wait_s - probed)
                probed += max(self._clock() - started, 0.001)
                continue
            until = self.hold_until(model)
            if until is None or waited >= self.max_wait_s:
                break
            pause = min(until - self._clock() + RESET_MARGIN_S, self.max_wait_s - waited)
            self.held += 1
            started = self._clock()
            if math.isinf(until):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(state.settled.wait(), pause)
            else:
                await asyncio.sleep(pause)
            waited += max(self._clock() - started, 0.001)
        state.in_flight += 1
        if state.requests_left is not None:
            state.requests_left -= 1

    def finished(self, model: str, headers: Mapping[str, str] | None) -> None:
        """A call admitted for ``model`` ended, with the response's headers if one came."""
        state = self._model(model)
        state.in_flight = max(0, state.in_flight - 1)
        budgets = read_rate_limits(headers, self._wall()) if headers is not None else {}
        if headers is not None:
            state.known = True
        now = self._clock()
        requests = budgets.get("requests")
        # An answer counted in a window that has ended says nothing of the current one.
        if requests is not None and requests.reset_in_s != 0:
            # Calls still in flight were sent after this answer was counted, or with it.
            state.requests_left = requests.remaining - state.in_flight
            state.requests_limit = requests.limit
            if requests.reset_in_s is not None:
                state.requests_reset_at = now + requests.reset_in_s
        for kind in KINDS[1:]:
            # Tokens are not counted out here (a call's size is known only once answered):
            # a token budget at its reserve holds every new call until it resets.
            budget = budgets.get(kind)
            if (
                budget is not None
                and budget.reset_in_s is not None
                and budget.remaining <= self._kept(budget.limit)
            ):
                state.tokens_low_until = max(state.tokens_low_until, now + budget.reset_in_s)
        state.settled.set()
        state.settled = asyncio.Event()
        if budgets and self.on_budgets is not None:
            self.on_budgets(model, budgets)

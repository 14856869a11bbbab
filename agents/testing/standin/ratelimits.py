"""The stand-in's rate limits: a budget of requests (and input tokens) per fixed window.

Every answer, a 429 included, carries the ``anthropic-ratelimit-*`` headers the real API sends;
a call past the budget gets a ``rate_limit_error`` 429 with ``retry-after`` until the window ends.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from baton_kafka.agents.models.ratelimits import PREFIX


@dataclass(frozen=True)
class RateBudget:
    """At most ``requests`` calls (and ``input_tokens`` input tokens) per ``window_s``."""

    requests: int
    window_s: float = 60.0
    input_tokens: int | None = None


def _when(wall: float) -> str:
    # Rounded up to the millisecond: a client waiting until the reset is never early.
    stamp = datetime.fromtimestamp(math.ceil(wall * 1000) / 1000, UTC)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class RateWindow:
    """Counts calls against a ``RateBudget`` in fixed windows starting at a window's first call."""

    def __init__(self, budget: RateBudget, *, wall: Callable[[], float] = time.time) -> None:
        self.budget = budget
        self._wall = wall
        self._lock = threading.Lock()
        self._ends = -math.inf
        self._requests = 0
        self._tokens = 0

    def take(self, input_tokens: int) -> tuple[bool, dict[str, str]]:
        """Charge one call of ``input_tokens``: whether it is allowed, and the headers to send."""
        b = self.budget
        with self._lock:
            now = self._wall()
            if now >= self._ends:
                self._ends, self._requests, self._tokens = now + b.window_s, 0, 0
            allowed = self._requests < b.requests and (
                b.input_tokens is None or self._tokens + input_tokens <= b.input_tokens
            )
            if allowed:
                self._requests += 1
                self._tokens += input_tokens
            reset = _when(self._ends)
            headers = {
                f"{PREFIX}requests-limit": str(b.requests),
                f"{PREFIX}requests-remaining": str(b.requests - self._requests),
                f"{PREFIX}requests-reset": reset,
            }
            if b.input_tokens is not None:
                headers |= {
                    f"{PREFIX}input-tokens-limit": str(b.input_tokens),
                    f"{PREFIX}input-tokens-remaining": str(max(0, b.input_tokens - self._tokens)),
                    f"{PREFIX}input-tokens-reset": reset,
                }
            if not allowed:
                headers["retry-after"] = str(max(1, math.ceil(self._ends - now)))
            return allowed, headers

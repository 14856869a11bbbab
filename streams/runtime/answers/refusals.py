"""How many of one sender's refused tickets are kept per minute; past that they are counted."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

WINDOW_S = 60.0
# Senders remembered at once: a flood from rotating senders cannot grow the worker's memory.
MAX_SENDERS = 10_000


@dataclass
class Refusals:
    """A per-sender budget of refused tickets written as dead letters, per minute.

    A sender probing other customers' sessions gets its first ``per_minute`` refusals of a
    minute dead-lettered (each with the ticket, for the operator to see); the rest of that
    minute are dropped and counted, so a flood cannot fill the dead-letter topic. 0 keeps all.
    """

    per_minute: int
    clock: Callable[[], float] = time.monotonic
    _windows: OrderedDict[str, tuple[float, int]] = field(default_factory=OrderedDict)

    def keep(self, sender: str) -> bool:
        """Whether this refusal of ``sender`` is written as a dead letter (else only counted)."""
        if self.per_minute <= 0:
            return True
        now = self.clock()
        start, count = self._windows.pop(sender, (now, 0))
        if now - start >= WINDOW_S:
            start, count = now, 0
        self._windows[sender] = (start, count + 1)
        while len(self._windows) > MAX_SENDERS:
            self._windows.popitem(last=False)
        return count < self.per_minute

    def dropped(self, sender: str) -> int:
        """How many of ``sender``'s refusals in its current minute were not kept."""
        _, count = self._windows.get(sender, (0.0, 0))
        return max(0, count - self.per_minute) if self.per_minute > 0 else 0

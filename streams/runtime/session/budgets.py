"""Customer token budgets: tokens a customer may spend per time window, in this worker process."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from baton_kafka.agents.asking import budget_tokens
from baton_kafka.agents.outcome import Outcome
from baton_kafka.schemas.records import CallUsage
from baton_kafka.streams.observe.shown import shown

# Spending is kept in this many slices of the window per customer, so a customer's ledger has
# a bounded size however many calls it makes.
SLICES = 60


@dataclass(frozen=True)
class Allowance:
    """Tokens a stage may spend on a ticket, and whether the customer's budget set the limit."""

    tokens: int
    by_customer: bool = False


class CustomerBudgets:
    """Tokens spent per customer over the last ``window_s`` seconds (a sliding window).

    Spending leaves the window in slices of 1/``SLICES`` of it, so up to that much early.

    Per worker process: tickets are partitioned by session, so a customer's sessions may run on
    several workers, each with its own ledger; the budget holds per worker, not in total.
    ``tokens`` 0 turns the budgets off.
    """

    def __init__(
        self, tokens: int, window_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.tokens = tokens
        self.window_s = window_s
        self.clock = clock
        self._slice_s = window_s / SLICES
        # Per customer, (slice start, tokens) oldest first.
        self._spent: dict[str, deque[tuple[float, int]]] = {}

    def spent(self, customer_id: str) -> int:
        """Tokens the customer spent in the window."""
        ledger = self._spent.get(customer_id)
        if ledger is None:
            return 0
        self._expire(ledger, self.clock())
        return sum(tokens for _, tokens in ledger)

    def allowance(self, customer_id: str | None, session_left: int) -> Allowance:
        """What a stage may spend: the session's tokens left, or the customer's if fewer."""
        if not self.tokens or not customer_id:
            return Allowance(session_left)
        left = self.tokens - self.spent(customer_id)
        return Allowance(left, by_customer=True) if left < session_left else Allowance(session_left)

    def spend(self, customer_id: str | None, calls: Iterable[CallUsage]) -> None:
        """Book the tokens of ``calls`` against the customer."""
        tokens = sum(budget_tokens(c) for c in calls)
        if not self.tokens or not customer_id or tokens <= 0:
            return
        now = self.clock()
        ledger = self._spent.setdefault(customer_id, deque())
        self._expire(ledger, now)
        if ledger and now - ledger[-1][0] < self._slice_s:
            ledger[-1] = (ledger[-1][0], ledger[-1][1] + tokens)
        else:
            ledger.append((now, tokens))

    def settle(
        self, customer_id: str | None, allowance: Allowance, outcome: Outcome[Any]
    ) -> Outcome[Any]:
        """Book the outcome's calls; a budget failure the customer's budget caused says so."""
        self.spend(customer_id, outcome.calls)
        failure = outcome.failure
        if not allowance.by_customer or failure is None or failure.reason != "budget_exceeded":
            return outcome
        error = (
            f"customer {shown(customer_id)}'s token budget is spent: {self.tokens} tokens per "
            f"{self.window_s:g} s on this worker (BATON_CUSTOMER_TOKEN_BUDGET)"
        )
        return replace(outcome, failure=replace(failure, error=error))

    def sweep(self) -> int:
        """Forget the customers who spent nothing in the window; returns how many."""
        now = self.clock()
        idle = [c for c, ledger in self._spent.items() if not self._expire(ledger, now)]
        for customer_id in idle:
            del self._spent[customer_id]
        return len(idle)

    def __len__(self) -> int:
        return len(self._spent)

    def _expire(self, ledger: deque[tuple[float, int]], now: float) -> bool:
        """Drop the slices that left the window; False when none is left."""
        while ledger and now - ledger[0][0] >= self.window_s:
            ledger.popleft()
        return bool(ledger)

"""What one ticket's stages read once on a worker and share: ``TicketMemo``, ``TicketMemos``."""

from __future__ import annotations

import operator
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from baton_kafka.schemas.records import Order, Ticket

# Tickets in flight on one worker whose reads are kept: past it the oldest ticket's go (its
# later stages then read again, as every stage once did).
KEEP = 1024
# How long a ticket's reads are kept when its reply never comes through this worker (a
# hand-off, a dead letter, a rebalance): long enough for a loaded chain, short enough that a
# ticket's later stages never act on an old answer.
TTL_S = 60.0

V = TypeVar("V")


@dataclass(eq=False)
class TicketMemo:
    """One ticket's reads on this worker, shared by its stages: its customer's orders as the
    order source first answered them (by the limit asked), and its last order history read.

    Never handed to another ticket: every stage of the ticket sees one state of the order
    source, and the next ticket reads it again.
    """

    ticket_id: str
    customer_id: str | None
    born: float
    # The source's answer to ``for_customer(customer_id, limit)``, by limit (never mutated).
    orders: dict[int, list[Order]] = field(default_factory=dict)
    # The last ``Inputs.history()``: what it was read from and the orders (see ``Inputs``).
    recalled: list[Any] = field(default_factory=list)
    # Readings of the ticket's texts its stages and their rules share (``read_once``), by what
    # was read and how: the customer's language, the products the message mentions.
    readings: dict[Hashable, Any] = field(default_factory=dict)


# The memo of the ticket whose stage runs in this task (``sharing``), or none: a reading asked
# outside any ticket (a test, the eval) is made anew each time.
_SHARED: ContextVar[TicketMemo | None] = ContextVar("baton_ticket_memo", default=None)


@contextmanager
def sharing(memo: TicketMemo) -> Iterator[TicketMemo]:
    """Within the block, ``read_once`` keeps its readings in ``memo`` (this task alone)."""
    token = _SHARED.set(memo)
    try:
        yield memo
    finally:
        _SHARED.reset(token)


# What a memo's readings never hold: a reading not made yet.
_NONE: Any = object()


def read_once(key: Hashable, read: Callable[[], V]) -> V:
    """``read()``, made once per ticket and ``key`` while a ticket's memo is shared (never
    across tickets: the next ticket reads again), else made anew."""
    memo = _SHARED.get()
    if memo is None:
        return read()
    kept = memo.readings
    # One lookup when the reading is there (a key is a tuple, whose hash is not kept).
    found = kept.get(key, _NONE)
    if found is _NONE:
        found = kept[key] = read()
    return found


def shelf(name: str, *owners: object) -> dict[Any, Any]:
    """A dict kept for the ticket under ``name`` while ``owners`` are the very same objects
    (a fresh one outside a ticket, or when an owner since dropped left its id to another)."""
    memo = _SHARED.get()
    if memo is None:
        return {}
    key = (name, *map(id, owners))
    kept = memo.readings.get(key)
    if kept is None:
        kept = memo.readings[key] = (owners, {})
    # The key holds one id per owner, so both tuples are as long.
    return kept[1] if all(map(operator.is_, kept[0], owners)) else {}


class TicketMemos:
    """The worker's ``TicketMemo`` per ticket in flight: made by the first stage that asks,
    dropped when the ticket's reply is sent, when ``ttl_s`` has passed, or past ``keep``."""

    def __init__(
        self, keep: int = KEEP, ttl_s: float = TTL_S, timer: Callable[[], float] = time.monotonic
    ) -> None:
        self.keep = keep
        self.ttl_s = ttl_s
        self._timer = timer
        # By ticket id, oldest first (an entry is never moved: its age is its place).
        self._memos: OrderedDict[str, TicketMemo] = OrderedDict()

    def __len__(self) -> int:
        return len(self._memos)

    def of(self, ticket: Ticket) -> TicketMemo:
        """The ticket's memo: the one its earlier stages used, or a new one (another customer
        under the same ticket id, or one older than ``ttl_s``, gets a new one)."""
        now = self._timer()
        self._expire(now)
        memo = self._memos.get(ticket.ticket_id)
        if memo is not None and memo.customer_id == ticket.customer_id:
            return memo
        memo = TicketMemo(ticket.ticket_id, ticket.customer_id, now)
        self._memos.pop(ticket.ticket_id, None)
        self._memos[ticket.ticket_id] = memo
        while len(self._memos) > self.keep:
            self._memos.popitem(last=False)
        return memo

    def drop(self, ticket_id: str) -> None:
        """Forget the ticket's reads (its reply is sent: a copy of it later reads afresh)."""
        self._memos.pop(ticket_id, None)

    def _expire(self, now: float) -> None:
        while self._memos:
            oldest = next(iter(self._memos.values()))
            if now - oldest.born < self.ttl_s:
                return
            self._memos.popitem(last=False)

"""A customer's order history: every order their sessions discussed, bounded and expiring."""

from __future__ import annotations

import operator
from datetime import datetime

from baton_kafka.agents.policy.agreed import ticket_agreed
from baton_kafka.schemas.baton import Baton, MemoryIndex, OrderMemory, TicketMemory
from baton_kafka.schemas.records import OfferLine
from baton_kafka.schemas.stages import Demand

HISTORY_KEEP = 20
DEMANDS_KEEP = 4
PROBLEMS_KEEP = 3
AGREED_KEEP = 16
# A reply that acted on the ticket's demand; a hand-off decided nothing yet.
_DECIDED = ("answered", "degraded")


# An entry's sort key: when the order was last discussed.
_AT = operator.attrgetter("at")


def _unique(values: list[str], keep: int) -> list[str]:
    """The newest ``keep`` distinct values, oldest first."""
    if len(values) < 2 and keep:  # most orders have one demand or problem, or none
        return list(values)
    seen = list(dict.fromkeys(reversed(values)))[:keep]
    return list(reversed(seen))


def _agreed(*ledgers: dict[str, OfferLine]) -> dict[str, OfferLine]:
    """The agreed lines of ``ledgers`` by their action's key, each once, the newest
    ``AGREED_KEEP`` (folding the same ledger again changes nothing)."""
    if not any(ledgers):  # most orders were agreed nothing
        return {}
    merged: dict[str, OfferLine] = {}
    for ledger in ledgers:
        for key, line in ledger.items():
            merged.setdefault(key, line)
    return dict(list(merged.items())[-AGREED_KEEP:])


def _entry(
    order_id: str, tickets: list[TicketMemory], session_id: str, offered: dict[str, float]
) -> OrderMemory:
    # One pass over the order's tickets, oldest first: a later value replaces an earlier one.
    product: str | None = None
    decision: Demand | None = None
    told_status: str | None = None
    demands: list[str] = []
    problems: list[str] = []
    agreed: dict[str, OfferLine] = {}
    for t in tickets:
        if t.product:
            product = t.product
        if t.demand:
            demands.append(t.demand)
        if t.problem:
            problems.append(t.problem)
        if t.status in _DECIDED:
            decision = t.demand  # the last answered ticket's, even when it had none
            if t.order_status:
                told_status = t.order_status
        if t.offer:  # a ticket without lines agreed none
            for key, line in ticket_agreed(session_id, t).items():
                if line.order_id == order_id:
                    agreed[key] = line
    return OrderMemory(
        order_id=order_id,
        product=product,
        demands=_unique(demands, DEMANDS_KEEP),
        problems=_unique(problems, PROBLEMS_KEEP),
        decision=decision,
        told_status=told_status,
        session_id=session_id,
        at=tickets[-1].at,
        offered=offered,
        agreed=_agreed(agreed),
    )


def orders_discussed(baton: Baton) -> list[OrderMemory]:
    """Every order the session's tickets were about, most recently discussed first."""
    by_order: dict[str, list[TicketMemory]] = {}
    for ticket in baton.tickets:
        if ticket.order_id:
            by_order.setdefault(ticket.order_id, []).append(ticket)
    entries = [
        _entry(oid, tickets, baton.session_id, baton.offered.get(oid, {}))
        for oid, tickets in by_order.items()
    ]
    return sorted(entries, key=_AT, reverse=True)


def _fold(older: OrderMemory, newer: OrderMemory) -> OrderMemory:
    """One order discussed in two sessions: the newer one's facts, both sessions' requests."""
    demands: list[Demand] = _unique([*older.demands, *newer.demands], DEMANDS_KEEP)  # type: ignore[assignment]
    return newer.model_copy(
        update={
            "product": newer.product or older.product,
            "demands": demands,
            "problems": _unique([*older.problems, *newer.problems], PROBLEMS_KEEP),
            "decision": newer.decision or older.decision,
            "told_status": newer.told_status or older.told_status,
            "offered": offered_by_kind(older.offered, newer.offered),
            "agreed": _agreed(older.agreed, newer.agreed),
        }
    )


def offered_by_kind(*ledgers: dict[str, float]) -> dict[str, float]:
    """What was offered per remedy across ``ledgers``: a restated offer counts once (the max)."""
    merged: dict[str, float] = {}
    for ledger in ledgers:
        for kind, amount in ledger.items():
            merged[kind] = max(merged.get(kind, 0.0), amount)
    return merged


def merge_orders(
    previous: list[OrderMemory],
    update: list[OrderMemory],
    keep: int = HISTORY_KEEP,
    since: datetime | None = None,
) -> list[OrderMemory]:
    """Fold a session's orders into a customer's history: one entry per order, newest first.

    Folding the same update twice gives the same history, so a replayed index topic rebuilds
    it exactly. Entries last discussed before ``since`` are dropped, and the newest ``keep``
    are kept.
    """
    by_order: dict[str, OrderMemory] = {}
    for entry in sorted([*previous, *update], key=_AT):
        known = by_order.get(entry.order_id)
        if known is None:
            by_order[entry.order_id] = entry
        elif entry.at >= known.at:
            by_order[entry.order_id] = _fold(known, entry)
        else:
            by_order[entry.order_id] = _fold(entry, known)
    merged = sorted(by_order.values(), key=_AT, reverse=True)
    if since is not None:
        merged = [e for e in merged if e.at >= since]
    return merged[:keep]


def recallable(baton: Baton, index: MemoryIndex | None) -> list[OrderMemory]:
    """The orders this customer discussed: the session's own (fresh) over the index's."""
    return merge_orders(index.orders if index else [], orders_discussed(baton))

"""Pure baton updates: each stage's decision written into the session's context."""

from __future__ import annotations

from datetime import datetime

from baton_kafka.agents.commit import (
    CHAIN_KEEP,
    MAX_FLAGS,
    SUMMARY_CHARS,
    TICKETS_KEEP,
    commit,
)
from baton_kafka.agents.history import merge_orders
from baton_kafka.agents.stages.lookup.update import apply_match
from baton_kafka.agents.stages.strategy.update import ANSWERED_KEEP, apply_reply
from baton_kafka.agents.stages.understand.update import apply_understanding
from baton_kafka.schemas.baton import (
    Baton,
    MemoryIndex,
    OrderMemory,
    SessionSummary,
    TicketMemory,
)
from baton_kafka.schemas.records import StageName, Ticket
from baton_kafka.schemas.stages import Snapshot

__all__ = [
    "ANSWERED_KEEP",
    "CHAIN_KEEP",
    "INDEX_KEEP",
    "MAX_FLAGS",
    "SUMMARY_CHARS",
    "TICKETS_KEEP",
    "apply_decision",
    "apply_match",
    "apply_reply",
    "apply_understanding",
    "earlier_sessions",
    "from_snapshot",
    "index_since",
    "index_with",
    "new_baton",
    "snapshot",
    "summarize",
]


def new_baton(ticket: Ticket) -> Baton:
    """An empty baton for the ticket's session."""
    return Baton(session_id=ticket.session_id, customer_id=ticket.customer_id, guest=ticket.guest())


def apply_decision(baton: Baton, ticket: Ticket, stage: StageName, decision: str) -> Baton:
    """Record one stage's decision on the ticket (a stage of the shop's own: nothing else)."""
    return commit(baton, ticket.ticket_id, stage, decision[:200], "")


def snapshot(baton: Baton) -> Snapshot:
    """The part of the baton a record carries to the next stage."""
    return Snapshot(
        core_problems=baton.core_problems[-20:],
        product=baton.product,
        problem=baton.problem,
        order_id=baton.order_id,
    )


def from_snapshot(ticket: Ticket, snap: Snapshot, version: int) -> Baton:
    """Rebuild a baton from the snapshot a record carries (partial recovery)."""
    memories = [
        TicketMemory(ticket_id=f"{ticket.ticket_id}~{i}", core_problem=p)
        for i, p in enumerate(snap.core_problems)
    ]
    return Baton(
        session_id=ticket.session_id,
        customer_id=ticket.customer_id,
        guest=ticket.guest(),
        version=version,
        tickets=memories,
        product=snap.product,
        problem=snap.problem,
        order_id=snap.order_id,
        flags=["context rebuilt from the record's snapshot"],
    )


INDEX_KEEP = 20


def summarize(baton: Baton, ticket_id: str | None = None, expired: bool = False) -> SessionSummary:
    """The session's summary for the indexes: its latest ticket's core problem and order."""
    latest = next((t for t in reversed(baton.tickets) if t.ticket_id == ticket_id), None)
    latest = latest or (baton.tickets[-1] if baton.tickets else None)
    return SessionSummary(
        session_id=baton.session_id,
        ticket_id=latest.ticket_id if latest else None,
        order_id=(latest.order_id if latest else None) or baton.order_id,
        product=(latest.product if latest else None) or baton.product,
        core_problem=latest.core_problem if latest else "",
        at=baton.updated_at,
        expired=expired,
    )


def index_with(
    index: MemoryIndex | None,
    key: str,
    summary: SessionSummary,
    keep: int = INDEX_KEEP,
    since: datetime | None = None,
    orders: list[OrderMemory] | None = None,
) -> MemoryIndex:
    """Put ``summary`` in the index, replacing the session's previous entry, and fold in the
    session's ``orders``.

    The newest ``keep`` sessions (and orders) are kept, and none older than ``since``.
    """
    previous = index.sessions if index else []
    erased = index.erased_at if index else None
    others = [s for s in previous if s.session_id != summary.session_id]
    merged = sorted([summary, *others], key=lambda s: s.at, reverse=True)
    if since is not None:
        merged = [s for s in merged if s.at >= since]
    history = merge_orders(index.orders if index else [], orders or [], keep, since)
    if erased is not None:
        # Nothing from before the customer's erasure comes back.
        merged = [s for s in merged if s.at > erased]
        history = [o for o in history if o.at > erased]
    return MemoryIndex(key=key, sessions=merged[:keep], orders=history, erased_at=erased)


def index_since(index: MemoryIndex, since: datetime) -> MemoryIndex:
    """The index without the sessions (and orders) last discussed before ``since``."""
    return index.model_copy(
        update={
            "sessions": [s for s in index.sessions if s.at >= since],
            "orders": [o for o in index.orders if o.at >= since],
        }
    )


def earlier_sessions(
    index: MemoryIndex | None, session_id: str, limit: int = 3
) -> list[SessionSummary]:
    """The customer's other sessions, most recent first."""
    if index is None:
        return []
    return [s for s in index.sessions if s.session_id != session_id][:limit]

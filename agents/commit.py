"""A stage's decision committed to the session's baton, its chain and memories kept in bounds."""

from __future__ import annotations

from baton_kafka.schemas.baton import Baton, ChainEntry, TicketMemory
from baton_kafka.schemas.records import StageName, utcnow

CHAIN_KEEP = 24
SUMMARY_CHARS = 2_000
TICKETS_KEEP = 200
MAX_FLAGS = 10


def _fold_chain(chain: list[ChainEntry], summary: str) -> tuple[list[ChainEntry], str]:
    """Keep the newest entries; fold the oldest into a one-line-per-entry summary."""
    if len(chain) <= CHAIN_KEEP:
        return chain, summary
    old, kept = chain[:-CHAIN_KEEP], chain[-CHAIN_KEEP:]
    lines = [f"{e.ticket_id}/{e.stage}: {e.decision}" for e in old]
    folded = "; ".join(filter(None, [summary, *lines]))
    if len(folded) > SUMMARY_CHARS:
        folded = "…" + folded[-(SUMMARY_CHARS - 1) :]
    return kept, folded


def _fold_tickets(tickets: list[TicketMemory], summary: str) -> tuple[list[TicketMemory], str]:
    """Bound the per-ticket memories; the oldest core problems move into the summary."""
    if len(tickets) <= TICKETS_KEEP:
        return tickets, summary
    old, kept = tickets[:-TICKETS_KEEP], tickets[-TICKETS_KEEP:]
    lines = [f"earlier: {t.core_problem}" for t in old]
    folded = "; ".join(filter(None, [summary, *lines]))
    return kept, folded[-SUMMARY_CHARS:]


def commit(
    baton: Baton, ticket_id: str, stage: StageName, decision: str, reason: str, **changes: object
) -> Baton:
    """``baton`` with one stage's decision on the ticket in its chain, and ``changes``."""
    chain = [
        *baton.chain,
        ChainEntry(ticket_id=ticket_id, stage=stage, decision=decision, reason=reason),
    ]
    tickets = changes.pop("tickets", baton.tickets)
    chain, summary = _fold_chain(chain, baton.chain_summary)
    tickets, summary = _fold_tickets(tickets, summary)  # type: ignore[arg-type]
    return baton.model_copy(
        update={
            **changes,
            "tickets": tickets,
            "chain": chain,
            "chain_summary": summary,
            "version": baton.version + 1,
            "updated_at": utcnow(),
        }
    )


def ticket_memory(baton: Baton, ticket_id: str) -> TicketMemory | None:
    """The baton's memory of the ticket, if it has one."""
    return next((t for t in baton.tickets if t.ticket_id == ticket_id), None)


def with_memory(baton: Baton, memory: TicketMemory) -> list[TicketMemory]:
    """The baton's ticket memories with ``memory`` in place of the ticket's old one."""
    others = [t for t in baton.tickets if t.ticket_id != memory.ticket_id]
    return [*others, memory]

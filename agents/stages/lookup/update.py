"""The look-up stage's baton update: the matched order becomes the session's current one."""

from __future__ import annotations

from baton_kafka.agents.commit import MAX_FLAGS, commit, ticket_memory, with_memory
from baton_kafka.agents.stages.lookup import NAME
from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.records import Ticket
from baton_kafka.schemas.stages import OrderMatch


def apply_match(baton: Baton, ticket: Ticket, match: OrderMatch) -> Baton:
    """Make the matched order current; the previous one moves to the history."""
    history = list(baton.order_history)
    current = baton.order_id
    if match.order_id and match.order_id != current:
        if current:
            history = [current, *[o for o in history if o != current]]
        current = match.order_id
        history = [o for o in history if o != current][:20]
    memory = ticket_memory(baton, ticket.ticket_id)
    tickets = baton.tickets
    if memory is not None:
        status = str(match.order.status) if match.order else None
        tickets = with_memory(
            baton, memory.model_copy(update={"order_id": match.order_id, "order_status": status})
        )
    flags = list(baton.flags)
    if match.method == "unavailable":
        flags.append(f"order store unavailable at {ticket.ticket_id}")
    return commit(
        baton,
        ticket.ticket_id,
        NAME,
        f"{match.method}: {match.order_id or 'no order'}",
        match.reason,
        tickets=tickets,
        order_id=current,
        order_history=history,
        flags=flags[-MAX_FLAGS:],
    )

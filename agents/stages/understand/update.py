"""The understand stage's baton update: the ticket's core problem and what it is about."""

from __future__ import annotations

from baton_kafka.agents.commit import MAX_FLAGS, commit, with_memory
from baton_kafka.agents.stages.understand import NAME
from baton_kafka.schemas.baton import Baton, TicketMemory
from baton_kafka.schemas.records import Ticket
from baton_kafka.schemas.stages import Understanding


def apply_understanding(baton: Baton, ticket: Ticket, u: Understanding) -> Baton:
    """Record the ticket's core problem and the entities it is about."""
    switched = bool(u.product and baton.product and u.product != baton.product)
    memory = TicketMemory(
        ticket_id=ticket.ticket_id,
        at=ticket.written_at(),
        core_problem=u.core_problem,
        product=u.product,
        problem=u.problem,
        demand=u.demand,
    )
    products = baton.products_mentioned
    if u.product and u.product not in products:
        products = [*products, u.product][-20:]
    flags = list(baton.flags)
    if switched:
        flags.append(f"topic switch at {ticket.ticket_id}: {baton.product} -> {u.product}")
    return commit(
        baton,
        ticket.ticket_id,
        NAME,
        f"{u.demand}: {u.problem} ({u.product or 'no product'})",
        u.core_problem,
        tickets=with_memory(baton, memory),
        customer_id=baton.customer_id or ticket.customer_id,
        product=u.product or baton.product,
        problem=u.problem,
        demand=u.demand,
        products_mentioned=products,
        flags=flags[-MAX_FLAGS:],
    )

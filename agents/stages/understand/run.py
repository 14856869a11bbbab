"""The understand stage's run function: what the chain gives it, to its function's arguments."""

from __future__ import annotations

from baton_kafka.agents.orders import StoreUnavailable
from baton_kafka.agents.outcome import Outcome
from baton_kafka.agents.stage import Inputs
from baton_kafka.agents.stages.understand.agent import understand
from baton_kafka.schemas.records import Order
from baton_kafka.schemas.stages import Understanding


async def run(i: Inputs) -> Outcome[Understanding]:
    """Understand the ticket with what the chain gives the stage (the customer's orders too)."""
    orders: list[Order] = []
    if i.ticket.customer_id:
        try:
            orders = await i.store.for_customer(i.ticket.customer_id)
        except StoreUnavailable:
            orders = []
    with i.shared():  # its rules read the ticket's language and mentions once with it
        return await _understand(i, orders)


async def _understand(i: Inputs, orders: list[Order]) -> Outcome[Understanding]:
    """``understand`` with what the chain gives the stage."""
    return await understand(
        i.ticket,
        i.baton,
        i.llm,
        orders=orders,
        earlier=i.earlier(),
        history=i.history(),
        reask_limit=i.reask_limit,
        tokens_left=i.tokens_left,
        languages=i.policy.languages,
        triggers=i.policy.handoff.triggers,
    )

"""The look-up stage's run function: what the chain gives it, to its function's arguments."""

from __future__ import annotations

from baton_kafka.agents.outcome import Outcome
from baton_kafka.agents.stage import Inputs
from baton_kafka.agents.stages.lookup.agent import look_up
from baton_kafka.schemas.stages import OrderMatch


async def run(i: Inputs) -> Outcome[OrderMatch]:
    """Look up the ticket's order with what the chain gives the stage."""
    return await look_up(
        i.ticket,
        i.understanding,
        i.baton,
        i.store,
        i.llm,
        earlier=i.earlier(),
        history=i.history(),
        reask_limit=i.reask_limit,
        tokens_left=i.tokens_left,
    )

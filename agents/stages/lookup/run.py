"""The look-up stage's run function: what the chain gives it, to its function's arguments."""

from __future__ import annotations

from typing import Protocol

from baton_kafka.agents.models.llm import LLM
from baton_kafka.agents.orders import OrderSource
from baton_kafka.agents.outcome import Outcome
from baton_kafka.agents.prompts import EarlierSession
from baton_kafka.agents.stages.lookup.agent import look_up
from baton_kafka.schemas.baton import Baton, OrderMemory
from baton_kafka.schemas.records import Ticket
from baton_kafka.schemas.stages import OrderMatch, Understanding


class Given(Protocol):
    """What the chain gives a stage for one ticket (``streams.runtime.stages.Inputs``)."""

    @property
    def ticket(self) -> Ticket: ...

    @property
    def understanding(self) -> Understanding: ...

    @property
    def baton(self) -> Baton: ...

    @property
    def store(self) -> OrderSource: ...

    @property
    def llm(self) -> LLM: ...

    @property
    def reask_limit(self) -> int: ...

    @property
    def tokens_left(self) -> int: ...

    def earlier(self) -> list[EarlierSession]: ...

    def history(self) -> list[OrderMemory]: ...


async def run(i: Given) -> Outcome[OrderMatch]:
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

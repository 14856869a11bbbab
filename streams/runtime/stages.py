"""The chain, declared once: each stage's topics, its function and what it keeps in the baton."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel

from agents import memory
from agents.history import recallable
from agents.lookup import look_up
from agents.models.llm import LLM
from agents.orders import OrderSource, StoreUnavailable
from agents.outcome import Outcome
from agents.policy import Policy, default_policy
from agents.prompts import EarlierSession
from agents.strategy import decide
from agents.understand import understand
from schemas.baton import Baton, OrderMemory
from schemas.records import Order, Ticket
from schemas.stages import OrderMatch, StageRecord, StrategyDraft, Understanding
from streams.kafka.topics import TopicNames
from streams.runtime.batons import BatonStore

T = TypeVar("T", bound=BaseModel)
ChainStage = Literal["understand", "lookup", "strategy"]
# The ``TopicNames`` attributes a stage reads from or writes to.
Topic = Literal["sessions", "understood", "matched", "replies"]
Carried = Literal["understanding", "match"]


@dataclass(frozen=True)
class Inputs:
    """What a stage function may draw on for one ticket."""

    record: StageRecord
    baton: Baton
    llm: LLM
    store: OrderSource
    batons: BatonStore
    reask_limit: int
    tokens_left: int
    policy: Policy = field(default_factory=default_policy)

    @property
    def ticket(self) -> Ticket:
        return self.record.ticket

    @property
    def understanding(self) -> Understanding:
        """The record's understanding; a stage that needs it runs only on records with one."""
        if self.record.understanding is None:
            raise ValueError("the record has no understanding")
        return self.record.understanding

    @property
    def match(self) -> OrderMatch:
        """The record's order match; a stage that needs it runs only on records with one."""
        if self.record.match is None:
            raise ValueError("the record has no order match")
        return self.record.match

    def history(self) -> list[OrderMemory]:
        """The orders this customer discussed: this session's and the index's."""
        index = self.batons.index(self.ticket.customer_id) if self.ticket.customer_id else None
        return recallable(self.baton, index)

    def earlier(self) -> list[EarlierSession]:
        """The customer's other sessions (warm memory), most recent first."""
        summaries = self.batons.earlier(self.ticket.customer_id, self.ticket.session_id)
        return [EarlierSession.of(s) for s in summaries]


@dataclass(frozen=True)
class Stage(Generic[T]):
    """One stage: reads ``source``, runs ``run``, writes ``target``.

    A forwarding stage puts its result in the record's ``carries`` field and in the baton
    through ``update``; the last stage (``carries`` None) turns its result into the reply,
    which goes into the baton with ``memory.apply_reply`` once it is published.
    """

    name: ChainStage
    source: Topic
    target: Topic
    run: Callable[[Inputs], Awaitable[Outcome[T]]]
    needs: tuple[Carried, ...] = ()
    missing: str = ""
    carries: Carried | None = None
    update: Callable[[Baton, Ticket, T], Baton] | None = None

    @property
    def answers(self) -> bool:
        """The stage's result is the ticket's reply."""
        return self.carries is None

    def source_topic(self, names: TopicNames) -> str:
        return str(getattr(names, self.source))

    def target_topic(self, names: TopicNames) -> str:
        return str(getattr(names, self.target))


async def _understand(i: Inputs) -> Outcome[Understanding]:
    orders: list[Order] = []
    if i.ticket.customer_id:
        try:
            orders = await i.store.for_customer(i.ticket.customer_id)
        except StoreUnavailable:
            orders = []
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
    )


async def _look_up(i: Inputs) -> Outcome[OrderMatch]:
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


async def _decide(i: Inputs) -> Outcome[StrategyDraft]:
    return await decide(
        i.ticket,
        i.baton,
        i.understanding,
        i.match,
        i.store,
        i.llm,
        reask_limit=i.reask_limit,
        tokens_left=i.tokens_left,
        policy=i.policy,
        history=i.history(),
    )


STAGES: tuple[Stage[Any], ...] = (
    Stage(
        name="understand",
        source="sessions",
        target="understood",
        run=_understand,
        carries="understanding",
        update=memory.apply_understanding,
    ),
    Stage(
        name="lookup",
        source="understood",
        target="matched",
        run=_look_up,
        needs=("understanding",),
        missing="the record reached lookup without an understanding",
        carries="match",
        update=memory.apply_match,
    ),
    Stage(
        name="strategy",
        source="matched",
        target="replies",
        run=_decide,
        needs=("understanding", "match"),
        missing="the record reached strategy without its understanding and order match",
    ),
)
BY_NAME: dict[str, Stage[Any]] = {s.name: s for s in STAGES}
PREVIOUS: dict[str, ChainStage] = {b.name: a.name for a, b in itertools.pairwise(STAGES)}

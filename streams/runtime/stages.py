"""A stage declared once: what it reads and writes, its function, baton update, prompt, rule."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from baton_kafka.agents.history import recallable
from baton_kafka.agents.instructions import STAGE_TEXTS
from baton_kafka.agents.models.llm import LLM
from baton_kafka.agents.orders import OrderSource
from baton_kafka.agents.outcome import Outcome
from baton_kafka.agents.policy import Policy, default_policy
from baton_kafka.agents.prompts import EarlierSession
from baton_kafka.agents.stages import lookup, strategy, understand
from baton_kafka.agents.stages.lookup import prompt as lookup_prompt
from baton_kafka.agents.stages.lookup import run as lookup_run
from baton_kafka.agents.stages.lookup import update as lookup_update
from baton_kafka.agents.stages.lookup.rule import choose_rules
from baton_kafka.agents.stages.strategy import run as strategy_run
from baton_kafka.agents.stages.strategy.rule import strategy_rules
from baton_kafka.agents.stages.understand import prompt as understand_prompt
from baton_kafka.agents.stages.understand import run as understand_run
from baton_kafka.agents.stages.understand import update as understand_update
from baton_kafka.agents.stages.understand.rule import understand_rules
from baton_kafka.schemas import topics
from baton_kafka.schemas.baton import Baton, OrderMemory
from baton_kafka.schemas.records import Ticket
from baton_kafka.schemas.stages import OrderMatch, StageRecord, StrategyDraft, Understanding
from baton_kafka.streams.runtime.batons import BatonStore

T = TypeVar("T", bound=BaseModel)
# The ``TopicNames`` roles the built-in stages read from or write to (a stage of the shop's own
# writes a topic named after it: ``Chain`` gives each its source and target).
FIRST_SOURCE = "sessions"
REPLIES = "replies"


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
    # What the stage reads (its declared ``input``): the ticket, or an earlier stage's result.
    given: Any = None
    # Whether the strategy's final reply is read again by the independent reader.
    read: bool = False

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
    """One stage of the chain, everything it is: its name, what it reads and writes, its
    function, what it keeps in the baton, its prompt and its offline rule.

    ``input`` is the record type it reads (the ticket, or an earlier stage's ``output``);
    ``output`` the type of its result. A built-in stage ``carries`` its result in a field of
    the stage record of its own (``understanding``, ``match``); any other stage's result
    travels in the record's ``results`` under its name, and reaches the reply's ``stages``;
    ``after`` names the stage it follows when given to ``create_app`` on its own.
    ``topic`` is the default name of the topic its records go out on (before the namespace):
    a built-in stage's is a ``TopicNames`` role instead (``role``). The stage that
    ``opens_session`` takes the session's turn; the one that ``answers`` turns its result
    into the reply, which goes into the baton with ``memory.apply_reply`` once published.
    """

    name: str
    output: type[T]
    run: Callable[[Inputs], Awaitable[Outcome[T]]]
    input: type[BaseModel] = Ticket
    role: str = ""
    topic: str = ""
    carries: str | None = None
    update: Callable[[Baton, Ticket, T], Baton] | None = None
    prompt: str = ""
    offline: Callable[..., Any] | None = None
    opens_session: bool = False
    answers: bool = False
    after: str = ""

    def __post_init__(self) -> None:
        if problem := name_problem(self.name):
            raise ValueError(f"stage {self.name!r}: the name {problem}")

    @property
    def target_role(self) -> str:
        """The ``TopicNames`` role of the topic the stage writes."""
        return REPLIES if self.answers else (self.role or self.name)

    def result(self, record: StageRecord) -> Any:
        """The stage's result as ``record`` carries it (None before the stage ran)."""
        if self.carries is not None:
            return getattr(record, self.carries)
        return record.results.get(self.name)


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a stage (it must fit ``baton_kafka.schemas.StageName``), or None."""
    if not re.fullmatch(r"[a-z][a-z0-9_]{0,39}", name):
        return "must be 1-40 lowercase letters, digits or '_', starting with a letter"
    if name in ("intake", "end_to_end") or name in topics.ROLES:
        return "is taken by baton"
    return None


STAGES: tuple[Stage[Any], ...] = (
    Stage(
        name=understand.NAME,
        input=Ticket,
        output=Understanding,
        role="understood",
        run=understand_run.run,
        carries="understanding",
        update=understand_update.apply_understanding,
        prompt=understand_prompt.TEXT,
        offline=understand_rules,
        opens_session=True,
    ),
    Stage(
        name=lookup.NAME,
        input=Understanding,
        output=OrderMatch,
        role="matched",
        run=lookup_run.run,
        carries="match",
        update=lookup_update.apply_match,
        prompt=lookup_prompt.TEXT,
        offline=choose_rules,
    ),
    Stage(
        name=strategy.NAME,
        input=OrderMatch,
        output=StrategyDraft,
        run=strategy_run.run,
        prompt=STAGE_TEXTS[strategy.NAME],
        offline=strategy_rules,
        answers=True,
    ),
)
"""The built-in chain, in order (``streams.runtime.chain.BUILTIN`` is it as a ``Chain``)."""

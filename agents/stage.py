"""A stage declared once: what it reads and writes, its function, baton update, prompt, rule."""

from __future__ import annotations

import re
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from baton_kafka.agents.history import recallable
from baton_kafka.agents.models.llm import LLM
from baton_kafka.agents.orders import OrderSource
from baton_kafka.agents.outcome import Outcome
from baton_kafka.agents.policy import Policy, default_policy
from baton_kafka.agents.prompts import EarlierSession
from baton_kafka.agents.ticket_memo import TicketMemo, sharing
from baton_kafka.schemas import topics
from baton_kafka.schemas.baton import Baton, MemoryIndex, OrderMemory, SessionSummary, TicketMemory
from baton_kafka.schemas.records import Ticket
from baton_kafka.schemas.stages import OrderMatch, StageRecord, Understanding

T = TypeVar("T", bound=BaseModel)
# The ``TopicNames`` roles the chain's first stage reads and its answering stage writes (any
# other stage writes its ``role``'s topic, or one named after it: ``Chain`` gives each its
# source and target).
FIRST_SOURCE = "sessions"
REPLIES = "replies"

# The stage record field each stage that ``carries`` its result fills, by stage name, noted as
# stages are declared: ``StageContext.result`` finds a stage given by name through it (the
# chain, which it cannot see, holds each field to one stage).
_CARRIED: dict[str, str] = {}


class SessionMemory(Protocol):
    """What a stage may read of the customer's other sessions (the worker's baton store)."""

    def index(self, customer_id: str) -> MemoryIndex | None: ...

    def earlier(self, customer_id: str | None, session_id: str) -> list[SessionSummary]: ...


@dataclass(frozen=True)
class Inputs:
    """What a stage function may draw on for one ticket."""

    record: StageRecord
    baton: Baton
    llm: LLM
    store: OrderSource
    batons: SessionMemory
    reask_limit: int
    tokens_left: int
    policy: Policy = field(default_factory=default_policy)
    # What the stage reads (its declared ``input``): the ticket, or an earlier stage's result.
    given: Any = None
    # Whether the strategy's final reply is read again by the independent reader.
    read: bool = False
    # What the ticket's stages on this worker share (the last ``history()``); none: this run's.
    memo: TicketMemo | None = field(default=None, repr=False, compare=False)
    # The last ``history()`` without a memo: what it was read from, the index, and the orders.
    _recalled: list[Any] = field(default_factory=list, init=False, repr=False, compare=False)

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
        # Read again only if what ``recallable`` reads changed (a later stage's baton keeps the
        # ticket memories it did not change, the same objects) or the index did: the store
        # hands out the same index object while its bytes are the same, and neither it nor a
        # baton is ever mutated.
        kept = self.memo.recalled if self.memo is not None else self._recalled
        read = recalled_from(self.baton)
        if not kept or kept[1] is not index or not same_reading(kept[0], read):
            kept[:] = [read, index, recallable(self.baton, index)]
        return list(kept[2])

    def shared(self) -> typing.ContextManager[TicketMemo]:
        """A block within which the ticket's readings (``ticket_memo.read_once``) are made once:
        kept in the ticket's memo, or without one in a memo of this stage run alone."""
        return sharing(self.memo or TicketMemo(self.ticket.ticket_id, self.ticket.customer_id, 0.0))

    def earlier(self) -> list[EarlierSession]:
        """The customer's other sessions (warm memory), most recent first."""
        summaries = self.batons.earlier(self.ticket.customer_id, self.ticket.session_id)
        return [EarlierSession.of(s) for s in summaries]


def recalled_from(baton: Baton) -> tuple[Any, ...]:
    """What ``recallable`` reads of ``baton``: the session, what was offered per order and the
    memories of the tickets about an order, in order."""
    about: list[TicketMemory] = [t for t in baton.tickets if t.order_id]
    return (baton.session_id, baton.offered, *about)


def same_reading(kept: tuple[Any, ...], read: tuple[Any, ...]) -> bool:
    """Whether two ``recalled_from`` readings are the same objects (the same session)."""
    return (
        len(kept) == len(read)
        and kept[0] == read[0]
        and all(a is b for a, b in zip(kept[1:], read[1:], strict=True))
    )


@dataclass(frozen=True)
class Stage(Generic[T]):
    """One stage of the chain, everything it is: its name, what it reads and writes, its
    function, what it keeps in the baton, its prompt and its offline rule. Declared with
    ``baton_kafka.streams.runtime.stage``.

    ``input`` is the record type it reads (the ticket, or an earlier stage's ``output``);
    ``output`` the type of its result. A stage that ``carries`` its result does so in a field
    of the stage record of its own (``understanding``, ``match``); any other stage's result
    travels in the record's ``results`` under its name, and reaches the reply's ``stages``;
    ``after`` names the stage it follows when given to ``create_app`` on its own.
    ``topic`` is the default name of the topic its records go out on (before the namespace),
    or ``role`` a ``TopicNames`` role instead. The stage that ``opens_session`` takes the
    session's turn; the one that ``answers`` turns its result into the reply, which goes into
    the baton with ``memory.apply_reply`` once published.
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
        if self.carries is not None:
            if problem := carries_problem(self.carries, self.output):
                raise ValueError(f"stage {self.name}: carries={self.carries!r}: {problem}")
            _CARRIED[self.name] = self.carries

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


def carries_problem(carries: str, output: type[BaseModel]) -> str | None:
    """Why a stage of ``output`` cannot carry its result in the stage record's field
    ``carries``, or None: the field must exist and hold an ``output``."""
    found = StageRecord.model_fields.get(carries)
    if found is None or carries == "results":
        return "the stage record has no such field of its own for a result"
    if output not in typing.get_args(found.annotation):
        return f"the stage record's field holds no {output.__name__}"
    return None


def carrier(name: str) -> str | None:
    """The stage record field that carries the result of the stage ``name``, if one does."""
    return _CARRIED.get(name)

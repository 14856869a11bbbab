"""A stage's per-record checks as one ordered, named list, sharing the record's one view.

Each check looks at a ``RecordView`` and says ``GO`` (the next check runs) or ``DONE`` (it
settled the record: a dead letter, a refusal, a reply sent again, a drop). ``ADMITTING`` runs
once per record, ``ATTEMPTING`` once per attempt at the stage; the stage runs when all say GO.
The order is pinned, and explained check by check, in ``tests/unit/test_checks.py``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

from baton_kafka.agents import people
from baton_kafka.agents.asking import budget_tokens
from baton_kafka.agents.models.llm import LLM
from baton_kafka.agents.policy import Policy
from baton_kafka.schemas.baton import Baton, InFlight
from baton_kafka.schemas.codec import InvalidRecord
from baton_kafka.schemas.records import DeadLetter, Reply, StageName, Ticket
from baton_kafka.schemas.stages import StageRecord
from baton_kafka.streams.kafka.topics import TopicNames
from baton_kafka.streams.observe import tracing
from baton_kafka.streams.observe.observer import Observer
from baton_kafka.streams.runtime import context, dead_letters, erasure, ownership
from baton_kafka.streams.runtime.admission import Admission
from baton_kafka.streams.runtime.batons import BatonStore
from baton_kafka.streams.runtime.budgets import Allowance, CustomerBudgets
from baton_kafka.streams.runtime.bursts import Bursts, joined, turn_ids
from baton_kafka.streams.runtime.chain import Chain
from baton_kafka.streams.runtime.clocks import Clocks
from baton_kafka.streams.runtime.dead_letters import Source
from baton_kafka.streams.runtime.delivery import Delivery
from baton_kafka.streams.runtime.priority import ChainPriority
from baton_kafka.streams.runtime.redelivery import Redelivery, own_entry
from baton_kafka.streams.runtime.scheduler import SessionGate
from baton_kafka.streams.runtime.signing import Signer
from baton_kafka.streams.runtime.stages import Stage
from baton_kafka.streams.settings import Settings


class Verdict(Enum):
    """What a check made of the record: go on to the next check, or it is settled."""

    GO = "go"
    DONE = "done"


GO, DONE = Verdict.GO, Verdict.DONE


class Host(Protocol):
    """What the checks act through: the pipeline's parts and its ways out."""

    settings: Settings
    observer: Observer
    signer: Signer
    admission: Admission
    gate: SessionGate
    clocks: Clocks
    turns: ChainPriority
    bursts: Bursts | None
    redelivery: Redelivery
    chain: Chain
    topics: TopicNames
    budgets: CustomerBudgets
    policy: Policy
    llm: LLM

    def source_topic(self, stage: Stage[Any]) -> str: ...

    async def _untrusted(
        self,
        stage: StageName,
        value: bytes | None,
        problem: str,
        source: Source,
        ticket: Ticket | None = None,
    ) -> None: ...

    async def _reject(
        self, stage: StageName, value: bytes | None, exc: InvalidRecord, source: Source
    ) -> None: ...

    def _drop_erased(self, stage: StageName, ticket: Ticket) -> None: ...

    async def _refuse(
        self, record: StageRecord, stage: StageName, problem: str, source: Source
    ) -> None: ...

    async def _answered(self, reply: Reply, baton: Baton) -> None: ...

    async def _fail_ticket(
        self, record: StageRecord, stage: StageName, dl: DeadLetter, source: Source
    ) -> None: ...


_UNREAD: Any = object()


@dataclass
class RecordView:
    """One record as its checks see it: decoded once, its session's baton read once until a
    wait (the gate, a burst's window, a failed attempt) may have changed it."""

    stage: Stage[Any]
    delivery: Delivery
    source: Source
    batons: BatonStore
    # The stage record (set by ``decode``; a burst's turn replaces it by the joined one).
    record: StageRecord | None = None
    # Set by ``restore`` and ``budget`` for the stage's run.
    baton: Baton | None = None
    allowance: Allowance | None = None
    started: float = 0.0
    _held: Any = field(default=_UNREAD, repr=False)

    @property
    def ticket(self) -> Ticket:
        """The decoded record's ticket (only after ``decode``)."""
        assert self.record is not None, "the record is decoded by the decode check"
        return self.record.ticket

    def held(self) -> Baton | None:
        """The session's baton, read from the store on first use since the last wait."""
        if self._held is _UNREAD:
            self._held = self.batons.get(self.ticket.session_id)
        held: Baton | None = self._held
        return held

    def refresh(self) -> None:
        """Forget the baton read: the record waited, and others may have written it."""
        self._held = _UNREAD

    def entry(self) -> InFlight | None:
        """The baton's entry in flight if it is this record's ticket's."""
        return own_entry(self.held(), self.ticket)


class Check(Protocol):
    """One named check of a record: GO lets the next run, DONE means it settled the record."""

    @property
    def name(self) -> str: ...

    def __call__(self, host: Host, view: RecordView) -> Awaitable[Verdict]: ...


async def passed(checks: Sequence[Check], host: Host, view: RecordView) -> bool:
    """Run ``checks`` in order; True when every one said GO."""
    for check in checks:
        if await check(host, view) is DONE:
            return False
    return True


@dataclass(frozen=True)
class Signature:
    """The record is signed for the topic and key it was read at; else an untrusted letter."""

    name: str = "signature"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        d = view.delivery
        topic = host.source_topic(view.stage)
        problem = host.signer.problem(topic, view.source.key, d.value, d.headers)
        if problem is None:
            return GO
        await host._untrusted(view.stage.name, d.value, problem, view.source, d.ticket())
        return DONE


@dataclass(frozen=True)
class ErasureRequest:
    """At the session's first stage an erasure request erases the session's baton."""

    name: str = "erasure"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        if not (view.stage.opens_session and erasure.requested(view.delivery.headers)):
            return GO
        misplaced = host.admission.misplaced(view.source)
        await erasure.erase_session(view.batons, host.gate, view.delivery.value, misplaced)
        return DONE


@dataclass(frozen=True)
class Decode:
    """The bytes hold a stage record (decoded once); else an invalid-input dead letter."""

    name: str = "decode"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        try:
            view.record = view.delivery.record()
        except InvalidRecord as exc:
            await host._reject(view.stage.name, view.delivery.value, exc, view.source)
            host.observer.stage_done(view.stage.name, "invalid", 0.0)
            return DONE
        return GO


@dataclass(frozen=True)
class Placement:
    """The record was read on its session's key and partition; else an untrusted letter."""

    name: str = "placement"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        ticket = view.ticket
        problem = host.admission.misplaced(view.source)(ticket.session_id)
        if problem is None:
            return GO
        await host._untrusted(view.stage.name, view.delivery.value, problem, view.source, ticket)
        return DONE


@dataclass(frozen=True)
class Erased:
    """A record written before its customer's erasure is dropped: nothing keeps it."""

    name: str = "erased"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        if not host.admission.erased(view.ticket, view.source):
            return GO
        host._drop_erased(view.stage.name, view.ticket)
        return DONE


@dataclass(frozen=True)
class Trace:
    """The admitted record's span is named by its ticket and session."""

    name: str = "trace"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        tracing.annotate(view.ticket.ticket_id, view.ticket.session_id)
        return GO


@dataclass(frozen=True)
class Ownership:
    """The ticket's sender owns the session (the baton as read now); else refused, no reply."""

    name: str = "ownership"
    # Only at the stage that opens the session (before its turn there), or at every stage.
    opening_only: bool = False

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        if self.opening_only and not view.stage.opens_session:
            return GO
        problem = ownership.conflict(view.held(), view.ticket)
        if problem is None:
            return GO
        assert view.record is not None
        await host._refuse(view.record, view.stage.name, problem, view.source)
        return DONE


@dataclass(frozen=True)
class Turn:
    """At the first stage the ticket's clock starts and it waits for the session's turn."""

    name: str = "session_gate"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        if not view.stage.opens_session:
            return GO
        assert view.record is not None
        ticket = view.ticket
        host.clocks.start(view.record)  # before the wait: the customer is waiting
        unfinished = host.redelivery.unfinished
        entering = host.gate.enter(ticket.session_id, ticket.ticket_id, lambda: unfinished(ticket))
        # Waiting for the session's previous ticket, the chain's other work goes on; a
        # ticket that need not wait keeps its turn.
        waits = host.gate.held(ticket.session_id, ticket.ticket_id)
        await (host.turns.waited(entering) if waits else entering)
        view.refresh()
        return GO


@dataclass(frozen=True)
class Burst:
    """At the first stage the session's tickets that follow within the coalescing window join
    the turn (their clocks started: the customer is waiting on each)."""

    name: str = "bursts"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        if host.bursts is None or not view.stage.opens_session:
            return GO
        view.record = await host.turns.waited(self._gathered(host, host.bursts, view))
        view.refresh()
        return GO

    async def _gathered(self, host: Host, bursts: Bursts, view: RecordView) -> StageRecord:
        assert view.record is not None
        record, held = view.record, view.held()
        if host.redelivery.known(record.ticket, view.held):
            return record
        if held is not None and (held.taken_over or held.pending is not None):
            return record  # a person has the session: each ticket is theirs to read
        topic = host.source_topic(host.chain.first)
        later = await bursts.gather(record, view.source, lambda d: joins(host, topic, d))
        for each in later:
            host.clocks.start(each)
        return joined(record, later)


def joins(host: Host, topic: str, delivery: Delivery) -> bool:
    """A queued record may be answered in an earlier ticket's turn: a valid ticket the
    session takes, not a copy of one the baton knows, not an erasure request."""
    ticket = delivery.ticket()
    if ticket is None or erasure.requested(delivery.headers) or host.redelivery.known(ticket):
        return False
    return not host.admission.refuses(topic, delivery)


async def _resumed(host: Host, entry: InFlight, held: Baton) -> None:
    await host._answered(*await host.turns.waited(host.redelivery.resume(entry, held)))


@dataclass(frozen=True)
class PendingReply:
    """A reply the baton holds as pending for this ticket is finished, not made again: at the
    answering stage, or at the first stage of a taken-over session (its only copy)."""

    name: str = "pending_reply"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        held, entry, stage = view.held(), view.entry(), view.stage
        if held is None or entry is None or not entry.pending:
            return GO
        if stage.answers or (stage.opens_session and held.taken_over):
            await _resumed(host, entry, held)
            return DONE
        return GO


@dataclass(frozen=True)
class Redelivered:
    """A copy of a ticket the stage has seen is settled from the baton's entry."""

    name: str = "redelivery"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        stage = view.stage
        target = host.topics.role(stage.target_role)
        settled = await host.redelivery.settle(
            stage.name, view.ticket, view.entry(), target, view.held
        )
        return DONE if settled else GO


@dataclass(frozen=True)
class TakenOver:
    """A person has the session: no agent answers until it is handed back (a silent reply)."""

    name: str = "taken_over"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        stage = view.stage
        held = view.held() if stage.opens_session else None
        if held is None or not held.taken_over:
            return GO
        assert view.record is not None
        reply, held = people.silent(view.ticket, held, llm=host.llm.name, policy=host.policy)
        reply = reply.model_copy(update={"ticket_ids": turn_ids(view.record)})
        await host._answered(reply, await host.turns.waited(host.redelivery.reply(reply, held)))
        host.observer.stage_done(stage.name, "taken_over", 0.0)
        return DONE


@dataclass(frozen=True)
class ContextComplete:
    """The record carries every earlier stage's result the stage reads; else the ticket fails
    (dead letter and a degraded reply)."""

    name: str = "context"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        stage, record = view.stage, view.record
        assert record is not None
        missing = host.chain.missing(stage, record)
        if not missing:
            return GO
        host.observer.context(stage.name, "broken")
        dl = dead_letters.letter(
            stage=stage.name,
            reason="context_broken",
            error=f"the record reached {stage.name} without the result of {' and '.join(missing)}",
            payload="",
            source=view.source,
            ticket=record.ticket,
        )
        await host._fail_ticket(record, stage.name, dl, view.source)
        return DONE


@dataclass(frozen=True)
class Restore:
    """The baton the stage starts from (the table's, or rebuilt from the record), and how
    much of the context survived."""

    name: str = "restore"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        assert view.record is not None
        view.started = time.monotonic()
        previous = host.chain.previous(view.stage.name)
        level, view.baton = context.restore(view.record, view.held(), previous)
        host.observer.context(view.stage.name, level)
        return GO


@dataclass(frozen=True)
class Budget:
    """The tokens the stage may spend: what is left of the session's budget and of the
    customer's."""

    name: str = "budget"

    async def __call__(self, host: Host, view: RecordView) -> Verdict:
        assert view.record is not None and view.baton is not None
        session_left = (
            host.settings.session_token_budget
            - budget_tokens(view.baton.usage)
            - budget_tokens(view.record.usage)
        )
        view.allowance = host.budgets.allowance(view.ticket.customer_id, session_left)
        return GO


# Once per record, before its session is touched beyond a read.
ADMITTING: tuple[Check, ...] = (
    Signature(),
    ErasureRequest(),
    Decode(),
    Placement(),
    Erased(),
    Trace(),
    Ownership(opening_only=True),
    Turn(),
    Burst(),
)

# Once per attempt at the stage, holding the session's turn.
ATTEMPTING: tuple[Check, ...] = (
    Ownership(name="ownership_at_turn"),
    PendingReply(),
    Redelivered(),
    TakenOver(),
    ContextComplete(),
    Restore(),
    Budget(),
)

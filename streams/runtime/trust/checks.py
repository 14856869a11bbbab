"""A stage's per-record checks: the record's one shared view, and how a list of them runs.

Each check looks at a ``RecordView`` and says ``GO`` (the next check runs) or ``DONE`` (it
settled the record: a dead letter, a refusal, a reply sent again, a drop). The lists are
``admission_checks.ADMITTING`` (once per record) and ``turn_checks.ATTEMPTING`` (once per
attempt at the stage); the stage runs when all say GO. Their order is pinned, and explained
check by check, in ``tests/unit/test_checks.py``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

from baton_kafka.agents.models.llm import LLM
from baton_kafka.agents.policy import Policy
from baton_kafka.schemas.baton import Baton, InFlight
from baton_kafka.schemas.codec import InvalidRecord
from baton_kafka.schemas.records import DeadLetter, Reply, StageName, Ticket
from baton_kafka.schemas.stages import StageRecord
from baton_kafka.streams.kafka.topics import TopicNames
from baton_kafka.streams.observe.observer import Observer
from baton_kafka.streams.runtime.answers.clocks import Clocks
from baton_kafka.streams.runtime.answers.redelivery import Redelivery, own_entry
from baton_kafka.streams.runtime.chain import Chain
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.delivery import Delivery
from baton_kafka.streams.runtime.records.signing import Signer
from baton_kafka.streams.runtime.session.batons import BatonStore
from baton_kafka.streams.runtime.session.budgets import Allowance, CustomerBudgets
from baton_kafka.streams.runtime.session.bursts import Bursts
from baton_kafka.streams.runtime.session.priority import ChainPriority
from baton_kafka.streams.runtime.session.scheduler import SessionGate
from baton_kafka.streams.runtime.stages import Stage
from baton_kafka.streams.runtime.trust.admission import Admission
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

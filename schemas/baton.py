"""The baton: one session's shared, explicit context, read and written by every stage."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, Field

from baton_kafka.schemas.action import ActionNote
from baton_kafka.schemas.decision import AppliedDecision, Escalation, PendingOffer, PersonNote
from baton_kafka.schemas.records import SCHEMA_VERSION, OfferLine, StageName, UsageTotals, utcnow
from baton_kafka.schemas.stages import Demand


class TicketMemory(BaseModel):
    """What one ticket of the session was about; kept for the session's whole life."""

    ticket_id: str
    core_problem: str
    product: str | None = None
    problem: str | None = Field(default=None, description="The problem, in a few words.")
    demand: Demand | None = None
    order_id: str | None = None
    order_status: str | None = Field(
        default=None, description="The matched order's status in the store when it was matched."
    )
    status: str | None = Field(default=None, description="The reply's status once answered.")
    solution: str | None = Field(
        default=None, description="What the reply said would be done (at most 200 characters)."
    )
    offer: list[OfferLine] = Field(
        default_factory=list, description="What the reply committed the shop to (approved lines)."
    )
    restated: list[int] = Field(
        default_factory=list,
        description="The places in ``offer`` of lines that restated a line agreed earlier "
        "(the reply's ``offer.restated``): they wrote no action.",
    )
    at: datetime = Field(default_factory=utcnow)


class ChainEntry(BaseModel):
    """One stage's decision on one ticket."""

    ticket_id: str
    stage: StageName
    decision: str
    reason: str = ""
    at: datetime = Field(default_factory=utcnow)


class InFlight(BaseModel):
    """The newest stage result of the ticket the session has in flight, for redelivered copies.

    A session has one ticket in flight at a time, so one entry is all a redelivered record
    needs: the output to send again, or the reply that may not have reached its topic yet.
    """

    ticket_id: str
    stage: StageName
    output: str = Field(
        description="The stage's output record as sent (JSON); for the answering stage, the "
        "reply about to be sent, written before it is sent."
    )
    reply: bool | None = Field(
        default=None,
        description="The output is the ticket's reply (the answering stage's), pending.",
    )
    handoff: str | None = Field(
        default=None,
        description="For the answering stage: the hand-off packet (JSON) to send after the "
        "reply, when the ticket is handed to a person.",
    )
    at: datetime = Field(default_factory=utcnow, description="When the output was recorded.")

    @property
    def pending(self) -> bool:
        """A reply that may or may not have reached the replies topic."""
        if self.reply is None:  # an entry written before the field: the built-in chain's
            return self.stage == "strategy"
        return self.reply

    def reached(self, stage: StageName, order: Sequence[str]) -> bool:
        """The ticket got to ``stage`` or beyond in the chain ``order``: the stage has run."""
        if self.stage not in order or stage not in order:
            return False
        return order.index(self.stage) >= order.index(stage)


class Baton(BaseModel):
    """A session's context. ``version`` grows by one on every change of the context.

    Only the write that records a reply as pending keeps the version: it changes
    ``in_flight`` alone.
    """

    schema_version: int = SCHEMA_VERSION
    session_id: str
    customer_id: str | None = None
    guest: str | None = Field(
        default=None,
        description=(
            "An anonymous session's principal: the digest of its first ticket's guest id "
            "(never the id itself); none for a customer's session or a guest without an id."
        ),
    )
    version: int = 0
    tickets: list[TicketMemory] = Field(
        default_factory=list, description="Core problem of every ticket, oldest first."
    )
    product: str | None = Field(default=None, description="The product currently discussed.")
    problem: str | None = Field(default=None, description="The problem currently discussed.")
    demand: Demand | None = None
    order_id: str | None = Field(default=None, description="The order currently discussed.")
    order_history: list[str] = Field(
        default_factory=list, description="Orders discussed earlier, most recent first."
    )
    products_mentioned: list[str] = Field(default_factory=list)
    chain: list[ChainEntry] = Field(default_factory=list, description="Recent decisions.")
    chain_summary: str = Field(default="", description="Summary of older, folded decisions.")
    flags: list[str] = Field(default_factory=list, description="Attention flags for later stages.")
    answered: list[str] = Field(default_factory=list, description="Recently answered ticket ids.")
    holding: list[str] = Field(
        default_factory=list,
        description="Tickets not answered yet that got their holding reply (recorded before it "
        "is sent, so it is sent at most once).",
    )
    in_flight: InFlight | None = Field(
        default=None,
        description="The stage result of the ticket in flight; none once it is answered.",
    )
    usage: UsageTotals = Field(default_factory=UsageTotals)
    offered: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="Money offered per order and remedy in the session's answered replies, "
        "which later offers for the same order count against.",
    )
    pending: PendingOffer | None = Field(
        default=None,
        description="The offer waiting for a person's approval (the session is parked).",
    )
    actions: list[ActionNote] = Field(
        default_factory=list,
        description="The session's actions the shop's system finished (confirmed, failed, or "
        "given to a person), newest last, at most 8.",
    )
    escalated: list[Escalation] = Field(
        default_factory=list,
        description="Offers that waited for approval past the approval timeout, each escalated "
        "once (recorded before its reply and packet are sent), oldest first.",
    )
    taken_over: bool = Field(
        default=False, description="A person has taken the session over: the agents stay silent."
    )
    closed: bool = Field(default=False, description="A person closed the case.")
    people: list[PersonNote] = Field(
        default_factory=list, description="The decisions people made on the session, oldest first."
    )
    decided: dict[str, AppliedDecision] = Field(
        default_factory=dict,
        description="Every decision id the session applied, until its decided_at is older than "
        "BATON_DECISION_MAX_AGE (a copy is refused by age from then on).",
    )
    updated_at: datetime = Field(default_factory=utcnow)

    @property
    def core_problems(self) -> list[str]:
        return [t.core_problem for t in self.tickets]


class SessionSummary(BaseModel):
    """What one session was about, as kept in the customer's index."""

    session_id: str
    ticket_id: str | None = None
    order_id: str | None = None
    product: str | None = None
    core_problem: str = ""
    at: datetime = Field(default_factory=utcnow)
    expired: bool = Field(default=False, description="The session's baton has expired.")


class OrderMemory(BaseModel):
    """One order a customer's session discussed: what was asked, decided and told, and when."""

    order_id: str
    product: str | None = Field(default=None, description="The product, as the session named it.")
    demands: list[Demand] = Field(
        default_factory=list, description="What the customer asked for about it, oldest first."
    )
    problems: list[str] = Field(default_factory=list, description="The problems raised about it.")
    decision: Demand | None = Field(
        default=None, description="What the last answered ticket about it acted on."
    )
    told_status: str | None = Field(
        default=None, description="The order's status when the customer was last answered."
    )
    session_id: str = Field(description="The session that last discussed it.")
    at: datetime = Field(default_factory=utcnow, description="When it was last discussed.")
    offered: dict[str, float] = Field(
        default_factory=dict,
        description="Money offered for it per remedy in answered replies, across sessions.",
    )
    agreed: dict[str, OfferLine] = Field(
        default_factory=dict,
        description="The lines answered replies agreed for it, across sessions, by the "
        "idempotency key of the action each wrote (a restated line wrote none and is not here).",
    )


class MemoryIndex(BaseModel):
    """A customer's sessions and the orders they discussed, most recent first (bounded)."""

    key: str
    sessions: list[SessionSummary] = Field(default_factory=list)
    orders: list[OrderMemory] = Field(
        default_factory=list, description="Every order the sessions discussed, newest first."
    )
    erased_at: datetime | None = Field(
        default=None,
        description=(
            "When the customer's data was erased (`baton forget`): no record written before "
            "it is taken in again, by any stage or by the index."
        ),
    )


class IndexUpdate(BaseModel):
    """A session's latest summary and its orders, sent to the index topic keyed by customer_id."""

    schema_version: int = SCHEMA_VERSION
    customer_id: str
    summary: SessionSummary
    orders: list[OrderMemory] = Field(
        default_factory=list, description="Every order the session discussed."
    )


class Erasure(BaseModel):
    """A request to forget a customer's data: one per session (key: session_id), one for the
    customer's index (key: customer_id, ``session_id`` null). Sent with the header
    ``baton-control: erase`` on the topic whose worker holds that data."""

    schema_version: int = SCHEMA_VERSION
    request_id: str = Field(description="Shared by every record of one `baton forget`.")
    customer_id: str = Field(description="Whose data is erased.")
    session_id: str | None = Field(
        default=None, description="The session whose baton is erased; null: the index entry."
    )
    requested_at: datetime = Field(default_factory=utcnow)

"""A person's decision on a session, on ``support.decisions``, and what the baton keeps of it."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from baton_kafka.schemas.records import SCHEMA_VERSION, Identifier, Offer, OfferLine, utcnow

DecisionAction = Literal[
    "approve", "deny", "answer", "takeover", "handback", "close", "done", "failed"
]
# The actions that answer the session's pending offer, and must name it.
ON_OFFER: frozenset[str] = frozenset({"approve", "deny"})
# The actions that close an action waiting for a person, and must name its idempotency key.
ON_ACTION: frozenset[str] = frozenset({"done", "failed"})
# The actions whose decision authorises money: kept signed in the baton for the executor.
AUTHORISING: frozenset[str] = frozenset({"approve", "answer"})
ANSWER_CHARS = 4_000
PEOPLE_KEEP = 20
# The most money one decision may name: what a currency's books hold, far above any order.
MAX_AMOUNT = 1e9
# An answer's promise: a few typed lines, like a reply's offer.
MAX_OFFER_LINES = 8
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean_text(value: str) -> str:
    """The text without control characters (newlines and tabs kept)."""
    return _CONTROL.sub("", value)


def utc(value: datetime) -> datetime:
    """``value`` with a time zone: a time written without one is read as UTC."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def bounded_lines(lines: list[OfferLine]) -> list[OfferLine]:
    """``lines`` when each amount is a finite sum of at most ``MAX_AMOUNT``."""
    for line in lines:
        if line.amount is not None and not (
            math.isfinite(line.amount) and line.amount <= MAX_AMOUNT
        ):
            raise ValueError(f"an offer line's amount is at most {MAX_AMOUNT:.0f}")
    return lines


class Override(BaseModel):
    """A person's explicit word that they may promise past the policy's money rules, in the
    role the shop's policy lets do so (``[people] overrides``); logged with the decision."""

    model_config = ConfigDict(extra="forbid")

    role: Identifier = Field(
        description="The role the person decides in (a key of the policy's overrides)."
    )
    reason: Annotated[
        str, StringConstraints(min_length=1, max_length=500), AfterValidator(clean_text)
    ] = Field(description="Why the promise goes past the policy (kept and logged).")


class Decision(BaseModel):
    """What a person decided or said about one session (key: session_id, signed like stage
    records); applied once, in order with the session's tickets."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = Field(default=SCHEMA_VERSION, ge=1, le=1_000)
    decision_id: Identifier = Field(description="Unique id of this decision: a copy is refused.")
    session_id: Identifier = Field(description="The session it is about (also the record key).")
    item: Identifier | None = Field(
        default=None,
        description="The pending item it answers: for approve and deny, the ticket id of the "
        "offer waiting for approval (the hand-off packet's ticket_id); for done and failed, "
        "the idempotency key of the action waiting for a person; optional otherwise.",
    )
    action: DecisionAction = Field(
        description="approve or deny the pending offer; answer the customer with ``text``; "
        "take the session over (the agents stay silent); hand it back; close the case; "
        "done or failed: an action waiting for a person was carried out, or cannot be."
    )
    amount: float | None = Field(
        default=None,
        ge=0,
        le=MAX_AMOUNT,
        allow_inf_nan=False,
        description="approve only: the amount approved instead of the proposed one (an offer "
        "with one money line), within the policy's limits; finite, at most 1e9.",
    )
    text: Annotated[str, StringConstraints(max_length=ANSWER_CHARS), AfterValidator(clean_text)] = (
        Field(
            default="",
            description="answer: the text sent to the customer (required); other actions: a note "
            "kept in the session's context.",
        )
    )
    offer: Annotated[list[OfferLine], AfterValidator(bounded_lines)] = Field(
        default_factory=list,
        max_length=MAX_OFFER_LINES,
        description="answer only: what the text promises, one typed line per remedy (amounts "
        "finite, at most 1e9); held to every limit of the policy like an approval and counted "
        "in the session's ledger. Money the text names must be one of these lines or an offer "
        "the session confirmed before.",
    )
    override: Override | None = Field(
        default=None,
        description="answer and approve: an override of the policy's money limits (remedy "
        "share, cap, window, status, demand, what was paid) up to what the policy lets the "
        "role promise; the text's audit (links, card data, ids, money only as offer lines) "
        "is never overridden.",
    )
    reference: Identifier | None = Field(
        default=None,
        description="done only (required): the shop's system's reference of what the person "
        "carried out (the refund's id), told to the customer.",
    )
    by: Identifier | None = Field(default=None, description="Who decided (the desk's user id).")
    decided_at: Annotated[datetime, AfterValidator(utc)] = Field(
        default_factory=utcnow,
        description="When the person decided (UTC when no zone is given): a decision older than "
        "BATON_DECISION_MAX_AGE, or ahead of the worker's clock by more than a few minutes, is "
        "refused.",
    )


class PendingOffer(BaseModel):
    """An offer above the policy's approval threshold, waiting in the baton for a person."""

    item: str = Field(description="The ticket id whose reply proposed it.")
    offer: Offer = Field(description="The proposed offer (state needs_approval).")
    also: list[str] = Field(
        default_factory=list,
        description="Later tickets of the parked session whose replies proposed an offer again: "
        "a decision may name any of them; the first proposal is the one decided.",
    )
    demand: str = Field(default="information", description="What the customer asked for.")
    language: str = "en"
    at: datetime = Field(default_factory=utcnow, description="When the session was parked.")


class Escalation(BaseModel):
    """A pending offer no person decided within ``BATON_APPROVAL_TIMEOUT``: escalated once,
    withdrawn from the baton's pending offer."""

    item: str = Field(description="The ticket id whose reply proposed the offer.")
    offer: Offer = Field(description="The offer that waited (state needs_approval).")
    parked_at: datetime = Field(description="When the session was parked on it.")
    reply: str = Field(
        default="", description="The reply record (JSON) it sends; empty once it is on the topic."
    )
    packet: str = Field(
        default="",
        description="The hand-off packet (JSON) it sends; empty once it is on the topic.",
    )
    at: datetime = Field(default_factory=utcnow, description="When it was escalated.")


class PersonNote(BaseModel):
    """One decision the session's baton applied: what the person did and said."""

    decision_id: str
    action: DecisionAction
    item: str | None = None
    text: str = Field(default="", description="What the person wrote (at most 500 characters).")
    offer: Offer | None = Field(default=None, description="The offer it confirmed, if any.")
    reply: str = Field(
        default="", description="The reply record (JSON) it sends; empty once it is on the topic."
    )
    source: str = Field(default="", description="Where the decision was read: topic:part:offset.")
    signed: str = Field(
        default="",
        description="approve and answer: the decision record as it was read, so that the "
        "executor checks its signature again before money moves.",
    )
    signature: str = Field(default="", description="Its signature header, as it was read.")
    at: datetime = Field(default_factory=utcnow)


class AppliedDecision(BaseModel):
    """A decision id the session applied, kept while a copy of it could still be accepted."""

    source: str = Field(description="Where it was read: topic:part:offset.")
    decided_at: datetime = Field(description="Its decided_at: kept until it is too old.")

"""An action: one approved offer line to carry out on the shop's systems, on ``support.actions``."""

from __future__ import annotations

import functools
import hashlib
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from baton_kafka.schemas.records import SCHEMA_VERSION, OfferLine, Reply, utcnow

KEY_CHARS = 40


def idempotency_key(session_id: str, ticket_id: str, index: int, line: OfferLine) -> str:
    """The action's key, the same on every retry: session, ticket, the line's place and what
    it is for (never its amount, so a retry with a rounded amount is still the same action)."""
    return _key((session_id, ticket_id, str(index), line.kind, line.order_id, line.item or ""))


# A session's answered tickets' keys are asked again for every later ticket's history.
@functools.lru_cache(maxsize=4096)
def _key(parts: tuple[str, ...]) -> str:
    digest = hashlib.sha256(b"baton-action\0" + "\0".join(parts).encode()).hexdigest()
    return f"bt-{digest[: KEY_CHARS - 3]}"


class Action(BaseModel):
    """One line of an approved offer to carry out, once (key: session_id)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    schema_version: int = Field(default=SCHEMA_VERSION, description="Record layout version.")
    idempotency_key: str = Field(
        description="Derived from the session, the ticket and the line: every retry of this "
        "action carries it, and the shop's system is asked to do it at most once under it."
    )
    session_id: str = Field(description="The session it belongs to (also the record key).")
    customer_id: str | None = Field(default=None, description="The customer, if known.")
    ticket_id: str = Field(description="The ticket whose reply promised the offer.")
    decision_id: str | None = Field(
        default=None,
        description="The person's decision that approved the offer; null when the offer was "
        "within the policy without one.",
    )
    line: int = Field(ge=0, description="The line's place in the offer, from 0.")
    kind: str = Field(description="The remedy: refund, compensation, exchange, cancellation, ...")
    order_id: str = Field(description="The order it is for.")
    item: str | None = Field(
        default=None, description="The item of a multi-item order it is for; null: the order."
    )
    amount: float | None = Field(default=None, ge=0, description="The money, if any.")
    currency: str | None = Field(default=None, description="The amount's currency.")
    channel: str | None = Field(
        default=None, description="Where the money goes: original_payment, store_credit, ..."
    )
    policy_version: str | None = Field(
        default=None, description="Hash of the policy file the offer was checked against."
    )
    requested_at: datetime = Field(
        default_factory=utcnow, description="When the reply that promised it was written."
    )
    language: str | None = Field(
        default=None,
        description="The language of the reply that promised it, for the customer's follow-up; "
        "null: the shop's default language.",
    )

    def offer_line(self) -> OfferLine:
        """The offer line the action carries out."""
        return OfferLine(
            kind=self.kind,
            order_id=self.order_id,
            item=self.item,
            amount=self.amount,
            currency=self.currency,
            channel=self.channel,
        )


def actions_of(reply: Reply) -> list[Action]:
    """One action per line of the reply's offer when it is approved and promised, but none
    for a line it restates (``Offer.restated``); none at all otherwise (an offer waiting for
    a person, a reply handed to a person, no offer)."""
    offer = reply.offer
    # As the session's ledger of what was offered: a handed-off reply promised nothing.
    if offer is None or offer.state != "approved" or reply.status == "handoff":
        return []
    # A restated line was agreed by an earlier reply, whose action stands; each other line
    # keeps its place, so its key is the one it would have without the restated lines.
    restated = set(offer.restated)
    return [
        Action(
            idempotency_key=idempotency_key(reply.session_id, reply.ticket_id, n, line),
            session_id=reply.session_id,
            customer_id=reply.customer_id,
            ticket_id=reply.ticket_id,
            decision_id=reply.decision_id,
            line=n,
            kind=line.kind,
            order_id=line.order_id,
            item=line.item,
            amount=line.amount,
            currency=line.currency,
            channel=line.channel,
            policy_version=reply.policy_version,
            requested_at=reply.replied_at,
            language=reply.language,
        )
        for n, line in enumerate(offer.lines)
        if n not in restated
    ]


ActionState = Literal["requested", "sent", "confirmed", "failed", "needs_person"]
FINAL: frozenset[str] = frozenset({"confirmed", "failed", "needs_person"})


class LedgerEntry(BaseModel):
    """What is known of one action, bound to its session; kept in the session's ledger row."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    action: Action = Field(description="The action, as it was requested.")
    state: ActionState = Field(
        description="requested: not sent yet; sent: sent, the answer not known or not final; "
        "confirmed: the shop's system did it; failed: it refused it; needs_person: baton "
        "cannot carry it out, a person does."
    )
    remote_id: str | None = Field(default=None, description="The shop's system's reference.")
    attempts: int = Field(default=0, ge=0, description="Requests sent for it so far.")
    detail: str = Field(default="", description="The last answer or problem, readable.")
    told: bool = Field(
        default=False,
        description="The customer's follow-up (and a failed action's hand-off packet) was "
        "written for this final state; for one handed to a person, its hand-off packet.",
    )
    handoff: str | None = Field(
        default=None,
        description="needs_person: why a person is asked to carry it out without the "
        "customer being told of a failure (action_manual, action_over_cap); null otherwise.",
    )
    closed_by: str | None = Field(
        default=None, description="The person's done or failed decision that closed it."
    )
    updated_at: datetime = Field(default_factory=utcnow)

    @property
    def waiting(self) -> bool:
        """A person was asked (its hand-off packet was written) and has not closed it yet."""
        return self.state == "needs_person" and self.told

    @property
    def dropped(self) -> bool:
        """Refused before it was sent and given to nobody (forged, or more money than its
        order allows): it moves no money and counts against nothing."""
        return self.state == "needs_person" and self.attempts == 0 and self.handoff is None

    @property
    def untold(self) -> bool:
        """Someone is still to be told: the customer of an action that was sent and ended, or
        that a person closed; the person of one handed to them."""
        if self.told:
            return False
        if self.closed_by is not None or self.handoff is not None:
            return self.state in FINAL
        return self.state in FINAL and self.attempts > 0

    @property
    def idempotency_key(self) -> str:
        return self.action.idempotency_key

    @classmethod
    def of(cls, action: Action) -> LedgerEntry:
        """A new entry: the action requested."""
        return cls(action=action, state="requested")


ACTIONS_KEEP = 8


class ActionNote(BaseModel):
    """An action of the session as the shop's system last reported it, for the next ticket's
    prompt (what was done, not what was promised)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    kind: str = Field(description="The remedy carried out: refund, exchange, ...")
    order_id: str = Field(description="The order it is for.")
    amount: float | None = Field(default=None, description="The money, if any.")
    currency: str | None = None
    state: ActionState = Field(description="confirmed, failed or needs_person.")
    reference: str | None = Field(default=None, description="The shop's system's reference.")
    at: datetime = Field(description="When the shop's system answered.")
    idempotency_key: str = Field(description="The action's key: one note per action.")

    @classmethod
    def of(cls, entry: LedgerEntry) -> ActionNote:
        a = entry.action
        return cls(
            kind=a.kind,
            order_id=a.order_id,
            amount=a.amount,
            currency=a.currency,
            state=entry.state,
            reference=entry.remote_id,
            at=entry.updated_at,
            idempotency_key=a.idempotency_key,
        )


def noted(notes: list[ActionNote], note: ActionNote) -> list[ActionNote]:
    """``notes`` with ``note`` in place of any earlier note of its action, the newest last,
    at most ``ACTIONS_KEEP``."""
    kept = [n for n in notes if n.idempotency_key != note.idempotency_key]
    return [*kept, note][-ACTIONS_KEEP:]

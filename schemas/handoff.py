"""The hand-off packet: what a person taking over a ticket needs, on ``support.handoffs``."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from baton_kafka.schemas.action import Action
from baton_kafka.schemas.records import (
    SCHEMA_VERSION,
    LanguageCode,
    Offer,
    OfferLine,
    Order,
    utcnow,
)

HandoffReason = Literal[
    # the policy's triggers, whatever the model wrote
    "safety",
    "legal",
    "self_harm",
    "prompt_injection",
    "repeated_contact",
    # an offer above the policy's approval threshold
    "needs_approval",
    # that offer waited past the approval timeout with no person's decision
    "approval_timeout",
    # the strategy agent asked for a person itself
    "agent_decision",
    # no valid answer: the model's output, the model or the budget failed
    "validation_failed",
    "model_refused",
    "max_tokens",
    "model_error",
    "timeout",
    "budget_exceeded",
    "spend_limit",
    "untrusted_record",
    # a stage could not process the ticket: the fallback reply, a person follows up
    "stage_error",
    "context_broken",
    "order_store_unavailable",
    # an approved offer's action was refused by the shop's system or cannot be carried out
    "action_failed",
    # an approved offer's action for a person to carry out (the manual executor)
    "action_manual",
    # an approved offer's action over a daily cap: never sent, a person decides
    "action_over_cap",
    "other",
]
Urgency = Literal["normal", "high"]
# Who wrote a note for staff: the model (from the customer's text, unverified) or baton itself.
NoteAuthor = Literal["model", "baton"]
# What a person reads first in a note for staff, by who wrote it.
NOTE_LABELS: dict[str, str] = {
    "model": "[written by the model from the customer's text: unverified, not an instruction]",
    "baton": "[written by baton]",
}
_DOT = r"[.\u3002\uff0e\uff61]"
# A link as a reader's program would make one: a scheme, "www.", or a dotted host with a
# top-level name of letters (an e-mail's domain too). The ideographic dots a browser reads as
# dots count between ASCII labels only: elsewhere they end a sentence of CJK text.
_LINK = re.compile(
    r"(?P<scheme>\b[a-z][a-z0-9+.-]{1,15}://)?"
    r"(?P<host>(?<![\w-])(?:(?:[\w-]+\.)+[^\W\d_]{2,24}(?![\w-])"
    r"|(?:[a-z0-9-]+[\u3002\uff0e\uff61])+[a-z]{2,24}(?![a-z0-9-])))"
    r"|(?P<bare>\b[a-z][a-z0-9+.-]{1,15}://[^\s\"'<>]+)",
    re.I,
)


def defang(text: str) -> tuple[str, list[str]]:
    """``text`` with every link made inert (``hxxps[://]evil[.]example/x``: no reader or mail
    program links it) and the inert links, in order."""
    links: list[str] = []

    def inert(m: re.Match[str]) -> str:
        scheme = m.group("scheme") or ""
        if m.group("bare"):
            scheme, rest = m.group("bare").split("://", 1)
            shown = f"{_scheme(scheme)}[://]{re.sub(_DOT, '[.]', rest)}"
        else:
            head = f"{_scheme(scheme[:-3])}[://]" if scheme else ""
            shown = head + re.sub(_DOT, "[.]", m.group("host"))
        links.append(shown)
        return shown

    return _LINK.sub(inert, text), links


def _scheme(scheme: str) -> str:
    return re.sub(r"^(h)tt(ps?)$", r"\1xx\2", scheme, flags=re.I) if scheme else scheme


class StaffNote(BaseModel):
    """A note for the people who take a ticket over, as they are shown it."""

    written_by: NoteAuthor = Field(
        description="model: the model wrote it from the customer's text (unverified, never an "
        "instruction to staff); baton: baton's own fixed text."
    )
    text: str = Field(description="The note with its links made inert (hxxps[://]x[.]com).")
    links: list[str] = Field(default_factory=list, description="The note's links, inert.")
    flagged: list[str] = Field(
        default_factory=list,
        description="Kinds of instruction aimed at staff found in it (override, ignore_policy, "
        "approve, confirm_link): treat the note as an attempt to steer staff.",
    )

    def labelled(self) -> str:
        """The note as one text: its label, a warning if flagged, the inert text."""
        flags = f" [flagged: asks staff to {', '.join(self.flagged)}]" if self.flagged else ""
        return f"{NOTE_LABELS[self.written_by]}{flags} {self.text}".rstrip()


def unflagged(text: str, written_by: NoteAuthor = "model") -> StaffNote:
    """``text`` as a note whose instructions were not looked for (a packet written before
    notes were labelled): labelled and its links inert all the same."""
    inert, links = defang(text)
    return StaffNote(written_by=written_by, text=inert, links=links)


PACKET_TEXT_CHARS = 2_000
PACKET_TURNS_KEEP = 20


class Turn(BaseModel):
    """One earlier ticket of the session, compact: what was raised and what was answered."""

    ticket_id: str
    at: datetime = Field(description="When the customer wrote it.")
    core_problem: str = Field(description="The ticket's core problem, as understood.")
    demand: str | None = Field(default=None, description="What the customer asked for.")
    order_id: str | None = Field(default=None, description="The order it was about.")
    status: str | None = Field(
        default=None, description="The reply's status (answered, degraded, handoff); null: none."
    )
    solution: str | None = Field(
        default=None, description="What the reply said would be done (at most 200 characters)."
    )


class Promise(BaseModel):
    """What an earlier reply of the session committed the shop to."""

    ticket_id: str
    lines: list[OfferLine] = Field(description="The offer's lines, as validated and sent.")


class Promised(BaseModel):
    """Everything promised so far: the session's ledger, its replies' offers, other sessions'."""

    offered: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="Money offered per order and remedy in the session's answered replies.",
    )
    offers: list[Promise] = Field(
        default_factory=list, description="Each earlier reply's offer in the session, oldest first."
    )
    order_offered: dict[str, float] = Field(
        default_factory=dict,
        description="Money offered for the verified order per remedy, in any of the "
        "customer's sessions (what a new offer for it counts against).",
    )


class HandoffPacket(BaseModel):
    """One ticket handed to a person: why, what is known and verified, what was promised, by when.

    Published on ``support.handoffs`` (key: session_id), exactly one per handed-off ticket,
    before the ticket's offset is committed.
    """

    model_config = ConfigDict(extra="ignore")

    schema_version: int = Field(default=SCHEMA_VERSION, description="Record layout version.")
    packet_id: str = Field(
        description="Unique per ticket (``handoff:<ticket_id>``; ``escalation:<ticket_id>`` for "
        "the escalation of its offer's approval): a consumer that sees one twice keeps the first."
    )
    ticket_id: str = Field(description="The ticket handed off.")
    session_id: str
    customer_id: str | None
    reason: HandoffReason = Field(description="Why, as a code: the first of ``reasons``.")
    reason_text: str = Field(description="Why, in words, for the person taking over.")
    reasons: list[HandoffReason] = Field(
        description="Every reason that applies, most important first."
    )
    urgency: Urgency = Field(
        description="high for safety, legal, self-harm, repeated contact and an approval's timeout."
    )
    handed_off_at: datetime = Field(default_factory=utcnow)
    opened_at: datetime = Field(
        description="When the customer wrote the ticket (never later than its intake)."
    )
    deadline: datetime = Field(
        description="When the desk should have answered: ``opened_at`` plus the desk's SLA "
        "(BATON_HANDOFF_DEADLINE); for an approval's timeout, ``handed_off_at`` plus the SLA."
    )
    language: LanguageCode = Field(description="The customer's language, a BCP 47 code.")
    text: str = Field(
        description="The ticket's text (at most 2,000 characters); empty for an approval's "
        "timeout (the ticket's first packet has it)."
    )
    core_problem: str | None = Field(
        description="The ticket's core problem; null when no stage understood it."
    )
    earlier_core_problems: list[str] = Field(
        default_factory=list, description="Every earlier core problem of the session, oldest first."
    )
    order_id: str | None = Field(description="The order the look-up matched, or null.")
    order: Order | None = Field(
        description="The matched order as the order store holds it for this customer, re-read "
        "at the strategy stage; null when none matched or the store did not vouch for it."
    )
    promised: Promised = Field(default_factory=Promised)
    proposed_offer: Offer | None = Field(
        default=None,
        description="The offer waiting for a person's approval (state needs_approval); for an "
        "approval's timeout, the offer that waited, now withdrawn; null otherwise.",
    )
    reply: str = Field(description="What the customer was told (the holding reply).")
    internal_note: str = Field(
        description="The reply's note for the support team as staff are shown it: labelled with "
        "who wrote it, links inert, instructions aimed at staff flagged (``note``)."
    )
    note: StaffNote | None = Field(
        default=None,
        description="The note's parts: who wrote it, its inert text and links, what it was "
        "flagged for. A packet written without it gets one when read, from ``internal_note``.",
    )
    conversation: list[Turn] = Field(
        default_factory=list,
        description="The session's earlier tickets, oldest first (the most recent 20).",
    )
    conversation_omitted: int = Field(
        default=0, description="Earlier tickets left out of ``conversation``."
    )
    dead_letters: list[str] = Field(
        default_factory=list, description="Ids of the ticket's dead letters, if any."
    )
    baton_version: int = Field(description="The baton version the reply was written from.")
    policy_version: str | None = Field(
        default=None, description="Hash of the policy file in force."
    )
    action: Action | None = Field(
        default=None,
        description="An approved offer's action waiting for a person (reasons action_manual, "
        "action_over_cap, action_failed): carry it out, then close it with a done decision "
        "(the system's reference) or a failed one naming its idempotency_key as the item.",
    )

    @model_validator(mode="before")
    @classmethod
    def _labelled(cls, data: Any) -> Any:
        """A packet without ``note`` (written by an older version): its internal note taken
        as the model's, labelled and with its links made inert, wherever it is read."""
        if not isinstance(data, dict) or data.get("note") is not None:
            return data
        raw = data.get("internal_note")
        if not isinstance(raw, str):
            return data
        note = unflagged(raw)
        return {**data, "note": note, "internal_note": note.labelled()}

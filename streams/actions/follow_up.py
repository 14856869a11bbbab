"""What the customer is told when an action ends: a follow-up reply from the typed action (its
reference when confirmed, an apology that promises nothing new otherwise) and, when it did not
happen, a hand-off packet for the person who takes it over."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from baton_kafka.agents import staff_notes
from baton_kafka.agents.fixed_texts import fixed
from baton_kafka.schemas.action import ActionNote, LedgerEntry, noted
from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.handoff import HandoffPacket
from baton_kafka.schemas.records import OfferLine, Reply, Ticket, utcnow
from baton_kafka.streams.runtime.records.sink import Sink
from baton_kafka.streams.runtime.session.batons import BatonStore
from baton_kafka.streams.runtime.session.scheduler import SessionGate

DETAIL_CHARS = 300


def follow_up_id(entry: LedgerEntry) -> str:
    """The follow-up's ticket id: one per action (and per person's decision that closed it),
    so a consumer can drop a copy."""
    closed = f":{entry.closed_by}" if entry.closed_by else ""
    return f"action:{entry.idempotency_key}{closed}"


def _amount(entry: LedgerEntry) -> str:
    action = entry.action
    if action.amount is None:
        return ""
    currency = f" {action.currency}" if action.currency else ""
    return f" ({action.amount:.2f}{currency})"


def tells(entry: LedgerEntry) -> bool:
    """The entry ended in a state someone hears about and was not told yet: the customer of
    one sent, then confirmed, failed or given to a person, or closed by a person; the person
    of one handed to them (``handoff``)."""
    return entry.untold


def quiet(entry: LedgerEntry) -> bool:
    """A person is asked to carry it out and the customer, promised it, hears nothing yet."""
    return entry.state == "needs_person" and entry.handoff is not None


def follow_up(entry: LedgerEntry, default_language: str = "en") -> Reply:
    """The customer's follow-up of a final entry: ``action_confirmed`` with the system's
    reference, or ``action_failed``; every figure from the action, never from prose."""
    action = entry.action
    language = action.language or default_language
    confirmed = entry.state == "confirmed"
    fill = {"order": action.order_id, "amount": _amount(entry)}
    if confirmed:
        text = fixed(
            "action_confirmed",
            language,
            default_language,
            **fill,
            reference=entry.remote_id or action.idempotency_key,
        )
    else:
        text = fixed("action_failed", language, default_language, **fill)
    line = action.offer_line()
    return Reply(
        ticket_id=follow_up_id(entry),
        session_id=action.session_id,
        customer_id=action.customer_id,
        status="action_confirmed" if confirmed else "action_failed",
        reply=text,
        solution=_solution(line, entry),
        internal_note=f"Action {action.idempotency_key} of ticket {action.ticket_id}: "
        f"{entry.state}. {entry.detail[:DETAIL_CHARS]}".strip(),
        confidence=1.0,
        order_id=action.order_id,
        language=language,
        decision_id=action.decision_id,
        policy_version=action.policy_version,
        ticket_ids=[action.ticket_id],
    )


def _what(line: OfferLine) -> str:
    money = f" {line.amount:.2f} {line.currency or ''}".rstrip() if line.amount is not None else ""
    return f"{line.kind}{money} for order {line.order_id}"


def _solution(line: OfferLine, entry: LedgerEntry) -> str:
    ref = f", reference {entry.remote_id}" if entry.remote_id else ""
    return f"{_what(line)}: {entry.state}{ref}"


CLOSE = (
    " Close it with a decision naming the action's idempotency key: done with the system's "
    "reference once it is carried out, or failed."
)


def packet(
    entry: LedgerEntry,
    reply: Reply | None,
    deadline_s: float,
    baton_version: int = 0,
    default_language: str = "en",
) -> HandoffPacket:
    """The hand-off packet of an action a person carries out: ``reply`` is the apology the
    customer was sent (an action that failed), or None when the customer was told nothing
    new (handed to a person, or over a daily cap); a person closes it with a decision."""
    action = entry.action
    now = utcnow()
    what = _what(action.offer_line())
    detail = entry.detail[:DETAIL_CHARS] or "no detail"
    if reply is not None:
        text = (
            f"The approved {what} was not carried out ({entry.state}: {detail}); the customer "
            "was told it could not be completed and that a person will contact them. Carry it "
            "out or answer."
        )
        internal, told, language = reply.internal_note, reply.reply, reply.language
    else:
        capped = entry.handoff == "action_over_cap"
        why = "is over a daily cap and was not sent" if capped else "is for a person to carry out"
        text = (
            f"The approved {what} {why} ({detail}). The customer was promised it and has been "
            "told nothing since."
        )
        if capped:
            text += " Carry it out only if it is right."
        internal = f"Action {action.idempotency_key} of ticket {action.ticket_id}: {detail}"
        told, language = "", action.language or default_language
    reason = "action_failed" if reply is not None else entry.handoff or "action_manual"
    note = staff_notes.note(internal, "baton")
    return HandoffPacket(
        packet_id=f"action:{action.idempotency_key}",
        ticket_id=action.ticket_id,
        session_id=action.session_id,
        customer_id=action.customer_id,
        reason=reason,
        reason_text=text + (CLOSE if entry.state == "needs_person" else ""),
        reasons=[reason],
        urgency="high",
        handed_off_at=now,
        opened_at=action.requested_at,
        deadline=now + timedelta(seconds=deadline_s),
        language=language,
        text="",
        core_problem=None,
        order_id=action.order_id,
        order=None,
        reply=told,
        internal_note=note.labelled(),
        note=note,
        baton_version=baton_version,
        policy_version=action.policy_version,
        action=action if entry.state == "needs_person" else None,
    )


@dataclass
class Teller:
    """Writes an ended action's follow-up to the replies topic and, when it did not happen,
    its hand-off packet after it; both acknowledged before the ledger records it told."""

    sink: Sink
    replies_topic: str
    handoffs_topic: str
    batons: BatonStore
    default_language: str = "en"
    deadline_s: float = 3600.0

    async def __call__(self, entry: LedgerEntry) -> Reply | None:
        session = entry.action.session_id
        baton = self.batons.get(session)
        version = baton.version if baton is not None else 0
        if quiet(entry):
            handed = packet(entry, None, self.deadline_s, version, self.default_language)
            await self.sink.send(self.handoffs_topic, session, dumps(handed))
            return None
        reply = follow_up(entry, self.default_language)
        await self.sink.send(self.replies_topic, session, dumps(reply))
        # A person who closed it knows already; otherwise one carries it out or answers.
        if reply.status == "action_failed" and entry.closed_by is None:
            handed = packet(entry, reply, self.deadline_s, version)
            await self.sink.send(self.handoffs_topic, session, dumps(handed))
        return reply


@dataclass
class Noting:
    """Records an ended action in its session's baton (``actions``), between the session's
    tickets, so that the next ticket's prompt states it."""

    batons: BatonStore
    gate: SessionGate
    unfinished: Callable[[Ticket], str | None]

    async def __call__(self, entry: LedgerEntry) -> None:
        session = entry.action.session_id
        name = f"action:{entry.idempotency_key}"
        probe = Ticket.model_construct(ticket_id=name, session_id=session, text="")
        await self.gate.enter(session, name, lambda: self.unfinished(probe))
        try:
            baton = self.batons.get(session)
            if baton is None:
                return  # expired or erased: nothing to tell a next ticket
            notes = noted(baton.actions, ActionNote.of(entry))
            await self.batons.save_durably(baton.model_copy(update={"actions": notes}))
        finally:
            self.gate.leave(session, name)

"""The hand-off packet of a ticket handed to a person, from the baton, the record and the reply."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, get_args

from baton_kafka.agents import staff_notes
from baton_kafka.agents.history import recallable
from baton_kafka.agents.outcome import Outcome
from baton_kafka.agents.policy import Policy
from baton_kafka.agents.stages.strategy.agent import already_offered
from baton_kafka.schemas.baton import Baton, OrderMemory
from baton_kafka.schemas.handoff import (
    PACKET_TEXT_CHARS,
    PACKET_TURNS_KEEP,
    HandoffPacket,
    HandoffReason,
    NoteAuthor,
    Promise,
    Promised,
    Turn,
    defang,
)
from baton_kafka.schemas.records import DeadLetter, Order, Reply, utcnow
from baton_kafka.schemas.stages import StageRecord
from baton_kafka.streams.runtime.session.batons import BatonStore

KNOWN: frozenset[str] = frozenset(get_args(HandoffReason))
# The strategy stage's names for the policy's triggers, and the approval it waits for.
TRIGGERS: dict[str, HandoffReason] = {
    "safety": "safety",
    "legal": "legal",
    "self_harm": "self_harm",
    "injection": "prompt_injection",
    "repeated contact": "repeated_contact",
    "approval": "needs_approval",
}
PRIORITY: tuple[str, ...] = (
    "self_harm",
    "safety",
    "legal",
    "prompt_injection",
    "repeated_contact",
    "needs_approval",
)
URGENT = frozenset({"self_harm", "safety", "legal", "repeated_contact"})
ERROR_CHARS = 300


def packet_id(ticket_id: str) -> str:
    """The packet's id: one per ticket, so a consumer can drop a copy."""
    return f"handoff:{ticket_id}"


def escalation_id(ticket_id: str) -> str:
    """The id of the packet escalating ``ticket_id``'s offer (one per ticket, like its own)."""
    return f"escalation:{ticket_id}"


def _code(reason: str) -> HandoffReason:
    return reason if reason in KNOWN else "other"  # type: ignore[return-value]


def _offer_text(reply: Reply) -> str:
    if reply.offer is None:
        return ""
    lines = ", ".join(
        f"{line.kind} {line.amount:.2f} {line.currency or ''}".strip()
        if line.amount is not None
        else line.kind
        for line in reply.offer.lines
    )
    return f" ({lines} for order {reply.offer.lines[0].order_id})" if lines else ""


def _text(reason: HandoffReason, reply: Reply, error: str, policy: Policy | None) -> str:
    """One sentence per reason, for the person who takes over."""
    if reason == "safety":
        return "The customer reports a safety hazard: the policy sends it to a person."
    if reason == "legal":
        return "The customer mentions legal action or a regulator: the policy sends it to a person."
    if reason == "self_harm":
        return "The customer may harm themselves: a person answers now, not the shop's script."
    if reason == "prompt_injection":
        return "The message tries to instruct the agents: the policy sends it to a person."
    if reason == "repeated_contact":
        return "The customer has raised the same problem again in this session."
    if reason == "needs_approval":
        currency = reply.offer.currency if reply.offer is not None else None
        limit = policy.approval_threshold(currency) if policy is not None else None
        above = f" ({limit:g})" if limit is not None else ""
        return (
            f"The proposed offer{_offer_text(reply)} is above the policy's approval "
            f"threshold{above}: approve or deny it."
        )
    if reason == "agent_decision":
        # Its words are the model's: they are in the note, labelled, never in baton's own text.
        return "The strategy agent asked for a person: see its note (written by the model)."
    # An error may quote the model's output: its links are made inert here too.
    return f"No valid answer ({reason}): {defang(error[:ERROR_CHARS])[0]}"


def _conversation(baton: Baton, ticket_id: str) -> tuple[list[Turn], int]:
    earlier = [t for t in baton.tickets if t.ticket_id != ticket_id]
    kept = earlier[-PACKET_TURNS_KEEP:]
    turns = [
        Turn(
            ticket_id=t.ticket_id,
            at=t.at,
            core_problem=t.core_problem,
            demand=t.demand,
            order_id=t.order_id,
            status=t.status,
            solution=t.solution,
        )
        for t in kept
    ]
    return turns, len(earlier) - len(kept)


def _promised(baton: Baton, order: Order | None, history: Sequence[OrderMemory]) -> Promised:
    return Promised(
        offered={order_id: dict(kinds) for order_id, kinds in baton.offered.items()},
        offers=[Promise(ticket_id=t.ticket_id, lines=t.offer) for t in baton.tickets if t.offer],
        order_offered=already_offered(baton, order, history),
    )


def build(
    record: StageRecord,
    baton: Baton,
    reply: Reply,
    reasons: Sequence[str],
    *,
    error: str = "",
    order: Order | None,
    deadline_s: float,
    dead_letters: Sequence[str] = (),
    history: Sequence[OrderMemory] = (),
    policy: Policy | None = None,
    note_by: NoteAuthor = "model",
) -> HandoffPacket:
    """The packet of ``reply``'s ticket: ``reasons`` as the stages gave them, most important
    first once sorted; ``order`` is the store's copy (or None); ``note_by`` wrote the reply's
    internal note."""
    ticket = record.ticket
    codes = list(dict.fromkeys(_code(r) for r in reasons)) or ["other"]
    codes.sort(key=lambda c: PRIORITY.index(c) if c in PRIORITY else len(PRIORITY))
    primary = codes[0]
    opened = ticket.written_at(record.received_at)
    turns, omitted = _conversation(baton, ticket.ticket_id)
    u = record.understanding
    proposed = reply.offer if reply.offer and reply.offer.state == "needs_approval" else None
    note = staff_notes.note(reply.internal_note, note_by)
    return HandoffPacket(
        packet_id=packet_id(ticket.ticket_id),
        ticket_id=ticket.ticket_id,
        session_id=ticket.session_id,
        customer_id=ticket.customer_id,
        reason=primary,
        reason_text=" ".join(_text(c, reply, error, policy) for c in codes),
        reasons=codes,
        urgency="high" if URGENT & set(codes) else "normal",
        opened_at=opened,
        deadline=opened + timedelta(seconds=deadline_s),
        language=reply.language,
        text=ticket.text[:PACKET_TEXT_CHARS],
        core_problem=u.core_problem if u else None,
        earlier_core_problems=[
            t.core_problem for t in baton.tickets if t.ticket_id != ticket.ticket_id
        ],
        order_id=reply.order_id if order is None else order.order_id,
        order=order,
        promised=_promised(baton, order, history),
        proposed_offer=proposed,
        reply=reply.reply,
        internal_note=note.labelled(),
        note=note,
        conversation=turns,
        conversation_omitted=omitted,
        dead_letters=list(dead_letters),
        baton_version=baton.version,
        policy_version=reply.policy_version,
    )


@dataclass(frozen=True)
class Desk:
    """Makes the packets of a pipeline's hand-offs: its tables, the desk's SLA, its policy."""

    batons: BatonStore
    deadline_s: float
    policy: Policy

    def for_answer(
        self,
        record: StageRecord,
        baton: Baton,
        reply: Reply,
        outcome: Outcome[Any],
        dead_letters: Sequence[str],
        history: list[OrderMemory] | None = None,
    ) -> HandoffPacket | None:
        """The packet of a strategy reply that hands the ticket to a person; None if not
        (``history``: the customer's, as the stage read it now; read here when not given)."""
        if reply.status != "handoff":
            return None
        reasons = [TRIGGERS.get(r, r) for r in outcome.handoff_reasons]
        failure = outcome.failure
        if failure is not None and failure.handoff:
            reasons.append(failure.reason)
        elif record.handoff:
            reasons.append("other")  # an earlier stage's failure: its dead letter says which
        if not reasons:
            reasons.append("agent_decision")
        if history is None:
            customer = record.ticket.customer_id
            history = recallable(baton, self.batons.index(customer) if customer else None)
        return build(
            record,
            baton,
            reply,
            reasons,
            error=failure.error if failure else "an earlier stage handed the ticket over",
            order=outcome.verified,
            deadline_s=self.deadline_s,
            dead_letters=dead_letters,
            history=history,
            policy=self.policy,
        )

    def for_fallback(
        self, record: StageRecord, baton: Baton, reply: Reply, dl: DeadLetter
    ) -> HandoffPacket:
        """The packet of a ticket a stage could not process: its fallback reply promised a
        person."""
        return build(
            record,
            baton,
            reply,
            [str(dl.reason)],
            error=dl.error,
            order=None,
            deadline_s=self.deadline_s,
            dead_letters=[*record.degraded, dl.id],
            policy=self.policy,
            note_by="baton",
        )

    def for_escalation(self, baton: Baton, reply: Reply, timeout_s: float) -> HandoffPacket:
        """The packet of the offer ``baton`` has pending, which no person decided within
        ``timeout_s``: urgent, the offer withdrawn, ``reply`` what the customer was told."""
        pending = baton.pending
        assert pending is not None
        memory = next((t for t in baton.tickets if t.ticket_id == pending.item), None)
        customer = baton.customer_id
        history = recallable(baton, self.batons.index(customer) if customer else None)
        turns, omitted = _conversation(baton, pending.item)
        now = utcnow()
        offer = _offer_text(reply.model_copy(update={"offer": pending.offer}))
        note = staff_notes.note(reply.internal_note, "baton")
        return HandoffPacket(
            packet_id=escalation_id(pending.item),
            ticket_id=pending.item,
            session_id=baton.session_id,
            customer_id=customer,
            reason="approval_timeout",
            reason_text=f"The offer{offer} waited for approval since {pending.at:%Y-%m-%d %H:%M} "
            f"UTC, longer than {timeout_s:g} s, and nobody decided: it is withdrawn and the "
            "customer was told a colleague will contact them. Answer or take the session over.",
            reasons=["approval_timeout", "needs_approval"],
            urgency="high",
            handed_off_at=now,
            opened_at=min(memory.at, pending.at) if memory is not None else pending.at,
            deadline=now + timedelta(seconds=self.deadline_s),
            language=pending.language,
            text="",
            core_problem=memory.core_problem if memory is not None else None,
            earlier_core_problems=[
                t.core_problem for t in baton.tickets if t.ticket_id != pending.item
            ],
            order_id=reply.order_id,
            order=None,
            promised=_promised(baton, None, history),
            proposed_offer=pending.offer,
            reply=reply.reply,
            internal_note=note.labelled(),
            note=note,
            conversation=turns,
            conversation_omitted=omitted,
            baton_version=baton.version,
            policy_version=reply.policy_version,
        )

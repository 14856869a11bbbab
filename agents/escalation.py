"""An offer no person decided in time: withdrawn from the baton once, the customer told so."""

from __future__ import annotations

from datetime import datetime, timedelta

from baton_kafka.agents.fixed_texts import fixed
from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.decision import PEOPLE_KEEP, Escalation, PendingOffer
from baton_kafka.schemas.handoff import HandoffPacket
from baton_kafka.schemas.records import Reply, utcnow

ESCALATED = "escalated"


def due(pending: PendingOffer, timeout_s: float) -> datetime:
    """When ``pending`` is escalated if no person decides it first."""
    return pending.at + timedelta(seconds=timeout_s)


def overdue(baton: Baton | None, item: str, timeout_s: float, now: datetime) -> bool:
    """``baton`` still has ``item``'s offer pending, past its due time (and no person has the
    session: one who took it over answers for it)."""
    if baton is None or baton.pending is None or baton.pending.item != item:
        return False
    return not baton.taken_over and not baton.closed and due(baton.pending, timeout_s) <= now


def reply_of(baton: Baton, pending: PendingOffer, policy_version: str, default: str) -> Reply:
    """The customer's one reply of an escalation: a fixed text in their language that promises
    nothing the parked reply did not."""
    return Reply(
        ticket_id=pending.item,
        session_id=baton.session_id,
        customer_id=baton.customer_id,
        status="handoff",
        reply=fixed("approval_overdue", pending.language, default),
        solution="The offer's approval took too long; a person follows up.",
        internal_note="No person decided the offer waiting for approval in time: escalated, "
        "the offer is withdrawn.",
        confidence=0.0,
        order_id=pending.offer.lines[0].order_id if pending.offer.lines else baton.order_id,
        language=pending.language,
        baton_version=baton.version + 1,
        llm=ESCALATED,
        policy_version=policy_version,
    )


def escalate(baton: Baton, reply: Reply, packet: HandoffPacket) -> Baton:
    """``baton`` without its pending offer, recording its escalation with the reply and the
    packet still to send (a late decision on the offer is refused from then on)."""
    assert baton.pending is not None
    note = Escalation(
        item=baton.pending.item,
        offer=baton.pending.offer,
        parked_at=baton.pending.at,
        reply=dumps(reply).decode(),
        packet=dumps(packet).decode(),
    )
    return baton.model_copy(
        update={
            "pending": None,
            "escalated": [*baton.escalated, note][-PEOPLE_KEEP:],
            "version": baton.version + 1,
            "updated_at": utcnow(),
        }
    )


def unsent(baton: Baton) -> list[Escalation]:
    """The baton's escalations whose reply or packet may not be on its topic yet."""
    return [e for e in baton.escalated if e.reply or e.packet]


def sent(baton: Baton, item: str) -> Baton:
    """``baton`` with the escalation of ``item`` marked as on both topics."""
    done = [
        e.model_copy(update={"reply": "", "packet": ""}) if e.item == item else e
        for e in baton.escalated
    ]
    return baton.model_copy(update={"escalated": done})


def of(baton: Baton | None, item: str | None) -> Escalation | None:
    """The baton's escalation of ``item``'s offer, if it was escalated."""
    if baton is None or item is None:
        return None
    return next((e for e in baton.escalated if e.item == item), None)

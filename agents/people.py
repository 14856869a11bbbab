"""People in the loop, in the baton: park an offer for approval, apply a person's decision."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from baton_kafka.agents import escalation
from baton_kafka.agents.people_answers import AnswerRefused, answer_offer
from baton_kafka.agents.people_offers import approved_offer, money_lines, next_option
from baton_kafka.agents.people_refused import Refused as Refused
from baton_kafka.agents.people_texts import alternative, confirmation
from baton_kafka.agents.policy import Policy
from baton_kafka.agents.policy.agreed import marked
from baton_kafka.schemas.baton import Baton, OrderMemory, TicketMemory
from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.decision import (
    ON_ACTION,
    ON_OFFER,
    PEOPLE_KEEP,
    AppliedDecision,
    Decision,
    PendingOffer,
    PersonNote,
)
from baton_kafka.schemas.records import Offer, Order, Reply, ReplyStatus, Ticket, utcnow

NOTE_CHARS = 500
PERSON = "person"
# The actions a person may start on a session with nothing open for them (done and failed
# answer an action waiting in the ledger, which the actions' worker checks).
STARTED = frozenset({"answer", "takeover", *ON_ACTION})


def park(baton: Baton, reply: Reply) -> Baton:
    """``baton`` with the reply's offer pending when it waits for approval (the session is
    parked); a later ticket proposing again while parked is added to the pending item's
    names, and the first proposal stays the one a person decides."""
    offer = reply.offer
    if offer is None or offer.state != "needs_approval":
        return baton
    if baton.pending is not None:
        if reply.ticket_id in (baton.pending.item, *baton.pending.also):
            return baton
        also = [*baton.pending.also, reply.ticket_id]
        return baton.model_copy(update={"pending": baton.pending.model_copy(update={"also": also})})
    memory = next((t for t in baton.tickets if t.ticket_id == reply.ticket_id), None)
    demand = memory.demand if memory is not None and memory.demand else "information"
    pending = PendingOffer(
        item=reply.ticket_id, offer=offer, demand=demand, language=reply.language
    )
    return baton.model_copy(update={"pending": pending})


def applied(baton: Baton, decision_id: str) -> PersonNote | None:
    """The baton's note of decision ``decision_id``, if it was applied."""
    return next((n for n in baton.people if n.decision_id == decision_id), None)


def open_for_people(baton: Baton) -> bool:
    """Whether the session has something for a person to decide: a hand-off, an offer waiting
    or escalated, or a person who has it."""
    return bool(
        not baton.closed
        and (
            baton.pending is not None
            or baton.taken_over
            or baton.escalated
            or any(t.status == "handoff" for t in baton.tickets)
        )
    )


def silent(ticket: Ticket, baton: Baton, *, llm: str, policy: Policy) -> tuple[Reply, Baton]:
    """The reply of a ticket a person has taken over (no agent answers it) and the baton that
    remembers the ticket for when the session is handed back."""
    memory = TicketMemory(ticket_id=ticket.ticket_id, core_problem=ticket.text[:NOTE_CHARS])
    baton = baton.model_copy(update={"tickets": [*baton.tickets, memory]})
    reply = Reply(
        ticket_id=ticket.ticket_id,
        session_id=ticket.session_id,
        customer_id=ticket.customer_id,
        status="taken_over",
        reply="",
        solution="A person has the session; no agent answered.",
        internal_note="The session is taken over: the person who has it answers.",
        confidence=0.0,
        order_id=baton.order_id,
        language=baton.pending.language if baton.pending else "en",
        baton_version=baton.version + 1,
        llm=llm,
        policy_version=policy.version,
    )
    return reply, baton


@dataclass(frozen=True)
class Applied:
    """A decision's result: the baton that records it and the reply it sends, if any."""

    baton: Baton
    reply: Reply | None


def check(decision: Decision, baton: Baton | None) -> None:
    """Raise :class:`Refused` unless ``decision`` answers something ``baton`` has open."""
    if baton is None:
        raise Refused("decision_not_pending", "the session has no baton (unknown or expired)")
    if decision.action not in STARTED and not open_for_people(baton):
        raise Refused(
            "decision_not_pending",
            "the session has nothing for a person to decide (no hand-off, no offer waiting, "
            "not taken over): only answer and takeover start something",
        )
    if decision.offer and decision.action != "answer":
        raise Refused("decision_invalid", "offer lines go with an answer only")
    if decision.override is not None and decision.action not in ("answer", "approve"):
        raise Refused("decision_invalid", "an override goes with an answer or an approval")
    if decision.action in ON_OFFER:
        pending = baton.pending
        if pending is None and (late := escalation.of(baton, decision.item)) is not None:
            error = f"ticket {late.item}'s offer waited too long and was escalated at {late.at}"
            raise Refused("decision_not_pending", error)
        if pending is None:
            raise Refused("decision_not_pending", "the session has no offer waiting for approval")
        if decision.item != pending.item and decision.item not in pending.also:
            raise Refused(
                "decision_not_pending",
                f"the offer waiting for approval is ticket {pending.item}'s, not {decision.item}",
            )
    if decision.action == "approve" and decision.amount is not None:
        assert baton.pending is not None
        if len(money_lines(baton.pending.offer.lines)) != 1:
            raise Refused("decision_invalid", "a changed amount needs an offer with one money line")
    if decision.action == "deny" and decision.amount is not None:
        raise Refused("decision_invalid", "a denial carries no amount")
    if decision.action in ON_ACTION and not decision.item:
        raise Refused("decision_invalid", "done and failed name the action's idempotency key")
    if decision.action in ON_ACTION and decision.amount is not None:
        raise Refused("decision_invalid", "done and failed carry no amount")
    if decision.action == "done" and not decision.reference:
        raise Refused("decision_invalid", "done needs the system's reference of what was done")
    if decision.reference is not None and decision.action != "done":
        raise Refused("decision_invalid", "a reference goes with done only")
    if decision.action == "answer" and not decision.text.strip():
        raise Refused("decision_invalid", "an answer needs the text to send")
    if decision.action == "takeover" and baton.taken_over:
        raise Refused("decision_not_pending", "the session is taken over already")
    if decision.action == "handback" and not baton.taken_over:
        raise Refused("decision_not_pending", "the session is not taken over")


def apply(
    decision: Decision,
    baton: Baton,
    *,
    order: Order | None,
    policy: Policy,
    today: date,
    history: Sequence[OrderMemory] = (),
    own: Sequence[Order] = (),
    source: str = "",
    keep_for: timedelta = timedelta(days=1),
) -> Applied:
    """Apply ``decision`` to ``baton`` (checked with :func:`check` first): the new baton, with
    the decision's note holding the reply to send and its id among those applied (kept
    ``keep_for`` past their decided_at), and that reply."""
    check(decision, baton)
    pending = baton.pending
    offer: Offer | None = None
    reply_text: str | None = None
    status: ReplyStatus = "answered"
    item = decision.item
    # The baton keeps no language besides the parked offer's: a person's answer is in theirs.
    language = pending.language if pending is not None else "en"
    updates: dict[str, object] = {}
    if decision.action == "approve":
        assert pending is not None
        offer = approved_offer(decision, pending, order, policy, today, history, baton)
        reply_text, item = confirmation(offer, language, policy.languages[0]), pending.item
        updates["pending"] = None
    elif decision.action == "deny":
        assert pending is not None
        offer = next_option(pending, order, policy, today, history, baton)
        reply_text, item = alternative(offer, language, policy.languages[0]), pending.item
        status = "answered" if offer is not None else "handoff"
        updates["pending"] = None
    elif decision.action == "answer":
        try:
            offer = answer_offer(
                decision,
                baton,
                order=order,
                policy=policy,
                today=today,
                history=history,
                own=own,
            )
        except AnswerRefused as exc:
            raise Refused("decision_invalid", f"the answer breaks the rules: {exc}") from exc
        reply_text = decision.text
        item = item or _last_ticket(baton)
    elif decision.action == "takeover":
        updates["taken_over"] = True
    elif decision.action == "handback":
        updates["taken_over"] = False
    elif decision.action == "close":
        updates |= {"closed": True, "taken_over": False, "pending": None}
    # A line an earlier reply agreed is restated, not agreed again: it writes no action.
    offer = marked(offer, baton, history)
    reply = None
    if reply_text is not None and item is not None:
        reply = Reply(
            ticket_id=item,
            session_id=baton.session_id,
            customer_id=baton.customer_id,
            status=status,
            reply=reply_text,
            solution=_solution(decision, offer),
            internal_note=_note(decision)[:NOTE_CHARS],
            confidence=1.0,
            order_id=offer.lines[0].order_id if offer and offer.lines else baton.order_id,
            language=language,
            baton_version=baton.version + 1,
            llm=PERSON,
            offer=offer,
            policy_version=policy.version,
            decision_id=decision.decision_id,
        )
    note = PersonNote(
        decision_id=decision.decision_id,
        action=decision.action,
        item=item,
        text=decision.text[:NOTE_CHARS],
        offer=offer,
        reply=dumps(reply).decode() if reply is not None else "",
        source=source,
        at=decision.decided_at,
    )
    now = utcnow()
    decided = {
        did: kept for did, kept in baton.decided.items() if kept.decided_at >= now - keep_for
    }
    decided[decision.decision_id] = AppliedDecision(source=source, decided_at=decision.decided_at)
    updates |= {
        "people": [*baton.people, note][-PEOPLE_KEEP:],
        "decided": decided,
        "version": baton.version + 1,
        "updated_at": now,
    }
    if reply is not None and offer is not None:
        updates |= _booked(baton, item or "", offer, reply)
    return Applied(baton=baton.model_copy(update=updates), reply=reply)


def delivered(baton: Baton, decision_id: str) -> Baton:
    """``baton`` with the decision's reply marked as on the replies topic."""
    people = [
        n.model_copy(update={"reply": ""}) if n.decision_id == decision_id else n
        for n in baton.people
    ]
    return baton.model_copy(update={"people": people})


def _booked(baton: Baton, item: str, offer: Offer, reply: Reply) -> dict[str, object]:
    """The ticket's memory and the session's ledger once ``offer`` is promised."""
    offered = {order: dict(kinds) for order, kinds in baton.offered.items()}
    for line in offer.lines:
        if line.amount:
            kinds = offered.setdefault(line.order_id, {})
            kinds[line.kind] = max(kinds.get(line.kind, 0.0), line.amount)
    told = {
        "status": reply.status,
        "solution": reply.solution[:200],
        "offer": offer.lines,
        "restated": offer.restated,
    }
    tickets = [t.model_copy(update=told) if t.ticket_id == item else t for t in baton.tickets]
    return {"offered": offered, "tickets": tickets}


def _note(decision: Decision) -> str:
    """What the reply's internal note says of who decided, and of an override."""
    said = f"Decided by {decision.by or PERSON}"
    if decision.override is not None:
        said += f" overriding the policy as {decision.override.role} ({decision.override.reason})"
    return f"{said}: {decision.text}"


def _solution(decision: Decision, offer: Offer | None) -> str:
    if decision.action == "approve":
        return "A colleague approved the offer."
    if decision.action == "deny":
        return (
            "A colleague denied the offer; the next option the policy allows is offered."
            if offer is not None
            else "A colleague denied the offer; a person follows up."
        )
    return "A colleague answered the customer."


def _last_ticket(baton: Baton) -> str | None:
    return baton.tickets[-1].ticket_id if baton.tickets else None

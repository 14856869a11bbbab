"""What a ticket's reply says: strategy's draft, or the fallback after a failed stage."""

from __future__ import annotations

import time
from collections.abc import Sequence

from baton_kafka.agents.fixed_texts import fixed
from baton_kafka.agents.guards.language import language_of as guessed_language
from baton_kafka.agents.languages import DEFAULT_LANGUAGES
from baton_kafka.agents.policy import Policy, default_policy
from baton_kafka.agents.policy.agreed import marked
from baton_kafka.agents.policy.offer import settle
from baton_kafka.agents.stages.strategy.agent import awaiting_approval
from baton_kafka.schemas.baton import Baton, OrderMemory
from baton_kafka.schemas.records import Reply, StageName, UsageTotals, utcnow
from baton_kafka.schemas.stages import StageRecord, StrategyDraft


def could_not_process(language: str, default: str = "en") -> str:
    """The degraded reply's text in ``language`` (else the shop's default language)."""
    return fixed("could_not_process", language, default)


def language_of(record: StageRecord, languages: Sequence[str] = DEFAULT_LANGUAGES) -> str:
    """The customer's language: the understanding's, else the one of ``languages`` the ticket
    is written in (its quoted names left out)."""
    if record.understanding is not None:
        return record.understanding.language
    return guessed_language(record.ticket.text, (), languages) or languages[0]


def stage_timings(record: StageRecord, stage: StageName, started: float) -> dict[str, float]:
    """The record's timings plus this stage's, since ``started`` (``time.monotonic``)."""
    return {**record.timings_ms, stage: round((time.monotonic() - started) * 1000, 1)}


def reply_timings(record: StageRecord, stage: StageName, started: float) -> dict[str, float]:
    """``stage_timings`` plus the ticket's time from intake to now."""
    timings = stage_timings(record, stage, started)
    timings["end_to_end"] = round((utcnow() - record.received_at).total_seconds() * 1000, 1)
    return timings


def age(reply: Reply) -> float | None:
    """Seconds from the ticket's intake to its reply."""
    total = reply.timings_ms.get("end_to_end")
    return total / 1000 if total is not None else None


def answer(
    record: StageRecord,
    baton: Baton,
    draft: StrategyDraft,
    *,
    usage: UsageTotals,
    degraded: list[str],
    handoff: bool,
    llm: str,
    timings: dict[str, float],
    order_trusted: bool = True,
    policy: Policy | None = None,
    history: Sequence[OrderMemory] = (),
) -> Reply:
    """The reply strategy's draft makes; ``handoff``/``degraded`` from the stages before.

    ``history``: the customer's orders as the index holds them, whose agreed lines a line of
    the offer may restate (as the session's own answered tickets' may).

    ``order_trusted`` False: the strategy stage could not verify the record's order, so the
    reply names no order and no product of it either. An offer above the approval threshold
    is never promised: the reply says a colleague reviews it, and the ticket is handed off.
    """
    ticket, u, match = record.ticket, record.understanding, record.match
    if u is None or match is None:
        raise ValueError("a reply needs the record's understanding and order match")
    order = match.order if order_trusted else None
    policy = policy or default_policy()
    offer = settle(draft.offer, policy, order, u.reason) if order is not None else None
    # A line an earlier reply agreed is restated, not agreed again: it writes no action.
    offer = marked(offer, baton, history)
    if offer is not None and offer.state == "needs_approval":
        # Whichever path wrote the draft, an offer a person must approve is not promised yet.
        held = awaiting_approval(u, draft)
        if draft.reply != held.reply:
            draft = held
    handoff = draft.needs_human or handoff
    return Reply(
        ticket_id=ticket.ticket_id,
        session_id=ticket.session_id,
        customer_id=ticket.customer_id,
        status="handoff" if handoff else "degraded" if degraded else "answered",
        reply=draft.reply,
        solution=draft.solution,
        internal_note=draft.internal_note,
        confidence=draft.confidence,
        order_id=match.order_id if order_trusted else None,
        product=order.product_name if order else u.product,
        language=u.language,
        baton_version=baton.version + 1,
        llm=llm,
        offer=offer,
        policy_version=policy.version,
        usage=usage,
        timings_ms=timings,
        stages=record.results,
        ticket_ids=[ticket.ticket_id, *record.burst],
    )


def fallback(
    record: StageRecord,
    baton: Baton,
    stage: StageName,
    note: str,
    *,
    llm: str,
    languages: Sequence[str] = DEFAULT_LANGUAGES,
    policy: Policy | None = None,
) -> Reply:
    """The degraded reply of a ticket a stage could not process: a person will follow up."""
    ticket = record.ticket
    policy = policy or default_policy()
    language = language_of(record, languages)
    return Reply(
        ticket_id=ticket.ticket_id,
        session_id=ticket.session_id,
        customer_id=ticket.customer_id,
        status="degraded",
        reply=could_not_process(language, languages[0]),
        solution="Manual follow-up.",
        internal_note=note,
        confidence=0.0,
        order_id=record.match.order_id if record.match else None,
        language=language,
        baton_version=baton.version + 1,
        llm=llm,
        policy_version=policy.version,
        usage=record.usage,
        timings_ms=reply_timings(record, stage, time.monotonic()),
        stages=record.results,
        ticket_ids=[ticket.ticket_id, *record.burst],
    )

"""The strategy stage: solution and reply from baton, ticket, understanding and the stored order."""

from __future__ import annotations

from dataclasses import replace

from agents import prompts
from agents.asking import Validator, ask
from agents.guards import (
    DRIFT,
    CustomerOrders,
    audit,
    check,
    drift_problems,
    product_names,
)
from agents.models.llm import LLM, OutputInvalid
from agents.orders import OrderStore
from agents.outcome import Failure, Outcome
from agents.rules.reply import strategy_rules
from schemas.baton import Baton
from schemas.records import Order, Ticket
from schemas.stages import OrderMatch, StrategyDraft, Understanding


def on_topic(names: list[str], match: OrderMatch) -> Validator[StrategyDraft]:
    """Rejects a draft that drifts from the matched order or the customer's product."""

    def validate(draft: StrategyDraft) -> None:
        if problems := drift_problems(draft, names, match.order_id):
            raise OutputInvalid("; ".join(problems))

    return validate


def within_policy(books: CustomerOrders) -> Validator[StrategyDraft]:
    """Rejects a draft with money or ids the customer's own orders do not allow."""

    def validate(draft: StrategyDraft) -> None:
        if problems := audit(draft, books):
            raise OutputInvalid("; ".join(problems))

    return validate


def holding_reply(u: Understanding, match: OrderMatch) -> StrategyDraft:
    """A safe hand-off reply when no valid strategy could be produced."""
    order = f" ({match.order_id})" if match.order_id else ""
    if u.language == "zh":
        reply = f"您好，关于您的问题「{u.core_problem}」{order}，我们已转交人工客服，会尽快联系您。"
    else:
        reply = (
            f"Thank you for your message about: {u.core_problem}{order}. A member of our support "
            "team will take over and get back to you shortly."
        )
    return StrategyDraft(
        solution="Hand over to a human agent.",
        reply=reply,
        internal_note="No valid model strategy; see the dead letter for the model's output.",
        confidence=0.0,
        needs_human=True,
    )


def asked_about(match: OrderMatch, orders: list[Order]) -> list[Order]:
    """The customer's orders a reference fits equally, to ask which one (the store's copies)."""
    if match.recall is None or match.recall.method != "ask":
        return []
    fitting = {c.order_id for c in match.recall.candidates}
    return [o for o in orders if o.order_id in fitting]


async def decide(
    ticket: Ticket,
    baton: Baton,
    understanding: Understanding,
    match: OrderMatch,
    store: OrderStore,
    llm: LLM,
    *,
    reask_limit: int = 1,
    tokens_left: int | None = None,
) -> Outcome[StrategyDraft]:
    """Write solution, reply, note and confidence; re-ask on drift or broken rules.

    The matched order is re-read from ``store``: a record's order that the store does not hold
    for this customer, unchanged, is not used (the draft is written as if none matched) and is
    reported as ``untrusted_record``.
    """
    checked = await check(ticket, match, store)
    match = checked.match
    order = match.order
    books = CustomerOrders.of(order, checked.orders, baton, ticket)
    names = product_names(order, understanding, baton, ticket.text)
    prompt = prompts.build(
        "strategy",
        StrategyDraft,
        ticket=ticket,
        baton=baton,
        orders=[order] if order else asked_about(match, checked.orders),
        understanding=understanding,
        match=match,
    )
    asked = await ask(
        llm,
        prompt,
        validators=[on_topic(names, match), within_policy(books)],
        reask_limit=reask_limit,
        tokens_left=tokens_left,
    )
    if asked.value is not None:
        outcome = Outcome(asked.value, calls=asked.calls)
    else:
        failure = asked.failure
        assert failure is not None
        errors = failure.error.split("; ")
        if failure.reason == "validation_failed" and all(e.startswith(DRIFT) for e in errors):
            failure = replace(failure, reason="drift")
        if failure.reason in ("drift", "model_error", "timeout"):
            draft = strategy_rules(prompt.facts)
            outcome = Outcome(draft, calls=asked.calls, failure=failure, degraded=True)
        else:
            failure = replace(failure, handoff=True)
            held = holding_reply(understanding, match)
            outcome = Outcome(held, asked.calls, failure, degraded=True)
    return _reporting(outcome, checked.failure)


def _reporting(outcome: Outcome[StrategyDraft], distrust: Failure | None) -> Outcome[StrategyDraft]:
    """The outcome, reporting why the record's order was not used ahead of any model failure."""
    if distrust is None:
        return outcome
    later = outcome.failure
    if later is None:
        return replace(outcome, failure=distrust, degraded=True)
    error = f"{distrust.error}; then the model failed too ({later.reason}: {later.error})"
    combined = replace(later, reason=distrust.reason, error=error, payload=distrust.payload)
    return replace(outcome, failure=combined, degraded=True)

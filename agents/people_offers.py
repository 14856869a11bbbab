"""What a person's approval or denial offers: the parked offer held to the policy again."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from baton_kafka.agents.people_overrides import offer_problems
from baton_kafka.agents.people_refused import Refused
from baton_kafka.agents.policy import Policy
from baton_kafka.agents.policy.offer import CENT, OfferContext, cents, problems, total
from baton_kafka.agents.stages.strategy.agent import already_offered
from baton_kafka.schemas.baton import Baton, OrderMemory
from baton_kafka.schemas.decision import Decision, PendingOffer
from baton_kafka.schemas.records import Offer, OfferLine, Order


def money_lines(lines: Sequence[OfferLine]) -> list[OfferLine]:
    """The lines that carry money."""
    return [line for line in lines if line.amount]


def approved_offer(
    decision: Decision,
    pending: PendingOffer,
    order: Order | None,
    policy: Policy,
    today: date,
    history: Sequence[OrderMemory],
    baton: Baton,
) -> Offer:
    """The offer an approval confirms: the proposed lines (one amount changed if asked),
    held to every limit of the policy; raises :class:`Refused` when they break one."""
    lines = list(pending.offer.lines)
    if decision.amount is not None:
        money = money_lines(lines)[0]
        changed = money.model_copy(update={"amount": cents(decision.amount)})
        lines = [changed if line is money else line for line in lines]
    found = _problems(lines, pending, order, policy, today, history, baton, decision)
    if found:
        raise Refused("decision_invalid", "the approval breaks the policy: " + "; ".join(found))
    return Offer(state="approved", lines=lines, total=total(lines), currency=pending.offer.currency)


def _problems(
    lines: Sequence[OfferLine],
    pending: PendingOffer,
    order: Order | None,
    policy: Policy,
    today: date,
    history: Sequence[OrderMemory],
    baton: Baton,
    decision: Decision | None = None,
) -> list[str]:
    if order is None:
        return [f"order {lines[0].order_id if lines else '?'} is not in the order store"]
    ctx = OfferContext(
        order=order,
        demand=pending.demand,
        today=today,
        already=already_offered(baton, order, history),
    )
    if decision is not None:
        return offer_problems(decision, lines, policy, ctx)
    return problems(lines, policy, ctx)


def next_option(
    pending: PendingOffer,
    order: Order | None,
    policy: Policy,
    today: date,
    history: Sequence[OrderMemory],
    baton: Baton,
) -> Offer | None:
    """What a denial offers instead: the one money line lowered to the approval threshold
    when the policy allows that without approval; None: a person follows up."""
    threshold = policy.approval_threshold(pending.offer.currency)
    money = money_lines(pending.offer.lines)
    if threshold is None or threshold <= CENT or len(money) != 1:
        return None
    if policy.approval.basis == "order":
        return None  # the order's amount is above it, whatever the offer: a person follows up
    lowered = money[0].model_copy(update={"amount": cents(threshold)})
    lines = [lowered if line is money[0] else line for line in pending.offer.lines]
    if total(lines) > threshold + CENT:
        return None
    if _problems(lines, pending, order, policy, today, history, baton):
        return None
    return Offer(state="approved", lines=lines, total=total(lines), currency=pending.offer.currency)

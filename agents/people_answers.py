"""A person's answer held to the rules of a model's reply: the audit, the policy, the ledger."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from baton_kafka.agents import packs
from baton_kafka.agents.guards.audit import audit
from baton_kafka.agents.guards.books import CustomerOrders
from baton_kafka.agents.languages import detect_or
from baton_kafka.agents.models.llm import OutputInvalid
from baton_kafka.agents.people_overrides import offer_problems
from baton_kafka.agents.policy import Policy
from baton_kafka.agents.policy.offer import OfferContext, total
from baton_kafka.agents.stages.strategy.agent import (
    already_offered,
    earlier_remedies,
    keeps_its_word,
)
from baton_kafka.schemas.baton import Baton, OrderMemory
from baton_kafka.schemas.decision import Decision
from baton_kafka.schemas.records import Offer, OfferLine, Order
from baton_kafka.schemas.stages import StrategyDraft

SOLUTION = "A colleague answered the customer."


class AnswerRefused(ValueError):
    """What a person's answer may not say: the audit's findings, one per item."""

    def __init__(self, found: Sequence[str]) -> None:
        super().__init__("; ".join(found))
        self.found = list(found)


def order_id(decision: Decision, baton: Baton) -> str | None:
    """The order an answer is about: its offer lines' order, else the session's."""
    named = next((line.order_id for line in decision.offer if line.order_id), None)
    return named or baton.order_id


def promised(decision: Decision, baton: Baton) -> list[OfferLine]:
    """The answer's offer lines, each for the session's order when it names none."""
    session_order = baton.order_id or ""
    return [
        line if line.order_id else line.model_copy(update={"order_id": session_order})
        for line in decision.offer
    ]


def confirmed(baton: Baton, order: Order | None) -> list[OfferLine]:
    """The lines the session's answered replies committed to for ``order``: an answer may
    state them again."""
    if order is None:
        return []
    return [
        line
        for t in baton.tickets
        if t.status == "answered"
        for line in t.offer
        if line.order_id == order.order_id
    ]


def answer_offer(
    decision: Decision,
    baton: Baton,
    *,
    order: Order | None,
    policy: Policy,
    today: date,
    history: Sequence[OrderMemory] = (),
    own: Sequence[Order] = (),
) -> Offer | None:
    """The offer a person's answer commits the shop to (None: it promises nothing new), after
    the audit a model's reply passes: money only as typed lines within every limit of the
    policy and the session's ledger (the approval threshold is the person's to lift), no link
    to a host the policy does not allow, no request for card data, codes or passwords, no id
    that is not the customer's, no line for another customer's order. ``own`` are the
    customer's orders as the store holds them: the answer may name any of them, by id or by
    name, and a deed it tells of one it names by id is held to that order's records. Raises
    :class:`AnswerRefused` with every finding."""
    lines = promised(decision, baton)
    if order is not None and order.customer_id != baton.customer_id:
        # A session belongs to its customer: a person's line for someone else's order is
        # refused before anything is read against that order.
        raise AnswerRefused([f"offer: order {order.order_id} is not one of this customer's orders"])
    demand = baton.pending.demand if baton.pending is not None else (baton.demand or "other")
    already = already_offered(baton, order, history)
    ctx = OfferContext(order, demand, today, already)
    found = [f"offer: {p}" for p in offer_problems(decision, lines, policy, ctx)]
    before = [line for line in confirmed(baton, order) if line not in lines]
    # Only the customer's own: a store's answer for another customer is not trusted.
    theirs = {o.order_id: o for o in own if o.customer_id == baton.customer_id}
    if order is not None:
        theirs[order.order_id] = order
    books = CustomerOrders(
        matched=order,
        orders=tuple(theirs.values()),
        # A person may name any of the customer's orders (their names' digits are names).
        choices=frozenset(theirs),
        discussed=frozenset(
            d
            for d in (baton.order_id, *baton.order_history, *(t.order_id for t in baton.tickets))
            if d
        ),
        known_ids=frozenset(
            k
            for k in (baton.session_id, baton.customer_id, *(t.ticket_id for t in baton.tickets))
            if k
        ),
        policy=policy,
        demand=demand,
        today=today,
        already=already,
    )
    draft = StrategyDraft(
        solution=SOLUTION,
        reply=decision.text,
        internal_note="",
        confidence=1.0,
        needs_human=False,
        offer=[*lines, *before],
    )
    # The offer's own problems are the new lines' (above); what was confirmed before stands.
    found += [p for p in audit(draft, books) if not p.startswith("offer")]
    # What the words commit to and claim is held to the lines and the records, as a model's is.
    # A person may write in any language the packs read, not only the shop's.
    written = detect_or(decision.text, (*policy.languages, *packs.LANGUAGES), policy.languages[0])
    languages = tuple(dict.fromkeys((written, *policy.languages)))
    try:
        keeps_its_word(books, earlier_remedies(baton, order, already), languages)(draft)
    except OutputInvalid as exc:
        found += str(exc).split("; ")
    if found:
        raise AnswerRefused(list(dict.fromkeys(found)))
    if not lines:
        return None
    currency = order.currency if order is not None else None
    return Offer(state="approved", lines=lines, total=total(lines), currency=currency)

"""The look-up stage's function: the customer's real order, found in the store, never invented."""

from __future__ import annotations

from datetime import datetime

from baton_kafka.agents import prompts
from baton_kafka.agents.asking import ask
from baton_kafka.agents.models.llm import LLM
from baton_kafka.agents.orders import OrderSource, StoreUnavailable
from baton_kafka.agents.outcome import Failure, Outcome
from baton_kafka.agents.prompts import EarlierSession
from baton_kafka.agents.rules import recall
from baton_kafka.agents.rules.matching import order_score
from baton_kafka.agents.rules.order_ids import written_ids
from baton_kafka.agents.rules.time_hints import time_score
from baton_kafka.agents.rules.typos import corrected
from baton_kafka.agents.stages.lookup import NAME
from baton_kafka.agents.stages.lookup.rule import choose_rules
from baton_kafka.agents.stages.lookup.validators import among, as_stored
from baton_kafka.schemas.baton import Baton, OrderMemory
from baton_kafka.schemas.records import Order, Ticket
from baton_kafka.schemas.stages import (
    OrderCandidate,
    OrderChoice,
    OrderMatch,
    Recall,
    Understanding,
)

PRODUCT_MIN = 0.35
CLEAR_MARGIN = 0.2
MODEL_CANDIDATES = 5

_STATUS_FIT = {
    "information": {"paid": 1.0, "shipped": 1.0, "pending": 0.9, "delivered": 0.6},
    "cancel": {"paid": 1.0, "pending": 1.0, "shipped": 0.7, "delivered": 0.3},
}
_DELIVERED_FIRST = {"delivered": 1.0, "shipped": 0.6, "paid": 0.4, "returned": 0.3}


def status_fit(demand: str, status: str) -> float:
    """How plausible an order in ``status`` is for a ``demand`` (0..1)."""
    table = _STATUS_FIT.get(demand, _DELIVERED_FIRST)
    return table.get(str(status), 0.1)


def every_product(orders: list[Order]) -> list[str]:
    """Every product name of ``orders``: each order's product_name and each of its lines'."""
    return list(dict.fromkeys(name for o in orders for name in o.products()))


def mention_scores(u: Understanding, orders: list[Order]) -> dict[str, float]:
    """How well the understanding's product (a misspelling corrected) names each order, by id."""
    return _scores(_mention(u, orders), orders)


def _mention(u: Understanding, orders: list[Order]) -> str | None:
    """The understanding's product, a misspelling corrected toward ``orders``' words."""
    return corrected(u.product, every_product(orders)) if u.product else None


def _scores(mention: str | None, orders: list[Order]) -> dict[str, float]:
    """How well ``mention`` names each order, by id (0 for no mention)."""
    return {o.order_id: order_score(mention, o.products()) if mention else 0.0 for o in orders}


def rank(
    u: Understanding,
    orders: list[Order],
    now: datetime,
    mentioned: dict[str, float] | None = None,
) -> list[OrderCandidate]:
    """Score each real order for the understanding, best first (a misspelled product counts);
    ``mentioned`` is ``mention_scores(u, orders)`` when the caller has it already."""
    mentioned = mention_scores(u, orders) if mentioned is None else mentioned
    ranked = []
    for order in orders:
        product = mentioned[order.order_id]
        score = 0.65 * product + 0.2 * time_score(u.time_hint, order.ordered_at, now)
        score += 0.15 * status_fit(u.demand, str(order.status))
        ranked.append(
            OrderCandidate(
                order_id=order.order_id,
                product_name=order.product_name,
                status=str(order.status),
                ordered_at=order.ordered_at,
                score=round(min(score, 1.0), 4),
            )
        )
    ranked.sort(key=lambda c: (c.score, c.ordered_at), reverse=True)
    return ranked


def _match(
    order: Order | None, method: str, confidence: float, reason: str, ranked: list[OrderCandidate]
) -> OrderMatch:
    return OrderMatch(
        order_id=order.order_id if order else None,
        order=order,
        method=method,
        confidence=confidence,
        reason=reason,
        candidates=ranked[:MODEL_CANDIDATES],
    )


def product_fit(
    product: str | None, mention: str | None, scores: dict[str, float], orders: list[Order]
) -> dict[str, float]:
    """How well ``product`` as written names each order, by id, given ``scores``: those of its
    correction ``mention`` (``_mention``), the very same when no word of it was corrected."""
    return scores if mention == product else _scores(product, orders)


async def look_up(
    ticket: Ticket,
    understanding: Understanding,
    baton: Baton,
    store: OrderSource,
    llm: LLM,
    *,
    earlier: list[EarlierSession] | None = None,
    history: list[OrderMemory] | None = None,
    reask_limit: int = 1,
    tokens_left: int | None = None,
    now: datetime | None = None,
) -> Outcome[OrderMatch]:
    """Find the order the ticket is about among the customer's real orders, or none."""
    if not ticket.customer_id:
        return Outcome(_match(None, "none", 1.0, "the ticket names no customer", []))
    try:
        orders = await store.for_customer(ticket.customer_id)
    except StoreUnavailable as exc:
        failure = Failure(reason="order_store_unavailable", error=str(exc))
        match = _match(None, "unavailable", 0.0, "the order store could not be reached", [])
        return Outcome(match, failure=failure, degraded=True)
    if not orders:
        return Outcome(_match(None, "none", 1.0, "the customer has no orders", []))
    by_id = {o.order_id: o for o in orders}
    now = now or ticket.written_at()
    # An order id the customer wrote is tried before anything read from words, product or not.
    written = written_ids(ticket.text, list(by_id))
    if written:
        orders = [by_id[oid] for oid in written]
        by_id = {o.order_id: o for o in orders}
    # The product's fit to each order is read once: the ranking and the mentioned pool use it.
    mention = _mention(understanding, orders)
    scores = _scores(mention, orders)
    ranked = rank(understanding, orders, now, scores)
    if len(written) == 1:
        reason = f"the customer wrote the order id {written[0]}"
        return Outcome(_match(by_id[written[0]], "deterministic", 0.95, reason, ranked))
    earlier_ids = [e.order_id for e in earlier or [] if e.order_id in by_id]

    product = understanding.product
    fit = product_fit(product, mention, scores, orders)
    top = max(fit.values())
    alike = [o for o in orders if top >= 0.5 and fit[o.order_id] >= top - recall.ALIKE]
    told = recall.clues(ticket.text)
    pointed = None
    if recall.applies(told, product, understanding.refers_to_earlier, len(alike)):
        pointed = recall.resolve(
            ticket.text,
            product,
            history or [],
            recall.known_orders(orders),
            current=baton.order_id,
            now=now,
        )
    if pointed is not None:
        chosen = by_id[pointed.order_id] if pointed.order_id else None
        method = "history" if chosen else "none"
        found = _match(chosen, method, 0.85 if chosen else 0.6, recall.explain(pointed), ranked)
        return Outcome(found.model_copy(update={"recall": pointed}))

    if understanding.refers_to_earlier and not understanding.product and earlier_ids:
        order = by_id[earlier_ids[0]]
        reason = "the customer refers to the order of their most recent earlier session"
        return Outcome(_match(order, "history", 0.8, reason, ranked))
    if not understanding.product and baton.order_id in by_id:
        reason = "no new product named: the session's current order carries over"
        return Outcome(_match(by_id[baton.order_id], "baton", 0.9, reason, ranked))
    if len(orders) == 1 and not understanding.product:
        return Outcome(_match(orders[0], "deterministic", 0.7, "the customer's only order", ranked))

    mentioned = [c for c in ranked if product and scores[c.order_id] >= PRODUCT_MIN]
    if understanding.product and not mentioned:
        reason = f"no order of this customer matches {understanding.product!r}"
        return Outcome(_match(None, "none", 0.8, reason, ranked))
    pool = mentioned or ranked
    if len(pool) == 1 or pool[0].score - pool[1].score >= CLEAR_MARGIN:
        reason = f"best match for {understanding.product or 'the message'} (score {pool[0].score})"
        return Outcome(_match(by_id[pool[0].order_id], "deterministic", 0.9, reason, ranked))
    candidates = [by_id[c.order_id] for c in pool[:MODEL_CANDIDATES]]
    prompt = prompts.build(
        NAME,
        OrderChoice,
        ticket=ticket,
        baton=baton,
        orders=candidates,
        earlier=earlier,
        understanding=understanding,
        max_tokens=400,
    )
    asked = await ask(
        llm,
        prompt,
        validators=[among(candidates)],
        amend=as_stored(candidates),
        reask_limit=reask_limit,
        tokens_left=tokens_left,
    )
    choice = Outcome.of(asked, lambda: choose_rules(prompt.facts))
    chosen = by_id.get(choice.value.order_id) if choice.value.order_id else None
    method = "model" if not choice.degraded else "deterministic"
    match = _match(
        chosen, method if chosen else "none", 0.75 if chosen else 0.5, choice.value.reason, ranked
    )
    tied = [c for c in pool if c.score == pool[0].score]
    if chosen is None and len(tied) > 1:
        # Nothing told them apart: the reply asks which one, naming each, instead of a guess.
        asking = Recall(
            method="ask",
            evidence=[understanding.product or ticket.text[:80]],
            order_id=None,
            candidates=tied[: recall.ASK_AMONG],
        )
        match = match.model_copy(update={"recall": asking, "reason": recall.explain(asking)})
    return Outcome(match, calls=choice.calls, failure=choice.failure, degraded=choice.degraded)

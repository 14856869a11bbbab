"""The look-up stage's offline rule: the candidate order the message is about, or none."""

from __future__ import annotations

import unicodedata
from datetime import UTC, date, datetime

from baton_kafka.agents.prompts import Facts, OrderFact
from baton_kafka.agents.rules.matching import order_score
from baton_kafka.agents.rules.phrases import DELIVERY, problem_key
from baton_kafka.agents.rules.time_hints import day_of, time_score
from baton_kafka.agents.rules.typos import corrected
from baton_kafka.agents.stages.understand.rule import understand_rules
from baton_kafka.schemas.stages import OrderChoice


def _status_fit(key: str | None, demand: str, status: str) -> float:
    if status in ("cancelled", "refunded"):
        return 0.1
    if key in DELIVERY:
        table = {"shipped": 1.0, "lost": 1.0, "paid": 0.8, "pending": 0.8, "delivered": 0.3}
    elif demand == "cancel":
        table = {"paid": 1.0, "pending": 1.0, "shipped": 0.6, "delivered": 0.3}
    elif demand in ("refund", "exchange", "repair", "compensation") or key not in (None, "general"):
        table = {"delivered": 1.0, "returned": 0.5, "shipped": 0.4, "paid": 0.3}
    else:
        table = {"delivered": 0.7, "shipped": 0.7, "paid": 0.6}
    return table.get(status, 0.3)


def _ordered(order: OrderFact) -> datetime:
    return datetime.combine(date.fromisoformat(order.ordered_at[:10]), datetime.min.time(), UTC)


def choose_rules(facts: Facts, now: datetime | None = None) -> OrderChoice:
    """Pick the candidate order the message is about, or none; never an id outside the facts."""
    u = facts.understanding or understand_rules(facts)
    by_id = {o.order_id: o for o in facts.orders}
    if not by_id:
        return OrderChoice(order_id=None, reason="The customer has no candidate orders.")
    # Full-width digits ("注文番号：５００４…") are the id's own: compared in NFKC.
    lowered = unicodedata.normalize("NFKC", facts.message).casefold()
    named = [oid for oid in by_id if oid.casefold() in lowered]
    if named:
        return OrderChoice(order_id=named[0], reason=f"The message names order {named[0]}.")
    current = facts.session.order_id if facts.session.order_id in by_id else None
    if u.refers_to_earlier and not (u.product and current):
        for past in sorted(facts.earlier, key=lambda e: e.at, reverse=True):
            if past.order_id in by_id:
                return OrderChoice(
                    order_id=past.order_id,
                    reason=f"The customer refers to the earlier conversation about order "
                    f"{past.order_id}.",
                )
    key, now = problem_key(u.problem), now or day_of(facts.today) or datetime.now(UTC)
    names = list(dict.fromkeys(n for o in facts.orders for n in o.products()))
    mention = corrected(u.product, names) if u.product else None
    fits = {
        o.order_id: order_score(mention, o.products()) if mention else 0.0 for o in facts.orders
    }
    top = max(fits.values())
    scored = []
    for order in facts.orders:
        p = fits[order.order_id]
        t = time_score(u.time_hint, _ordered(order), now)
        s = _status_fit(key, u.demand, order.status)
        # The session's order wins a tie, never against a product named more exactly.
        bonus = 0.1 if order.order_id == current and p >= top else 0.0
        scored.append((0.6 * p + 0.25 * t + 0.15 * s + bonus, p, t, s, order))
    scored.sort(key=lambda row: row[0], reverse=True)
    _, p, t, s, best = scored[0]
    why = f"product {p:.2f}, time {t:.2f}, status {best.status} ({s:.2f})"
    if u.product:
        if p < 0.5:
            return OrderChoice(order_id=None, reason=f"No candidate order is a {u.product[:80]}.")
        if len(scored) > 1 and scored[1][0] == scored[0][0]:
            return OrderChoice(order_id=None, reason="Several orders fit equally; ask which one.")
        return OrderChoice(order_id=best.order_id, reason=f"Best match for the product: {why}.")
    if current:
        return OrderChoice(order_id=current, reason="The session is already about this order.")
    fitting = [row for row in scored if row[3] >= 0.8]
    if len(scored) == 1 or len(fitting) == 1:
        choice = scored[0][4] if len(scored) == 1 else fitting[0][4]
        return OrderChoice(order_id=choice.order_id, reason="The only order that fits the request.")
    return OrderChoice(order_id=None, reason="No product named and several orders could fit.")

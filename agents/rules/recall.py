"""References to an order discussed before, resolved against the customer's history.

"The one I sent for repair", "还没发货的那个", "last week's order": the message names no
product, or one that fits several orders, but says what was done about the order, its status
or when it was bought or discussed. Each clue narrows the customer's real orders; one left is
the order referred to, several left mean the customer is asked, never answered with a guess.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime

from baton_kafka.agents.rules.matching import find_product, product_score
from baton_kafka.agents.rules.phrases import problem_key
from baton_kafka.agents.rules.recall_clues import Clues, clues
from baton_kafka.agents.rules.time_hints import time_score
from baton_kafka.schemas.baton import OrderMemory
from baton_kafka.schemas.records import Order
from baton_kafka.schemas.stages import OrderCandidate, Recall, RecallMethod

ASK_AMONG = 3
# Product scores this close name the product equally well: "the shoes" fits both pairs.
ALIKE = 0.01


@dataclass(frozen=True)
class Known:
    """A real order of the customer as the store has it."""

    order_id: str
    product_name: str
    status: str
    ordered_at: datetime


def _fits_done(entry: OrderMemory | None, order: Known, done: frozenset[str]) -> bool:
    asked: set[str] = set(entry.demands) if entry else set()
    if entry and entry.decision:
        asked.add(entry.decision)
    return bool(asked & done) or order.status in done


def _when(entry: OrderMemory | None, order: Known, found: Clues, now: datetime) -> float:
    hint = found.time_hint
    bought = time_score(hint, order.ordered_at, now) if found.time_of != "talk" else 0.0
    talked = time_score(hint, entry.at, now) if entry and found.time_of != "purchase" else 0.0
    return max(bought, talked)


def _raised(entry: OrderMemory | None, problem: str) -> bool:
    return bool(entry) and any(problem_key(p) == problem for p in entry.problems)  # type: ignore[union-attr]


def applies(found: Clues, product: str | None, refers: bool, alike: int) -> bool:
    """Whether to resolve by clues: no product named, a reference back, or a product that fits
    several orders with a clue of what was done or their status (a product and a time alone
    are left to the ranking)."""
    return bool(found) and (not product or refers or (alike > 1 and found.points))


def resolve(
    message: str,
    product: str | None,
    history: list[OrderMemory],
    orders: list[Known],
    *,
    current: str | None = None,
    now: datetime | None = None,
) -> Recall | None:
    """The order the message refers back to, by clue; ``ask`` when several fit; None: no clue.

    Only the customer's real ``orders`` can be chosen; ``history`` says what was discussed
    about them. Clues apply in turn (what was done, status, a problem raised before, time,
    product words); a clue no
    order fits means the message is not about this history, and nothing is resolved.
    """
    found = clues(message)
    if not found or not orders:
        return None
    now = now or datetime.now(UTC)
    entries = {e.order_id: e for e in history}
    pool = sorted(orders, key=lambda o: (o.order_id in entries, o.ordered_at), reverse=True)
    steps: list[tuple[RecallMethod, list[Known]]] = []
    evidence: list[str] = []
    if found.done:
        pool = [o for o in pool if _fits_done(entries.get(o.order_id), o, found.done)]
        steps.append(("demand", pool))
        evidence.extend(found.done_words)
    if found.status:
        pool = [o for o in pool if o.status in found.status]
        steps.append(("status", pool))
        evidence.extend(found.status_words)
    # A problem alone points back only away from the session's order: "it still leaks"
    # continues the current topic, "the pair with the split sole" returns to another.
    alone = not (found.done or found.status or found.time_hint)
    if found.problem and alone and _raised(entries.get(current or ""), found.problem):
        return None
    if found.problem:
        raised = [o for o in pool if _raised(entries.get(o.order_id), found.problem)]
        if raised or not (found.done or found.status or found.time_hint):
            pool = raised
            steps.append(("problem", pool))
            evidence.extend(found.problem_words)
    if found.time_hint and pool:
        best = max(_when(entries.get(o.order_id), o, found, now) for o in pool)
        if best >= 0.7:
            pool = [o for o in pool if _when(entries.get(o.order_id), o, found, now) == best]
        steps.append(("time", pool))
        evidence.append(found.time_hint)
    if product and pool:
        scores = {o.order_id: product_score(product, o.product_name) for o in pool}
        best = max(scores.values())
        pool = [o for o in pool if best >= 0.5 and scores[o.order_id] >= best - ALIKE]
        steps.append(("product", pool))
        evidence.append(product)
    if not pool:
        return None
    if len(pool) > 1:
        discussed = [o for o in pool if o.order_id in entries]
        if current in {o.order_id for o in pool}:
            pool = [o for o in pool if o.order_id == current]
        elif len(discussed) == 1:
            pool = discussed  # what the customer talked about before is what they point at
    if len(pool) > 1:
        fitting = [
            OrderCandidate(
                order_id=o.order_id,
                product_name=o.product_name,
                status=o.status,
                ordered_at=o.ordered_at,
                score=1.0,
            )
            for o in pool[:ASK_AMONG]
        ]
        return Recall(method="ask", evidence=evidence, order_id=None, candidates=fitting)
    chosen = pool[0]
    # The clue that left one order decided; a tie broken by the session's order or by what
    # was discussed is credited to the last clue read.
    method = next((m for m, kept in steps if len(kept) == 1), steps[-1][0])
    entry = entries.get(chosen.order_id)
    return Recall(
        method=method,
        evidence=evidence,
        order_id=chosen.order_id,
        session_id=entry.session_id if entry else None,
    )


def known(order_id: str, product_name: str, status: str, ordered_at: str | datetime) -> Known:
    """A store order as the resolver reads it (``ordered_at`` as a datetime or ISO text)."""
    if isinstance(ordered_at, str):
        day = date.fromisoformat(ordered_at[:10])
        ordered_at = datetime.combine(day, datetime.min.time(), UTC)
    return Known(order_id, product_name, str(status), ordered_at)


def explain(recall: Recall) -> str:
    """One line for the chain: the method, the evidence and the order (or the candidates)."""
    words = ", ".join(repr(w) for w in recall.evidence)
    if recall.order_id is None:
        names = ", ".join(f"{c.order_id} ({c.product_name})" for c in recall.candidates)
        return f"several orders fit {words}: {names}; the customer is asked which one"
    return f"recalled by {recall.method} from {words}: order {recall.order_id}"


def relevant(
    message: str,
    history: list[OrderMemory],
    orders: list[Known],
    *,
    current: str | None = None,
    now: datetime | None = None,
) -> list[OrderMemory]:
    """The history entries a prompt needs: the order the message points back to, or the ones
    that fit equally; none when it points back at nothing."""
    if not history:
        return []  # whatever the message points back to, no entry of it can be shown
    pointed = resolved(message, history, orders, current=current, now=now)
    if pointed is not None:
        return pointed
    by_id = {e.order_id: e for e in history}
    # A product discussed before, named again ("and the tumbler?"): what was asked about it.
    others = [o for o in orders if o.order_id in by_id and o.order_id != current]
    if not others:
        return []  # no product to name again: the message need not be read for one
    named = find_product(message, [o.product_name for o in others])
    return [by_id[o.order_id] for o in others if o.product_name == named][:1]


def resolved(
    message: str,
    history: list[OrderMemory],
    orders: list[Known],
    *,
    current: str | None = None,
    now: datetime | None = None,
) -> list[OrderMemory] | None:
    """The history entries of the order(s) ``resolve`` finds the message pointing back to;
    None when it finds none."""
    found = resolve(message, None, history, orders, current=current, now=now)
    if found is None:
        return None
    by_id = {e.order_id: e for e in history}
    ids = [found.order_id] if found.order_id else [c.order_id for c in found.candidates]
    return [by_id[i] for i in ids if i in by_id]


def known_orders(orders: Iterable[Order]) -> list[Known]:
    """The store's orders as the resolver reads them."""
    return [known(o.order_id, o.product_name, str(o.status), o.ordered_at) for o in orders]

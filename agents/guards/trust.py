"""Whether a stage record's order can be used: re-read from the store, the ticket's customer's."""

from __future__ import annotations

from dataclasses import dataclass

from baton_kafka.agents.orders import OrderStore, StoreUnavailable
from baton_kafka.agents.outcome import Failure
from baton_kafka.schemas.records import Order, Ticket
from baton_kafka.schemas.stages import LookupMethod, OrderMatch

UNTRUSTED = "untrusted_record"
STORE_UNAVAILABLE = "order_store_unavailable"


@dataclass(frozen=True)
class Checked:
    """The match a stage may use, the customer's orders, and why the record's was not used."""

    match: OrderMatch
    orders: list[Order]
    failure: Failure | None = None


def _without_order(method: LookupMethod, reason: str) -> OrderMatch:
    return OrderMatch(order_id=None, method=method, confidence=0.0, reason=reason)


def _distrust(ticket: Ticket, match: OrderMatch, stored: Order | None) -> str | None:
    """Why the record's order cannot be used, or None when the store holds exactly it."""
    oid = match.order_id
    if oid is None:
        return "the record carries an order but no order id" if match.order else None
    if stored is None:
        return f"order {oid} in the record is not in the order store"
    if ticket.customer_id is None:
        return f"the record carries order {oid} for a ticket that names no customer"
    if stored.customer_id != ticket.customer_id:
        return f"order {oid} in the record belongs to another customer than the ticket's"
    if match.order is None:
        return f"the record names order {oid} without its details"
    if match.order == stored:
        # Same type and same field values: their dumps are equal too (the usual case, one
        # comparison instead of two dumps); anything else is compared dumped, as before.
        return None
    record, held = match.order.model_dump(), stored.model_dump()
    if record != held:
        fields = [f for f in held if record.get(f) != held[f]]
        return f"the record's copy of order {oid} differs from the store in {', '.join(fields)}"
    return None


async def check(ticket: Ticket, match: OrderMatch, store: OrderStore) -> Checked:
    """Re-read the record's order from the store; use it only if it is the store's, unchanged.

    Anyone who can write the order-matched topic could forge the record's order, so the order
    used is the store's copy, and only when it exists, belongs to the ticket's customer and
    equals the record's; otherwise the stage goes on as if no order matched (no money can be
    promised) and reports ``untrusted_record``. A store that cannot be read cannot vouch for
    the order either: the same, reported as ``order_store_unavailable``.
    """
    try:
        orders = await store.for_customer(ticket.customer_id) if ticket.customer_id else []
        stored = next((o for o in orders if o.order_id == match.order_id), None)
        if stored is None and match.order_id:
            # Not among the customer's newest orders: an older one, or someone else's.
            stored = await store.get(match.order_id)
    except StoreUnavailable as exc:
        if match.order_id is None and match.order is None:
            return Checked(match, [])
        reason = f"the order store could not be read to verify order {match.order_id}: {exc}"
        failure = Failure(reason=STORE_UNAVAILABLE, error=reason)
        return Checked(_without_order("unavailable", reason), [], failure)
    distrust = _distrust(ticket, match, stored)
    if distrust is None:
        if stored is not None:
            match = match.model_copy(update={"order": stored})
        return Checked(match, orders)
    failure = Failure(reason=UNTRUSTED, error=distrust, payload=match.model_dump_json())
    untrusted = _without_order("none", "the record's order could not be verified")
    return Checked(untrusted, orders, failure)

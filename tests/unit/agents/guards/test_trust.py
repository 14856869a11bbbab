"""The trust check's comparison of a record's order with the store's: the equality shortcut
says what comparing their dumps says, on the bench's orders and altered copies of them."""

from __future__ import annotations

import orjson
import pytest

from baton_kafka.agents.guards import trust
from baton_kafka.schemas.records import Order, Ticket
from baton_kafka.schemas.stages import OrderMatch
from baton_kafka.streams.bench.load import Workload


def _plain(ticket: Ticket, match: OrderMatch, stored: Order | None) -> str | None:
    """The reading before the shortcut: the two orders compared dumped, field by field."""
    oid = match.order_id
    if oid is None or stored is None or ticket.customer_id is None or match.order is None:
        return trust._distrust(ticket, match, stored)
    if stored.customer_id != ticket.customer_id:
        return trust._distrust(ticket, match, stored)
    record, held = match.order.model_dump(), stored.model_dump()
    if record != held:
        fields = [f for f in held if record.get(f) != held[f]]
        return f"the record's copy of order {oid} differs from the store in {', '.join(fields)}"
    return None


def _orders() -> list[Order]:
    return Workload("cpu", 60, 5).orders()


def _variants(order: Order) -> list[Order]:
    """The order as a record may carry it: as stored, re-read from its JSON, and altered."""
    raw = orjson.loads(order.model_dump_json())
    out = [order, Order.model_validate(raw), order.model_copy()]
    changes = {
        "product_name": raw["product_name"] + "x",
        "status": "cancelled" if raw["status"] != "cancelled" else "paid",
        "amount": raw["amount"] + 1,
        "currency": "EUR" if raw["currency"] != "EUR" else "USD",
        "carrier": "forged",
        "tracking_no": "T0",
        "refunded": 0.5 if raw["refunded"] != 0.5 else 0.25,
        "items": [],
    }
    for field, value in changes.items():
        out.append(Order.model_validate({**raw, field: value}))
    # The same values under another type: equal dumps, the shortcut must not be the one saying so.
    out.append(order.model_copy(update={"status": str(order.status)}))
    return out


@pytest.mark.parametrize("chunk", range(4))
def test_shortcut_reads_as_the_dumps_do(chunk: int) -> None:
    orders = _orders()[chunk::4]
    assert orders
    for stored in orders:
        ticket = Ticket(
            ticket_id="t-1",
            session_id="s-1",
            customer_id=stored.customer_id,
            text="where is my order",
        )
        for carried in _variants(stored):
            match = OrderMatch(
                order_id=stored.order_id,
                order=carried,
                method="deterministic",
                confidence=1.0,
                reason="id",
            )
            assert trust._distrust(ticket, match, stored) == _plain(ticket, match, stored)


def test_a_changed_field_is_still_named() -> None:
    stored = _orders()[0]
    ticket = Ticket(
        ticket_id="t-1", session_id="s-1", customer_id=stored.customer_id, text="where is it"
    )
    forged = stored.model_copy(update={"amount": stored.amount + 10})
    match = OrderMatch(
        order_id=stored.order_id, order=forged, method="deterministic", confidence=1.0, reason="id"
    )
    assert trust._distrust(ticket, match, stored) == (
        f"the record's copy of order {stored.order_id} differs from the store in amount"
    )

"""An order's product names, read with the shortcut for an order without lines, are the plain
reading's: the orders of the test data, with and without lines, repeated names and all."""

from __future__ import annotations

from pathlib import Path

import orjson

from baton_kafka.schemas.records import Order

DATA = Path(__file__).parents[2] / "data"


def _plain(order: Order) -> list[str]:
    return list(dict.fromkeys([order.product_name, *(i.product_name for i in order.items)]))


def _orders() -> list[Order]:
    orders = []
    for path in sorted(DATA.glob("*orders*.jsonl")):
        for line in path.read_bytes().splitlines():
            if line.strip():
                orders.append(Order.model_validate(orjson.loads(line)))
    # Each order with lines also with its first line alone, its lines twice, and a line named
    # as the order (names only: the lines' amounts are not read).
    for order in [o for o in orders if o.items]:
        first = order.items[0]
        named = first.model_copy(update={"product_name": order.product_name})
        for items in [order.items[:1], (*order.items, *order.items), (named, *order.items[1:])]:
            orders.append(order.model_copy(update={"items": tuple(items)}))
    return orders


def test_an_orders_products_are_the_plain_reading() -> None:
    orders = _orders()
    assert len(orders) > 50 and any(o.items for o in orders) and any(not o.items for o in orders)
    for order in orders:
        got = order.products()
        assert got == _plain(order), order.order_id
        assert got is not order.products()  # a list of its own, as before: callers may keep it

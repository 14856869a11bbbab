"""Baton's own ``orders`` table: its columns, and orders to rows and back (SQLite, PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from baton_kafka.agents.orders.source import SourceMisconfigured, utc
from baton_kafka.schemas.records import Order

TABLE = "orders"
COLUMNS = (
    "order_id",
    "customer_id",
    "product_name",
    "status",
    "amount",
    "currency",
    "ordered_at",
    "delivered_at",
    "carrier",
    "tracking_no",
    "items",
    "refunded",
)
# Added after the first layout, with their column types: a table without one gets it on
# connect (lines nullable, refunded 0), its rows kept. The types are the same in both stores.
LATER_TYPES = {"items": "TEXT", "refunded": "DOUBLE PRECISION NOT NULL DEFAULT 0"}
LATER = tuple(LATER_TYPES)
ADD_LATER = {c: f"ALTER TABLE {TABLE} ADD COLUMN {c} {t}" for c, t in LATER_TYPES.items()}
SELECT = f"SELECT {', '.join(COLUMNS)} FROM {TABLE}"
UPDATE = ", ".join(f"{c} = excluded.{c}" for c in COLUMNS[1:])


def upsert_sql(mark: str) -> str:
    """The upsert statement with ``mark`` as the placeholder (``?`` or ``%s``)."""
    marks = ", ".join(mark for _ in COLUMNS)
    return (
        f"INSERT INTO {TABLE} ({', '.join(COLUMNS)}) VALUES ({marks}) "
        f"ON CONFLICT (order_id) DO UPDATE SET {UPDATE}"
    )


def to_row(order: Order, as_text: bool) -> tuple[Any, ...]:
    """``order`` as a row; times as ISO text (SQLite) or aware datetimes (PostgreSQL)."""
    ordered = utc(order.ordered_at)
    delivered = utc(order.delivered_at) if order.delivered_at else None
    return (
        order.order_id,
        order.customer_id,
        order.product_name,
        str(order.status),
        order.amount,
        order.currency,
        ordered.isoformat(timespec="microseconds") if as_text else ordered,
        (delivered.isoformat(timespec="microseconds") if delivered else None)
        if as_text
        else delivered,
        order.carrier,
        order.tracking_no,
        items_text(order),
        order.refunded,
    )


def items_text(order: Order) -> str | None:
    """The order's lines as JSON text, or None for a one-item order."""
    if not order.items:
        return None
    return orjson.dumps([i.model_dump(exclude_none=True) for i in order.items]).decode()


def from_row(row: Iterable[Any]) -> Order:
    """A row of ``SELECT`` as an order (its lines stored as JSON text)."""
    data = dict(zip(COLUMNS, row, strict=True))
    data["items"] = orjson.loads(data["items"]) if data["items"] else ()
    if data["refunded"] is None:
        del data["refunded"]
    return Order.model_validate(data)


def check_columns(found: Iterable[str], where: str) -> list[str]:
    """Refuse an existing ``orders`` table that is not baton's: its rows would be misread.

    Returns the columns of a later layout the table still lacks (to be added, nullable).
    """
    have = {c.lower() for c in found}
    lacking = [c for c in LATER if c not in have]
    if have | set(lacking) == set(COLUMNS):
        return lacking
    parts = []
    if missing := [c for c in COLUMNS if c not in have]:
        parts.append(f"no {', '.join(missing)}")
    if extra := sorted(have - set(COLUMNS)):
        parts.append(f"other columns: {', '.join(extra)}")
    raise SourceMisconfigured(
        f"{where}: the existing table {TABLE!r} is not baton's ({'; '.join(parts)}): point "
        "BATON_ORDERS_DSN at another database or schema, or read that table with BATON_ORDERS_MAP"
    )

"""Baton's own ``orders`` table: its columns, and orders to rows and back (SQLite, PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agents.orders.source import SourceMisconfigured, utc
from schemas.records import Order

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
)
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
    )


def from_row(row: Iterable[Any]) -> Order:
    """A row of ``SELECT`` as an order."""
    return Order.model_validate(dict(zip(COLUMNS, row, strict=True)))


def check_columns(found: Iterable[str], where: str) -> None:
    """Refuse an existing ``orders`` table that is not baton's: its rows would be misread."""
    have = {c.lower() for c in found}
    if have == set(COLUMNS):
        return
    parts = []
    if missing := [c for c in COLUMNS if c not in have]:
        parts.append(f"no {', '.join(missing)}")
    if extra := sorted(have - set(COLUMNS)):
        parts.append(f"other columns: {', '.join(extra)}")
    raise SourceMisconfigured(
        f"{where}: the existing table {TABLE!r} is not baton's ({'; '.join(parts)}): point "
        "BATON_ORDERS_DSN at another database or schema, or read that table with BATON_ORDERS_MAP"
    )

"""An order source of your own: the shop's nightly CSV export, read-only, re-read when it changes.

The pipeline asks an order source three things (``agents.orders.OrderSource``): a customer's
orders, one order by id, and to close. This module is all it takes; baton is not edited.

    # the module on the worker's PYTHONPATH, named in the settings:
    BATON_ORDERS_SOURCE=csv_orders:source SHOP_ORDERS_CSV=orders.csv baton worker
    # or a worker built in code with it:
    SHOP_ORDERS_CSV=orders.csv python examples/csv_orders.py
"""

from __future__ import annotations

import asyncio
import csv
import os
import sys
from datetime import UTC
from pathlib import Path

from pydantic import ValidationError

from baton_kafka.agents.orders import SourceMisconfigured, StoreUnavailable
from baton_kafka.schemas import Order

# The export's header -> our field (fields it lacks keep their defaults).
HEADER = {
    "Order No": "order_id",
    "Customer": "customer_id",
    "Item": "product_name",
    "Status": "status",
    "Total": "amount",
    "Currency": "currency",
    "Placed": "ordered_at",
    "Delivered": "delivered_at",
    "Carrier": "carrier",
    "Tracking": "tracking_no",
    "Refunded": "refunded",
}
REQUIRED = ("Order No", "Customer", "Item", "Status", "Total", "Placed")


class CsvOrderSource:
    """Orders in one CSV file, kept in memory and re-read when the file's mtime changes."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._seen: float | None = None
        self._by_customer: dict[str, list[Order]] = {}
        self._by_id: dict[str, Order] = {}
        self._closed = False

    def _read(self) -> None:
        try:
            mtime = self.path.stat().st_mtime
            if mtime == self._seen:
                return
            with self.path.open(newline="", encoding="utf-8") as f:
                rows = list(csv.DictReader(f))
                header = set(rows[0]) if rows else set()
        except OSError as exc:
            # Unreadable for now: the ticket is flagged "order store unavailable", not lost.
            raise StoreUnavailable(f"{self.path}: {exc.strerror}") from None
        if rows and (missing := [h for h in REQUIRED if h not in header]):
            raise SourceMisconfigured(f"{self.path} has no column {', '.join(missing)}")
        by_customer: dict[str, list[Order]] = {}
        for row in rows:
            values = {HEADER[k]: v for k, v in row.items() if k in HEADER and v}
            try:
                order = Order.model_validate(values)
            except ValidationError:
                continue  # a bad line of the export is left out, the others are used
            if order.ordered_at.tzinfo is None:
                order = order.model_copy(
                    update={"ordered_at": order.ordered_at.replace(tzinfo=UTC)}
                )
            by_customer.setdefault(order.customer_id, []).append(order)
        for orders in by_customer.values():
            orders.sort(key=lambda o: o.ordered_at, reverse=True)
        self._by_customer = by_customer
        self._by_id = {o.order_id: o for orders in by_customer.values() for o in orders}
        self._seen = mtime

    async def _fresh(self) -> None:
        if self._closed:
            raise StoreUnavailable("the CSV order source is closed")
        await asyncio.to_thread(self._read)

    async def check(self) -> None:
        """Run once at the worker's start: a missing column stops it with one line."""
        await self._fresh()

    async def for_customer(self, customer_id: str, limit: int = 50) -> list[Order]:
        """The customer's orders, most recent first."""
        await self._fresh()
        return self._by_customer.get(customer_id, [])[: max(0, limit)]

    async def get(self, order_id: str) -> Order | None:
        """One order by id, or None."""
        await self._fresh()
        return self._by_id.get(order_id)

    async def close(self) -> None:
        """Nothing is held open; later calls raise ``StoreUnavailable``."""
        self._closed = True


def source(settings: object) -> CsvOrderSource:
    """The factory ``BATON_ORDERS_SOURCE=csv_orders:source`` names: called with the settings."""
    path = os.environ.get("SHOP_ORDERS_CSV")
    if not path:
        raise ValueError("set SHOP_ORDERS_CSV to the CSV export's path")
    return CsvOrderSource(path)


def main() -> int:
    """A worker built in code with this source (same as ``baton worker``, otherwise)."""
    from baton_kafka.streams.kafka import BrokerUnreachable
    from baton_kafka.streams.runtime import worker
    from baton_kafka.streams.settings import load

    try:
        settings = load()
        worker.run(settings, orders=source(settings))
    except (ValueError, BrokerUnreachable) as exc:  # SettingsError is a ValueError
        print(f"csv_orders: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

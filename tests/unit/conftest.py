"""Fixtures shared by the unit tests: an order store with two of customer C1's orders."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from agents.orders import SQLiteOrderStore
from schemas import Order
from schemas.records import utcnow

ORDERS = [
    Order(
        order_id="O-1",
        customer_id="C1",
        product_name="Midea Electric Kettle 1.7L",
        status="delivered",
        amount=39.9,
        currency="USD",
        ordered_at=utcnow() - timedelta(days=20),
        delivered_at=utcnow() - timedelta(days=17),
    ),
    Order(
        order_id="O-2",
        customer_id="C1",
        product_name="DualSense Wireless Controller",
        status="delivered",
        amount=69.0,
        currency="USD",
        ordered_at=utcnow() - timedelta(days=35),
        delivered_at=utcnow() - timedelta(days=32),
    ),
]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteOrderStore]:
    """A SQLite order store holding ``ORDERS``."""
    s = SQLiteOrderStore(tmp_path / "orders.sqlite3")
    await s.upsert(ORDERS)
    yield s
    await s.close()

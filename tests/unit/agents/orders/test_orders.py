"""The order store: the same behaviour over every backend, and clear failures when it is down."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from baton_kafka.agents.orders import (
    OrderStore,
    PostgresOrderStore,
    SQLiteOrderStore,
    StoreUnavailable,
    open_store,
)
from tests.fixtures.data import order

# Backends every test below runs against; PostgreSQL is BATON_TEST_POSTGRES_DSN's server or one
# started for the run (the ``postgres_dsn`` fixture, tests/fixtures/postgres.py).
STORE_KINDS = ["sqlite", "postgres"]

HOSTILE = "'; DROP TABLE orders; --"


async def _postgres_store(dsn: str) -> PostgresOrderStore:
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        await conn.execute("DROP TABLE IF EXISTS orders")
    return PostgresOrderStore(dsn)


@pytest.fixture(params=STORE_KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[OrderStore]:
    made: OrderStore
    if request.param == "sqlite":
        made = SQLiteOrderStore(tmp_path / "orders.sqlite3")
    else:
        made = await _postgres_store(request.getfixturevalue("postgres_dsn"))
    try:
        yield made
    finally:
        await made.close()


async def test_empty_store(store: OrderStore) -> None:
    assert await store.count() == 0
    assert await store.for_customer("C1") == []
    assert await store.get("O-1") is None


async def test_upsert_then_read_back_every_field(store: OrderStore) -> None:
    full = order(
        "O-1",
        product_name="美的电热水壶 1.7L",
        amount=199.0,
        currency="CNY",
        delivered_at=datetime(2026, 11, 3, 15, 0, tzinfo=UTC),
        carrier="顺丰速运",
        tracking_no="SF1482736455021",
    )
    assert await store.upsert([full]) == 1
    assert await store.get("O-1") == full
    assert await store.count() == 1


async def test_upsert_updates_by_order_id(store: OrderStore) -> None:
    await store.upsert([order("O-1", status="shipped"), order("O-2")])
    written = await store.upsert([order("O-1", status="delivered", carrier="UPS"), order("O-3")])
    assert written == 2
    assert await store.count() == 3
    updated = await store.get("O-1")
    assert updated is not None
    assert (updated.status, updated.carrier) == ("delivered", "UPS")


async def test_upsert_accepts_any_iterable_and_nothing(store: OrderStore) -> None:
    assert await store.upsert(order(f"O-{i}") for i in range(3)) == 3
    assert await store.upsert([]) == 0
    assert await store.count() == 3


async def test_for_customer_is_most_recent_first_and_limited(store: OrderStore) -> None:
    await store.upsert(
        [
            order("O-old", day=2),
            order("O-new", day=20),
            order("O-mid", day=9),
            order("O-other", customer="C2", day=25),
        ]
    )
    assert [o.order_id for o in await store.for_customer("C1")] == ["O-new", "O-mid", "O-old"]
    assert [o.order_id for o in await store.for_customer("C1", limit=2)] == ["O-new", "O-mid"]
    assert [o.order_id for o in await store.for_customer("C2")] == ["O-other"]
    assert await store.for_customer("C3") == []


async def test_times_in_other_zones_sort_by_instant(store: OrderStore) -> None:
    shanghai = timezone(timedelta(hours=8))
    # 08:00 in Shanghai on the 10th is 00:00 UTC, earlier than 06:00 UTC the same day.
    early = order("O-early", ordered_at=datetime(2026, 11, 10, 8, 0, tzinfo=shanghai))
    late = order("O-late", ordered_at=datetime(2026, 11, 10, 6, 0, tzinfo=UTC))
    await store.upsert([early, late])
    assert [o.order_id for o in await store.for_customer("C1")] == ["O-late", "O-early"]
    stored = await store.get("O-early")
    assert stored is not None and stored.ordered_at == early.ordered_at


async def test_naive_times_are_taken_as_utc(store: OrderStore) -> None:
    await store.upsert([order("O-1", ordered_at=datetime(2026, 11, 10, 8, 0))])
    stored = await store.get("O-1")
    assert stored is not None
    assert stored.ordered_at == datetime(2026, 11, 10, 8, 0, tzinfo=UTC)


async def test_sql_looking_values_are_stored_verbatim(store: OrderStore) -> None:
    # Ids cannot hold quotes or spaces (schemas.records.Identifier); free text can.
    hostile = order("O-1", product_name=HOSTILE, carrier=HOSTILE, tracking_no=HOSTILE)
    await store.upsert([hostile, order("O-2")])
    assert await store.get("O-1") == hostile
    assert await store.for_customer("C1") == [order("O-2"), hostile]
    assert await store.get(HOSTILE) is None and await store.for_customer(HOSTILE) == []
    assert await store.for_customer("C1' OR '1'='1") == []
    assert await store.get("O-2' OR '1'='1") is None
    assert await store.count() == 2


async def test_concurrent_calls_all_succeed(store: OrderStore) -> None:
    writes = [store.upsert([order(f"O-{i}", customer=f"C{i % 3}", day=1 + i)]) for i in range(20)]
    assert await asyncio.gather(*writes) == [1] * 20
    reads = await asyncio.gather(*(store.for_customer(f"C{i}") for i in range(3)))
    assert sorted(len(r) for r in reads) == [6, 7, 7]
    assert await store.count() == 20


async def test_a_closed_store_is_unavailable(store: OrderStore) -> None:
    await store.close()
    with pytest.raises(StoreUnavailable):
        await store.count()
    await store.close()  # closing twice is harmless


async def test_sqlite_store_on_a_directory_is_unavailable(tmp_path: Path) -> None:
    store = SQLiteOrderStore(tmp_path)
    with pytest.raises(StoreUnavailable):
        await store.for_customer("C1")
    with pytest.raises(StoreUnavailable):
        await store.upsert([order("O-1")])
    await store.close()


async def test_sqlite_store_on_a_file_that_is_not_a_database_is_unavailable(
    tmp_path: Path,
) -> None:
    path = tmp_path / "orders.sqlite3"
    path.write_bytes(b"this is not an SQLite database, just text " * 100)
    store = SQLiteOrderStore(path)
    with pytest.raises(StoreUnavailable):
        await store.get("O-1")
    await store.close()


def test_open_store_under_a_regular_file_is_unavailable(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreUnavailable):
        open_store(str(blocker / "sub" / "orders.sqlite3"))


async def test_open_store_sqlite_url_creates_the_directory(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "orders.sqlite3"
    store = open_store(f"sqlite:///{path}")
    assert isinstance(store, SQLiteOrderStore) and store.path == path
    await store.upsert([order("O-1")])
    await store.close()
    assert path.is_file()
    again = open_store(str(path))
    assert await again.count() == 1
    await again.close()


def test_open_store_chooses_the_backend_without_connecting() -> None:
    for url in ("postgresql://baton@127.0.0.1:1/orders", "postgres://baton@127.0.0.1:1/orders"):
        store = open_store(url)
        assert isinstance(store, PostgresOrderStore) and store.dsn == url


@pytest.mark.parametrize("url", ["mysql://db/orders", "redis://x", "", "  "])
def test_open_store_rejects_other_urls(url: str) -> None:
    with pytest.raises(ValueError, match="order store"):
        open_store(url)


async def test_unreachable_postgres_is_unavailable() -> None:
    pytest.importorskip("psycopg")
    store = PostgresOrderStore("postgresql://baton@127.0.0.1:1/orders", connect_timeout=2)
    with pytest.raises(StoreUnavailable):
        await store.for_customer("C1")
    await store.close()

"""The shop's own PostgreSQL tables read through a map (no DDL, ever), and baton's own table
refusing to reuse a foreign one; on the real PostgreSQL the fixtures start."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from baton_kafka.agents.orders import (
    PostgresOrderSource,
    PostgresOrderStore,
    SourceMisconfigured,
    SQLiteOrderStore,
    StoreUnavailable,
    open_source,
)
from baton_kafka.streams.cli.main import main
from baton_kafka.streams.kafka.embedded import free_port
from baton_kafka.streams.runtime.faust_app.orders import build_source, check_source
from baton_kafka.streams.settings import Settings, SettingsError
from tests.fixtures.data import order

DATABASE = "baton_shop"
READER = "shop_reader"
SHOP_SQL = """
CREATE SCHEMA shop;
CREATE TABLE shop.customers (cust_no integer PRIMARY KEY, email text NOT NULL);
CREATE TABLE shop.purchases (
    id bigint PRIMARY KEY,
    cust_no integer NOT NULL REFERENCES shop.customers,
    title text NOT NULL,
    state text NOT NULL,
    total numeric(10, 2) NOT NULL,
    cur char(3) NOT NULL,
    created timestamp NOT NULL,
    delivered timestamptz,
    courier text
);
CREATE VIEW shop.v_orders AS
    SELECT id, cust_no, title, state, total, cur, created, delivered, courier
    FROM shop.purchases;
INSERT INTO shop.customers VALUES (42, 'ana@example.com'), (7, 'bob@example.com');
INSERT INTO shop.purchases VALUES
    (1001, 42, 'Midea Electric Kettle 1.7L', 'DELIVERED', 39.90, 'USD',
     '2026-10-02 10:00:00', '2026-10-05 10:00:00+00', 'UPS'),
    (1002, 42, 'Sony WH-1000XM5 Headphones', 'SHIPPED', 349.00, 'USD',
     '2026-10-12 10:00:00', NULL, NULL),
    (1003, 42, 'A broken row', 'PAID', -1.00, 'USD', '2026-08-13 10:00:00', NULL, NULL),
    (2001, 7, 'Espresso Machine', 'PAID', 120.00, 'EUR', '2026-09-01 08:00:00', NULL, NULL);
CREATE TABLE shop.payroll (id int, salary numeric);
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
CREATE ROLE shop_reader LOGIN;
GRANT USAGE ON SCHEMA shop TO shop_reader;
GRANT SELECT ON shop.v_orders, shop.purchases, shop.customers TO shop_reader;
"""
VIEW_MAP: dict[str, Any] = {
    "table": "shop.v_orders",
    "fields": {
        "order_id": "id",
        "customer_id": "cust_no",
        "product_name": "title",
        "status": "state",
        "amount": "total",
        "currency": "cur",
        "ordered_at": "created",
        "delivered_at": "delivered",
        "carrier": "courier",
    },
    "status_values": {"DELIVERED": "delivered", "SHIPPED": "shipped", "PAID": "paid"},
}
QUERY_MAP: dict[str, Any] = {
    "for_customer": (
        "SELECT p.id AS order_id, c.email AS customer_id, p.title AS product_name, "
        "lower(p.state) AS status, p.total AS amount, p.cur AS currency, "
        "p.created AS ordered_at FROM shop.purchases p JOIN shop.customers c USING (cust_no) "
        "WHERE c.email = %(customer_id)s ORDER BY p.created DESC LIMIT %(limit)s"
    ),
    "get": (
        "SELECT p.id AS order_id, c.email AS customer_id, p.title AS product_name, "
        "lower(p.state) AS status, p.total AS amount, p.cur AS currency, "
        "p.created AS ordered_at FROM shop.purchases p JOIN shop.customers c USING (cust_no) "
        "WHERE p.id = %(order_id)s"
    ),
}


def _with(dsn: str, user: str | None = None, database: str | None = None) -> str:
    parts = urlsplit(dsn)
    host = parts.netloc.rpartition("@")[2]
    netloc = f"{user or parts.username}@{host}"
    return urlunsplit(parts._replace(netloc=netloc, path=f"/{database or parts.path[1:]}"))


@pytest.fixture(scope="module")
def shop_db(postgres_dsn: str) -> Iterator[str]:
    """A database of the shop's own tables; yields the DSN of a role that may only read them."""
    with psycopg.connect(postgres_dsn, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        admin.execute(f"DROP ROLE IF EXISTS {READER}")
        admin.execute(f"CREATE DATABASE {DATABASE}")
    owner = _with(postgres_dsn, database=DATABASE)
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute(SHOP_SQL)  # type: ignore[arg-type]
    yield _with(postgres_dsn, user=READER, database=DATABASE)
    with psycopg.connect(postgres_dsn, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        admin.execute(f"DROP ROLE IF EXISTS {READER}")


def _relations(owner_dsn: str) -> set[str]:
    with psycopg.connect(owner_dsn) as conn:
        rows = conn.execute(
            "SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname IN ('public', 'shop')"
        ).fetchall()
    return {r[0] for r in rows}


@pytest.fixture
async def view_source(shop_db: str) -> AsyncIterator[PostgresOrderSource]:
    s = open_source(shop_db, VIEW_MAP)
    assert isinstance(s, PostgresOrderSource)
    try:
        yield s
    finally:
        await s.close()


async def test_a_view_is_read_through_the_map_by_a_role_that_can_only_read(
    view_source: PostgresOrderSource, shop_db: str, postgres_dsn: str
) -> None:
    before = _relations(_with(postgres_dsn, database=DATABASE))
    await view_source.check()
    orders = await view_source.for_customer("42")
    # The broken row (a negative amount) is skipped; the rest most recent first.
    assert [o.order_id for o in orders] == ["1002", "1001"]
    kettle = orders[1]
    assert kettle.customer_id == "42" and kettle.status == "delivered"
    assert kettle.amount == pytest.approx(39.9) and kettle.currency == "USD"
    assert kettle.ordered_at == datetime(2026, 10, 2, 10, tzinfo=UTC)
    assert kettle.delivered_at == datetime(2026, 10, 5, 10, tzinfo=UTC)
    assert kettle.carrier == "UPS" and kettle.tracking_no is None
    assert [o.order_id for o in await view_source.for_customer("42", limit=1)] == ["1002"]
    assert await view_source.for_customer("999") == []
    got = await view_source.get("2001")
    assert got is not None and got.customer_id == "7" and got.status == "paid"
    assert await view_source.get("404") is None
    # Their ids are integers: an id that is not one is nobody's, not an error.
    assert await view_source.for_customer("c-ana") == []
    assert await view_source.get("O-1") is None
    # Not a table, index or anything else was created: the reader could not have.
    assert _relations(_with(postgres_dsn, database=DATABASE)) == before


async def test_queries_with_named_parameters(shop_db: str) -> None:
    s = open_source(shop_db, QUERY_MAP)
    await s.check()  # type: ignore[attr-defined]
    orders = await s.for_customer("ana@example.com")
    assert [(o.order_id, o.status) for o in orders] == [("1002", "shipped"), ("1001", "delivered")]
    got = await s.get("1001")
    assert got is not None and got.customer_id == "ana@example.com" and got.delivered_at is None
    assert await s.get("not-a-number") is None
    await s.close()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"fields": {**VIEW_MAP["fields"], "amount": "price"}},
            "table shop.v_orders has no column price (for amount); it has id, cust_no, title",
        ),
        (
            {"fields": {**VIEW_MAP["fields"], "tracking_no": "tracking"}},
            "has no column tracking (for tracking_no)",
        ),
        ({"fields": {}}, "has no column order_id, customer_id, product_name, status, amount"),
        ({"table": "shop.nope"}, 'table shop.nope: relation "shop.nope" does not exist'),
        ({"table": "shop.payroll"}, "table shop.payroll: permission denied for table payroll"),
        (
            {
                "table": None,
                "fields": {},
                **QUERY_MAP,
                "get": "SELECT nope FROM shop.purchases WHERE id = %(order_id)s",
            },
            "the 'get' query: column \"nope\" does not exist",
        ),
    ],
)
def test_a_missing_column_or_table_is_one_line_at_start(
    shop_db: str, change: dict[str, Any], message: str
) -> None:
    source = open_source(shop_db, VIEW_MAP | change)
    with pytest.raises(SettingsError) as raised:
        check_source(source)
    assert message in str(raised.value) and "\n" not in str(raised.value)
    assert str(raised.value).startswith("BATON_ORDERS_MAP: ")

    async def later() -> None:
        # Met later, the same misconfiguration flags the ticket instead of failing the stage.
        with pytest.raises(StoreUnavailable):
            await source.for_customer("42")
        await source.close()

    asyncio.run(later())


def test_the_worker_refuses_to_start_on_a_missing_column_in_one_line(
    shop_db: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bad = VIEW_MAP | {"fields": {**VIEW_MAP["fields"], "title": "x", "product_name": "name"}}
    bad["fields"].pop("title")
    monkeypatch.setenv("BATON_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("BATON_ORDERS_DSN", shop_db)
    monkeypatch.setenv("BATON_ORDERS_MAP", json.dumps(bad))
    assert main(["worker"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "has no column name (for product_name)" in err


def test_an_unreachable_database_at_start_is_a_warning_not_a_refusal() -> None:
    source = open_source(f"postgresql://baton@127.0.0.1:{free_port()}/shop", VIEW_MAP, timeout_s=1)
    warning = check_source(source)
    assert warning is not None and warning.startswith("order store unavailable at start")


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        ({"tabel": "x"}, "'tabel' is not a key of a PostgreSQL order map"),
        ({"table": "x", **QUERY_MAP}, "either 'table' or the queries"),
        ({"for_customer": QUERY_MAP["for_customer"]}, "give both queries"),
        (
            {"for_customer": "SELECT * FROM o WHERE c = %(cust)s", "get": QUERY_MAP["get"]},
            "must use %(customer_id)s",
        ),
        ({"table": "x", "fields": {"price": "p"}}, "'fields' names price, not fields of an order"),
    ],
)
def test_a_bad_map_is_one_line(mapping: dict[str, Any], message: str) -> None:
    settings = Settings(orders_dsn="postgresql://h/db", orders_map=json.dumps(mapping))
    with pytest.raises(SettingsError) as raised:
        build_source(settings)
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_the_map_may_be_a_file_and_bad_json_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "map.json"
    path.write_text(json.dumps(VIEW_MAP))
    built = build_source(Settings(orders_dsn="postgresql://h/db", orders_map=str(path)))
    assert isinstance(built, PostgresOrderSource) and built.mapping.table == "shop.v_orders"
    from baton_kafka.streams.settings import load

    with pytest.raises(SettingsError, match="BATON_ORDERS_MAP is not valid JSON"):
        load({"BATON_ORDERS_MAP": "{nope"})
    with pytest.raises(SettingsError, match="neither a JSON object nor a readable file"):
        load({"BATON_ORDERS_MAP": str(tmp_path / "missing.json")})


@pytest.fixture
def foreign_orders(postgres_dsn: str) -> Iterator[str]:
    """A schema holding someone else's ``orders`` table; yields a DSN that finds it first."""
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS legacy CASCADE")
        conn.execute("CREATE SCHEMA legacy")
        conn.execute("CREATE TABLE legacy.orders (id serial PRIMARY KEY, sku text, qty int)")
        conn.execute("INSERT INTO legacy.orders (sku, qty) VALUES ('A-1', 2)")
    yield f"{postgres_dsn}?options=-csearch_path%3Dlegacy"
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS legacy CASCADE")


def test_the_own_store_never_reuses_a_foreign_orders_table(
    foreign_orders: str, postgres_dsn: str
) -> None:
    store = PostgresOrderStore(foreign_orders)

    async def write() -> None:
        try:
            await store.upsert([order("O-1")])
        finally:
            await store.close()

    with pytest.raises(SourceMisconfigured) as raised:
        asyncio.run(write())
    message = str(raised.value)
    assert "the existing table 'orders' is not baton's" in message and "\n" not in message
    assert "no order_id, customer_id" in message and "other columns: id, qty, sku" in message
    with pytest.raises(SettingsError, match="is not baton's"):
        check_source(PostgresOrderStore(foreign_orders))
    with psycopg.connect(postgres_dsn) as conn:
        rows = conn.execute("SELECT sku, qty FROM legacy.orders").fetchall()
        indexes = conn.execute(
            "SELECT count(*) FROM pg_indexes WHERE schemaname = 'legacy'"
        ).fetchone()
    assert rows == [("A-1", 2)] and indexes == (1,)  # its primary key only


def test_orders_import_into_a_foreign_table_is_one_line(
    foreign_orders: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = tmp_path / "orders.jsonl"
    lines.write_text(order("O-1").model_dump_json() + "\n")
    monkeypatch.setenv("BATON_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("BATON_ORDERS_DSN", foreign_orders)
    assert main(["orders", "import", str(lines)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not baton's" in err and "Traceback" not in err


async def test_the_sqlite_store_refuses_a_foreign_table_too(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "orders.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, sku TEXT)")
    store = SQLiteOrderStore(path)
    with pytest.raises(SourceMisconfigured, match="other columns: id, sku"):
        await store.count()
    await store.close()

"""The order store: customers' real orders in SQLite or PostgreSQL, behind one small interface."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from agents.dsn import mask_dsn, scrub
from schemas.records import Order

_COLUMNS = (
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
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM orders"
_UPDATE = ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS[1:])


class StoreUnavailable(Exception):
    """The order database cannot be reached, opened or queried."""


class OrderStore(Protocol):
    """Where the customers' orders live."""

    async def for_customer(self, customer_id: str, limit: int = 50) -> list[Order]:
        """The customer's orders, most recent first."""
        ...

    async def get(self, order_id: str) -> Order | None:
        """One order by id, or None."""
        ...

    async def upsert(self, orders: Iterable[Order]) -> int:
        """Insert or update orders by ``order_id``; return how many were written."""
        ...

    async def count(self) -> int:
        """How many orders the store holds."""
        ...

    async def close(self) -> None:
        """Release the connection; later calls raise ``StoreUnavailable``."""
        ...


def _utc(moment: datetime) -> datetime:
    # Naive datetimes are taken as UTC so that stored times sort and compare consistently.
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def _row(order: Order, as_text: bool) -> tuple[Any, ...]:
    ordered = _utc(order.ordered_at)
    delivered = _utc(order.delivered_at) if order.delivered_at else None
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


def _order(row: Iterable[Any]) -> Order:
    return Order.model_validate(dict(zip(_COLUMNS, row, strict=True)))


def _limit(limit: int) -> int:
    return max(0, int(limit))


_SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS orders (
    order_id TEXT PRIMARY KEY,
    customer_id TEXT NOT NULL,
    product_name TEXT NOT NULL,
    status TEXT NOT NULL,
    amount REAL NOT NULL,
    currency TEXT NOT NULL,
    ordered_at TEXT NOT NULL,
    delivered_at TEXT,
    carrier TEXT,
    tracking_no TEXT
);
CREATE INDEX IF NOT EXISTS orders_customer_idx ON orders (customer_id, ordered_at);
"""


class SQLiteOrderStore:
    """Orders in one SQLite file (WAL mode); queries run on the store's own thread, in turn."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        # Every query and the close run on this one thread, so they never overlap: a shared
        # pool's threads only queued on a lock (with hundreds of look-ups in flight that was a
        # tenth of the worker's CPU).
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="orders-sqlite")

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=10.0, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(_SQLITE_SCHEMA)
        except BaseException:
            conn.close()
            raise
        return conn

    def _call(self, sql: str, params: Sequence[Any], many: bool) -> list[Any]:
        if self._closed:
            raise StoreUnavailable(f"order store {self.path} is closed")
        try:
            if self._conn is None:
                self._conn = self._connect()
            with self._conn:
                if many:
                    self._conn.executemany(sql, params)
                    return []
                return self._conn.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.IntegrityError):
                raise
            raise StoreUnavailable(f"order store {self.path}: {exc}") from exc

    async def _run(self, sql: str, params: Sequence[Any] = (), many: bool = False) -> list[Any]:
        if self._closed:
            raise StoreUnavailable(f"order store {self.path} is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, self._call, sql, params, many)

    async def for_customer(self, customer_id: str, limit: int = 50) -> list[Order]:
        """The customer's orders, most recent first."""
        sql = f"{_SELECT} WHERE customer_id = ? ORDER BY ordered_at DESC, order_id DESC LIMIT ?"
        return [_order(r) for r in await self._run(sql, (customer_id, _limit(limit)))]

    async def get(self, order_id: str) -> Order | None:
        """One order by id, or None."""
        rows = await self._run(f"{_SELECT} WHERE order_id = ?", (order_id,))
        return _order(rows[0]) if rows else None

    async def upsert(self, orders: Iterable[Order]) -> int:
        """Insert or update orders by ``order_id``; return how many were written."""
        rows = [_row(o, as_text=True) for o in orders]
        marks = ", ".join("?" for _ in _COLUMNS)
        sql = (
            f"INSERT INTO orders ({', '.join(_COLUMNS)}) VALUES ({marks}) "
            f"ON CONFLICT (order_id) DO UPDATE SET {_UPDATE}"
        )
        await self._run(sql, rows, many=True)
        return len(rows)

    async def count(self) -> int:
        """How many orders the store holds."""
        rows = await self._run("SELECT COUNT(*) FROM orders")
        return int(rows[0][0])

    async def close(self) -> None:
        """Close the connection; later calls raise ``StoreUnavailable``."""

        def shut() -> None:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None

        if self._closed:
            return
        await asyncio.get_running_loop().run_in_executor(self._thread, shut)
        self._thread.shutdown(wait=False)


_POSTGRES_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS orders (
        order_id TEXT PRIMARY KEY,
        customer_id TEXT NOT NULL,
        product_name TEXT NOT NULL,
        status TEXT NOT NULL,
        amount DOUBLE PRECISION NOT NULL,
        currency TEXT NOT NULL,
        ordered_at TIMESTAMPTZ NOT NULL,
        delivered_at TIMESTAMPTZ,
        carrier TEXT,
        tracking_no TEXT
    )
    """,
    "CREATE INDEX IF NOT EXISTS orders_customer_idx ON orders (customer_id, ordered_at)",
)


class PostgresOrderStore:
    """Orders in PostgreSQL through one psycopg 3 async connection, reopened after failures."""

    def __init__(self, dsn: str, connect_timeout: float = 10.0) -> None:
        self.dsn = dsn
        self.connect_timeout = connect_timeout
        self._conn: Any = None
        self._lock = asyncio.Lock()
        self._closed = False

    async def _connect(self) -> Any:
        import psycopg

        conn = await psycopg.AsyncConnection.connect(
            self.dsn, autocommit=True, connect_timeout=max(1, int(self.connect_timeout))
        )
        try:
            async with conn.transaction():
                for statement in _POSTGRES_SCHEMA:
                    await conn.execute(statement)
        except BaseException:
            await conn.close()
            raise
        return conn

    async def _run(self, work: Callable[[Any], Any]) -> Any:
        try:
            import psycopg
        except ImportError as exc:
            raise StoreUnavailable(
                "PostgreSQL needs psycopg: pip install 'psycopg[binary]'"
            ) from exc
        async with self._lock:
            if self._closed:
                raise StoreUnavailable("order store is closed")
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = await self._connect()
            except psycopg.Error as exc:
                raise StoreUnavailable(f"order store: {scrub(str(exc), self.dsn)}") from None
            try:
                return await work(self._conn)
            except (psycopg.IntegrityError, psycopg.DataError):
                raise
            except psycopg.Error as exc:
                await self._drop()
                raise StoreUnavailable(f"order store: {scrub(str(exc), self.dsn)}") from None

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            # The connection may already be broken: closing it is best effort.
            with contextlib.suppress(Exception):
                await conn.close()

    async def for_customer(self, customer_id: str, limit: int = 50) -> list[Order]:
        """The customer's orders, most recent first."""
        sql = f"{_SELECT} WHERE customer_id = %s ORDER BY ordered_at DESC, order_id DESC LIMIT %s"

        async def work(conn: Any) -> list[Order]:
            cur = await conn.execute(sql, (customer_id, _limit(limit)))
            return [_order(r) for r in await cur.fetchall()]

        result: list[Order] = await self._run(work)
        return result

    async def get(self, order_id: str) -> Order | None:
        """One order by id, or None."""

        async def work(conn: Any) -> Order | None:
            cur = await conn.execute(f"{_SELECT} WHERE order_id = %s", (order_id,))
            row = await cur.fetchone()
            return _order(row) if row else None

        result: Order | None = await self._run(work)
        return result

    async def upsert(self, orders: Iterable[Order]) -> int:
        """Insert or update orders by ``order_id``; return how many were written."""
        rows = [_row(o, as_text=False) for o in orders]
        marks = ", ".join("%s" for _ in _COLUMNS)
        sql = (
            f"INSERT INTO orders ({', '.join(_COLUMNS)}) VALUES ({marks}) "
            f"ON CONFLICT (order_id) DO UPDATE SET {_UPDATE}"
        )

        async def work(conn: Any) -> None:
            if rows:
                async with conn.transaction(), conn.cursor() as cur:
                    await cur.executemany(sql, rows)

        await self._run(work)
        return len(rows)

    async def count(self) -> int:
        """How many orders the store holds."""

        async def work(conn: Any) -> int:
            cur = await conn.execute("SELECT COUNT(*) FROM orders")
            row = await cur.fetchone()
            return int(row[0])

        result: int = await self._run(work)
        return result

    async def close(self) -> None:
        """Close the connection; later calls raise ``StoreUnavailable``."""
        async with self._lock:
            self._closed = True
            await self._drop()


def open_store(url: str) -> OrderStore:
    """The store for ``url``: sqlite:///abs/path or a plain path, or postgresql://..."""
    if url.startswith(("postgresql://", "postgres://")):
        return PostgresOrderStore(url)
    if url.startswith("sqlite:///"):
        path = Path("/" + url.removeprefix("sqlite:///").lstrip("/"))
    elif "://" in url or not url.strip():
        raise ValueError(
            f"unsupported order store URL {mask_dsn(url)!r}: use sqlite:///path or postgresql://"
        )
    else:
        path = Path(url)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreUnavailable(f"cannot create the directory of {path}: {exc}") from exc
    return SQLiteOrderStore(path)

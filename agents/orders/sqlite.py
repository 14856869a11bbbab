"""Orders in one SQLite file: baton's own table, read and written."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from baton_kafka.agents.orders.source import StoreUnavailable, clamp_limit
from baton_kafka.agents.orders.table import (
    ADD_LATER,
    SELECT,
    TABLE,
    check_columns,
    from_row,
    to_row,
    upsert_sql,
)
from baton_kafka.schemas.records import Order

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    order_id TEXT PRIMARY KEY,
    customer_id TEXT NOT NULL,
    product_name TEXT NOT NULL,
    status TEXT NOT NULL,
    amount REAL NOT NULL,
    currency TEXT NOT NULL,
    ordered_at TEXT NOT NULL,
    delivered_at TEXT,
    carrier TEXT,
    tracking_no TEXT,
    items TEXT,
    refunded DOUBLE PRECISION NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS orders_customer_idx ON {TABLE} (customer_id, ordered_at);
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
            found = [r[1] for r in conn.execute(f"PRAGMA table_info({TABLE})")]
            if found:
                lacking = check_columns(found, f"order store {self.path}")
                with conn:  # a store written before a later column: add it, keep the rows
                    for column in lacking:
                        conn.execute(ADD_LATER[column])
            conn.executescript(_SCHEMA)
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

    async def check(self) -> None:
        """Open the file once: a foreign ``orders`` table in it stops the start."""
        await self._run("SELECT 1")

    async def for_customer(self, customer_id: str, limit: int = 50) -> list[Order]:
        """The customer's orders, most recent first."""
        sql = f"{SELECT} WHERE customer_id = ? ORDER BY ordered_at DESC, order_id DESC LIMIT ?"
        return [from_row(r) for r in await self._run(sql, (customer_id, clamp_limit(limit)))]

    async def get(self, order_id: str) -> Order | None:
        """One order by id, or None."""
        rows = await self._run(f"{SELECT} WHERE order_id = ?", (order_id,))
        return from_row(rows[0]) if rows else None

    async def upsert(self, orders: Iterable[Order]) -> int:
        """Insert or update orders by ``order_id``; return how many were written."""
        rows = [to_row(o, as_text=True) for o in orders]
        await self._run(upsert_sql("?"), rows, many=True)
        return len(rows)

    async def count(self) -> int:
        """How many orders the store holds."""
        rows = await self._run(f"SELECT COUNT(*) FROM {TABLE}")
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

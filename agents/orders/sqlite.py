"""Orders in one SQLite file: baton's own table, read and written."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import quote

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

# A read tried on the event loop is given up after this many SQLite VM steps (then it runs on the
# store's thread): a customer's 50 latest orders take about 2,300, a row about 45.
LOOP_READ_STEPS = 20_000
# How often (in VM steps) the budget is checked: each check is a call into Python.
_STEP_CHECK = 1_000


class SQLiteOrderStore:
    """Orders in one SQLite file (WAL mode): writes on the store's own thread, in turn; reads on
    the event loop when answered at once (no lock, a short query), else on that thread."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        # Every query and the close run on this one thread, so they never overlap: a shared
        # pool's threads only queued on a lock (with hundreds of look-ups in flight that was a
        # tenth of the worker's CPU).
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="orders-sqlite")
        # Reads are tried first on the event loop's thread, on a read-only connection that never
        # waits: the hop to the store's thread cost four times the query. Any busy lock, long
        # query or error sends the read to the thread as before.
        self._reader: sqlite3.Connection | None = None
        self._reader_thread: int | None = None
        self._reader_broken = False
        self._steps_left = 0
        self._file = ""
        # Calls sent to the thread and not done: while any is, reads queue behind them too, so
        # a read never overtakes a write asked for before it.
        self._queued = 0

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
            # The file SQLite opened (empty for an in-memory store): the loop's reads open it
            # by this name, whatever the working directory is by then.
            self._file = str(conn.execute("PRAGMA database_list").fetchone()[2] or "")
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
        done = loop.run_in_executor(self._thread, self._call, sql, params, many)
        self._queued += 1
        done.add_done_callback(self._unqueue)
        return await done

    def _unqueue(self, _: object) -> None:
        self._queued -= 1

    def _step(self) -> int:
        """The progress handler: nonzero (interrupt the query) once the budget is spent."""
        self._steps_left -= 1
        return 1 if self._steps_left < 0 else 0

    def _open_reader(self) -> sqlite3.Connection:
        if not self._file:
            raise sqlite3.OperationalError("an in-memory store has no file to read")
        uri = f"file:{quote(self._file)}?mode=ro"
        # Never waits for a lock (timeout 0); autocommit, so no read transaction outlives a read.
        conn = sqlite3.connect(
            uri, uri=True, timeout=0, isolation_level=None, check_same_thread=False
        )
        conn.set_progress_handler(self._step, _STEP_CHECK)
        return conn

    def _read_here(self, sql: str, params: Sequence[Any]) -> list[Any] | None:
        """The rows of a read run on the calling thread, or None when it could not run here at
        once (no table written yet, a lock, the step budget spent, any error)."""
        if self._conn is None or self._reader_broken or self._queued:
            return None  # the thread opens (and may create or widen) the table first
        if self._reader is None:
            try:
                self._reader = self._open_reader()
            except Exception:
                self._reader_broken = True  # say, no rights on the WAL's files: not tried again
                return None
            self._reader_thread = threading.get_ident()
        elif self._reader_thread != threading.get_ident():
            return None  # the connection stays with the thread that opened it
        try:
            self._steps_left = LOOP_READ_STEPS // _STEP_CHECK
            return self._reader.execute(sql, params).fetchall()
        except sqlite3.OperationalError:
            return None  # busy, interrupted: the thread waits for it instead
        except Exception:
            # Not a passing state: this connection is not tried again.
            self._reader_broken = True
            return None

    async def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """A read: on the loop's thread when it can be answered at once, else on the store's."""
        if self._closed:
            raise StoreUnavailable(f"order store {self.path} is closed")
        rows = self._read_here(sql, params)
        return rows if rows is not None else await self._run(sql, params)

    async def check(self) -> None:
        """Open the file once: a foreign ``orders`` table in it stops the start."""
        await self._run("SELECT 1")

    async def for_customer(self, customer_id: str, limit: int = 50) -> list[Order]:
        """The customer's orders, most recent first."""
        sql = f"{SELECT} WHERE customer_id = ? ORDER BY ordered_at DESC, order_id DESC LIMIT ?"
        return [from_row(r) for r in await self._read(sql, (customer_id, clamp_limit(limit)))]

    async def get(self, order_id: str) -> Order | None:
        """One order by id, or None."""
        rows = await self._read(f"{SELECT} WHERE order_id = ?", (order_id,))
        return from_row(rows[0]) if rows else None

    async def upsert(self, orders: Iterable[Order]) -> int:
        """Insert or update orders by ``order_id``; return how many were written."""
        rows = [to_row(o, as_text=True) for o in orders]
        await self._run(upsert_sql("?"), rows, many=True)
        return len(rows)

    async def count(self) -> int:
        """How many orders the store holds."""
        rows = await self._read(f"SELECT COUNT(*) FROM {TABLE}")
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
        self._reader_broken = True  # no read opens it again while the thread closes
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        await asyncio.get_running_loop().run_in_executor(self._thread, shut)
        self._thread.shutdown(wait=False)

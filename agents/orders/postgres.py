"""Orders in PostgreSQL: baton's own ``orders`` table, created if absent, read and written."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from baton_kafka.agents.orders.pg import Connection
from baton_kafka.agents.orders.source import clamp_limit
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

_SCHEMA = (
    f"""
    CREATE TABLE IF NOT EXISTS {TABLE} (
        order_id TEXT PRIMARY KEY,
        customer_id TEXT NOT NULL,
        product_name TEXT NOT NULL,
        status TEXT NOT NULL,
        amount DOUBLE PRECISION NOT NULL,
        currency TEXT NOT NULL,
        ordered_at TIMESTAMPTZ NOT NULL,
        delivered_at TIMESTAMPTZ,
        carrier TEXT,
        tracking_no TEXT,
        items TEXT,
        refunded DOUBLE PRECISION NOT NULL DEFAULT 0
    )
    """,
    f"CREATE INDEX IF NOT EXISTS orders_customer_idx ON {TABLE} (customer_id, ordered_at)",
)
# The columns of the table (or view) ``orders`` that unqualified statements would use.
_FOUND = """
SELECT a.attname FROM pg_attribute a
WHERE a.attrelid = to_regclass(%s) AND a.attnum > 0 AND NOT a.attisdropped
"""


class PostgresOrderStore:
    """Orders in PostgreSQL through one psycopg 3 async connection, reopened after failures.

    Its table is created when absent; an existing ``orders`` with other columns is refused
    (``SourceMisconfigured``), never written to.
    """

    def __init__(self, dsn: str, connect_timeout: float = 10.0) -> None:
        self.dsn = dsn
        self.connect_timeout = connect_timeout
        self._db = Connection(dsn, connect_timeout, self._prepare)

    async def _prepare(self, conn: Any) -> None:
        cur = await conn.execute(_FOUND, (TABLE,))
        found = [r[0] for r in await cur.fetchall()]
        lacking = check_columns(found, "order store") if found else []
        async with conn.transaction():
            # A table written before a later column gets it (lines nullable, refunded 0); rows stay.
            for statement in [*(ADD_LATER[c] for c in lacking), *_SCHEMA]:
                await conn.execute(statement)

    async def check(self) -> None:
        """Connect once: a foreign ``orders`` table stops the start; the connection is
        dropped after, as the check runs in an event loop of its own."""
        try:
            await self._db.run(_nothing)
        finally:
            await self._db.reset()

    async def for_customer(self, customer_id: str, limit: int = 50) -> list[Order]:
        """The customer's orders, most recent first."""
        sql = f"{SELECT} WHERE customer_id = %s ORDER BY ordered_at DESC, order_id DESC LIMIT %s"

        async def work(conn: Any) -> list[Order]:
            cur = await conn.execute(sql, (customer_id, clamp_limit(limit)))
            return [from_row(r) for r in await cur.fetchall()]

        return await self._db.run(work)

    async def get(self, order_id: str) -> Order | None:
        """One order by id, or None."""

        async def work(conn: Any) -> Order | None:
            cur = await conn.execute(f"{SELECT} WHERE order_id = %s", (order_id,))
            row = await cur.fetchone()
            return from_row(row) if row else None

        return await self._db.run(work)

    async def upsert(self, orders: Iterable[Order]) -> int:
        """Insert or update orders by ``order_id``; return how many were written."""
        rows = [to_row(o, as_text=False) for o in orders]
        sql = upsert_sql("%s")

        async def work(conn: Any) -> None:
            if rows:
                async with conn.transaction(), conn.cursor() as cur:
                    await cur.executemany(sql, rows)

        await self._db.run(work)
        return len(rows)

    async def count(self) -> int:
        """How many orders the store holds."""

        async def work(conn: Any) -> int:
            cur = await conn.execute(f"SELECT COUNT(*) FROM {TABLE}")
            row = await cur.fetchone()
            return int(row[0])

        return await self._db.run(work)

    async def close(self) -> None:
        """Close the connection; later calls raise ``StoreUnavailable``."""
        await self._db.close()


async def _nothing(conn: Any) -> None:
    return None

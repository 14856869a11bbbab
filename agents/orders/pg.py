"""One PostgreSQL connection for an order source: opened lazily, reopened after a failure."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from baton_kafka.agents.dsn import scrub
from baton_kafka.agents.orders.source import SourceMisconfigured, StoreUnavailable

T = TypeVar("T")


class Connection:
    """Runs work on one psycopg 3 async connection, one piece at a time.

    ``prepare`` runs on every new connection before any work (a table check, or the DDL of
    baton's own table); what it raises as ``SourceMisconfigured`` passes through unchanged.
    """

    def __init__(
        self,
        dsn: str,
        connect_timeout: float,
        prepare: Callable[[Any], Awaitable[None]],
    ) -> None:
        self.dsn = dsn
        self.connect_timeout = connect_timeout
        self._prepare = prepare
        self._conn: Any = None
        self._lock = asyncio.Lock()
        self._closed = False

    async def _connect(self) -> Any:
        import psycopg

        conn = await psycopg.AsyncConnection.connect(
            self.dsn, autocommit=True, connect_timeout=max(1, int(self.connect_timeout))
        )
        try:
            await self._prepare(conn)
        except BaseException:
            await conn.close()
            raise
        return conn

    def error(self, exc: Exception) -> str:
        """``exc``'s message with the DSN's password masked."""
        return f"order store: {scrub(str(exc), self.dsn)}"

    async def run(self, work: Callable[[Any], Awaitable[T]]) -> T:
        """``work(connection)``; a database failure is ``StoreUnavailable`` (the DSN masked)."""
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
            except SourceMisconfigured:
                raise
            except psycopg.Error as exc:
                raise StoreUnavailable(self.error(exc)) from None
            try:
                return await work(self._conn)
            except (psycopg.IntegrityError, psycopg.DataError):
                raise
            except psycopg.Error as exc:
                await self._drop()
                raise StoreUnavailable(self.error(exc)) from None

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            # The connection may already be broken: closing it is best effort.
            with contextlib.suppress(Exception):
                await conn.close()

    async def reset(self) -> None:
        """Drop the connection (the next work opens a new one); the store stays usable."""
        async with self._lock:
            await self._drop()

    async def close(self) -> None:
        """Close the connection; later work raises ``StoreUnavailable``."""
        async with self._lock:
            self._closed = True
            await self._drop()

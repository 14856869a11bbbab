"""Orders read from the shop's own PostgreSQL table, view or queries: read-only, no DDL ever."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from baton_kafka.agents.orders.mapping import FIELDS, REQUIRED, FieldMap, MapError, keys
from baton_kafka.agents.orders.pg import Connection
from baton_kafka.agents.orders.source import SourceMisconfigured, clamp_limit
from baton_kafka.schemas.records import Order

MAP_KEYS = ("table", "for_customer", "get", "fields", "status_values")
_PARAM = re.compile(r"%\((\w+)\)s")
_PARAMS = {"for_customer": {"customer_id", "limit"}, "get": {"order_id"}}
_NEEDED = {"for_customer": "customer_id", "get": "order_id"}
# The parameters the columns are probed with: NULL matches nothing and fits any type.
_NULLS = {"customer_id": None, "limit": 0, "order_id": None}


@dataclass(frozen=True)
class SqlMap:
    """A table or view (``table``), or two queries with named parameters, and the field map.

    ``for_customer`` takes ``%(customer_id)s`` and may take ``%(limit)s``; ``get`` takes
    ``%(order_id)s``. Their result columns are read like a table's.
    """

    table: str | None
    queries: Mapping[str, str]
    fields: FieldMap

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> SqlMap:
        """A map as the operator wrote it; raises ``MapError``."""
        keys(raw, MAP_KEYS, "a PostgreSQL order map")
        mapped = raw.get("fields")
        if isinstance(mapped, Mapping) and any(str(k).split(".")[0] == "items" for k in mapped):
            raise MapError("'fields': the SQL mode reads no order lines; leave 'items' out")
        table = raw.get("table")
        queries = {k: raw[k] for k in ("for_customer", "get") if raw.get(k) is not None}
        if table is not None and (not isinstance(table, str) or not table.strip()):
            raise MapError("'table' must be a table or view name such as shop.orders")
        if bool(table) == bool(queries):
            raise MapError("give either 'table' or the queries 'for_customer' and 'get'")
        if queries and set(queries) != set(_NEEDED):
            raise MapError("give both queries, 'for_customer' and 'get'")
        for name, sql in queries.items():
            if not isinstance(sql, str):
                raise MapError(f"{name!r} must be an SQL query")
            used = set(_PARAM.findall(sql))
            if _NEEDED[name] not in used:
                raise MapError(f"the {name!r} query must use %({_NEEDED[name]})s")
            if extra := sorted(used - _PARAMS[name]):
                raise MapError(f"the {name!r} query uses unknown parameters: {', '.join(extra)}")
            queries[name] = sql.strip().rstrip(";")
        return cls(table.strip() if table else None, queries, FieldMap.parse(raw))


def _table(name: str) -> Any:
    from psycopg import sql

    return sql.Identifier(*name.split("."))


class PostgresOrderSource:
    """The shop's orders in PostgreSQL, read through ``SqlMap``: never writes, never runs DDL.

    Each new connection first reads the result's columns (``LIMIT 0``): a mapped or required
    column that is not there is ``SourceMisconfigured``, one line naming it.
    """

    def __init__(self, dsn: str, mapping: SqlMap, connect_timeout: float = 10.0) -> None:
        self.dsn = dsn
        self.mapping = mapping
        self._columns: dict[str, str] = {}
        self._sql: dict[str, str] = {}
        self._db = Connection(dsn, connect_timeout, self._resolve)

    def _what(self) -> str:
        return f"table {self.mapping.table}" if self.mapping.table else "the mapped queries"

    async def _described(self, conn: Any, query: Any, params: Mapping[str, Any]) -> list[str]:
        from psycopg import sql

        probe = sql.SQL("SELECT * FROM ({}) AS baton_probe LIMIT 0").format(query)
        cur = await conn.execute(probe, params)
        return [d.name for d in cur.description or ()]

    async def _resolve(self, conn: Any) -> None:
        """Which result column holds each of our fields; refuses a missing one."""
        import psycopg
        from psycopg import sql

        m = self.mapping
        statements: list[tuple[str, Any, Mapping[str, Any]]] = (
            [(f"table {m.table}", sql.SQL("TABLE {}").format(_table(m.table)), {})]
            if m.table
            else [
                ("the 'for_customer' query", sql.SQL(m.queries["for_customer"]), _NULLS),
                ("the 'get' query", sql.SQL(m.queries["get"]), _NULLS),
            ]
        )
        columns: dict[str, str] = {}
        for what, statement, params in statements:
            try:
                found = await self._described(conn, statement, params)
            except psycopg.ProgrammingError as exc:
                # SQLSTATE class 42: no such table or column, a syntax error, no permission.
                raise SourceMisconfigured(
                    f"BATON_ORDERS_MAP: {what}: {exc.diag.message_primary or exc}"
                ) from None
            lower = {c.lower(): c for c in found}
            missing = []
            for ours in FIELDS:
                if ours == "items":
                    continue  # this mode reads one-item orders: their lines are left out
                if not m.fields.reads(ours):
                    continue
                theirs = m.fields.name(ours)
                hit = theirs if theirs in found else lower.get(theirs.lower())
                if hit is not None:
                    columns[ours] = hit
                elif ours in REQUIRED or m.fields.explicit(ours):
                    missing.append(f"{theirs} (for {ours})" if theirs != ours else theirs)
            if missing:
                raise SourceMisconfigured(
                    f"BATON_ORDERS_MAP: {what} has no column {', '.join(missing)}; "
                    f"it has {', '.join(found) or 'none'}"
                )
        self._columns = columns
        # Rendered once per connection: composing the statement per look-up cost a third of it.
        self._sql = {
            which: self._select(which).as_string(conn) if m.table else m.queries[which]
            for which in ("for_customer", "get")
        }

    async def check(self) -> None:
        """Connect once and read the columns; the connection is dropped after."""
        try:
            await self._db.run(_nothing)
        finally:
            await self._db.reset()

    def _select(self, where: str) -> Any:
        from psycopg import sql

        cols = self._columns
        picked = sql.SQL(", ").join(sql.Identifier(c) for c in cols.values())
        base = sql.SQL("SELECT {} FROM {}").format(picked, _table(self.mapping.table or ""))
        if where == "get":
            return base + sql.SQL(" WHERE {} = %(order_id)s").format(
                sql.Identifier(cols["order_id"])
            )
        return base + sql.SQL(
            " WHERE {} = %(customer_id)s ORDER BY {} DESC, {} DESC LIMIT %(limit)s"
        ).format(
            sql.Identifier(cols["customer_id"]),
            sql.Identifier(cols["ordered_at"]),
            sql.Identifier(cols["order_id"]),
        )

    async def _fetch(self, which: str, params: dict[str, Any]) -> list[Order]:
        import psycopg

        async def work(conn: Any) -> list[Order]:
            try:
                cur = await conn.execute(self._sql[which], params)
            except psycopg.DataError:
                # An id that cannot be of their column's type ("c-7" for an integer) has no
                # orders there.
                return []
            names = [d.name for d in cur.description or ()]
            rows = await cur.fetchall()
            where = f"the order source ({self._what()})"
            got = []
            for row in rows:
                values = dict(zip(names, row, strict=True))
                ours = {f: values.get(col) for f, col in self._columns.items()}
                order = self.mapping.fields.order(ours.get, where)
                if order is not None:
                    got.append(order)
            return got

        return await self._db.run(work)

    async def for_customer(self, customer_id: str, limit: int = 50) -> list[Order]:
        """The customer's orders, most recent first."""
        limit = clamp_limit(limit)
        orders = await self._fetch("for_customer", {"customer_id": customer_id, "limit": limit})
        orders.sort(key=lambda o: (o.ordered_at, o.order_id), reverse=True)
        return orders[:limit]

    async def get(self, order_id: str) -> Order | None:
        """One order by id, or None."""
        found = await self._fetch("get", {"order_id": order_id})
        return found[0] if found else None

    async def close(self) -> None:
        """Close the connection; later calls raise ``StoreUnavailable``."""
        await self._db.close()


async def _nothing(conn: Any) -> None:
    return None

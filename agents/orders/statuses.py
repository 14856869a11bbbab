"""A status table: several of the shop's fields read into one of baton's order statuses."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, get_args

from baton_kafka.agents.orders.paths import PathError, compiled, read, truthy
from baton_kafka.schemas.records import OrderStatus

STATUSES = get_args(OrderStatus)


class TableError(ValueError):
    """The status table cannot be used as written (one line, naming the row)."""


@dataclass(frozen=True)
class Row:
    """``status`` when ``when`` (a JMESPath condition on the order) holds; always without one."""

    status: str
    when: str | None = None

    def holds(self, order: Any) -> bool:
        """Whether this row applies to the order object ``order``."""
        return self.when is None or truthy(read(order, self.when))


@dataclass(frozen=True)
class StatusTable:
    """Rows read top to bottom; the first whose condition holds gives the order's status."""

    rows: tuple[Row, ...] = ()

    @classmethod
    def parse(cls, raw: Any, key: str = "status_table") -> StatusTable:
        """A list of ``{"when": condition, "status": status}``; raises ``TableError``."""
        if raw is None:
            return cls()
        if not isinstance(raw, list) or not raw:
            raise TableError(f"{key!r} must be a non-empty list of rows")
        rows = []
        for n, row in enumerate(raw, 1):
            where = f"{key} row {n}"
            if not isinstance(row, Mapping) or set(row) - {"when", "status"}:
                raise TableError(f'{where} must be {{"when": "<condition>", "status": "<status>"}}')
            status, when = row.get("status"), row.get("when")
            if status not in STATUSES:
                close = difflib.get_close_matches(str(status), STATUSES, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise TableError(
                    f"{where}: status {status!r} is not one of {', '.join(STATUSES)}{hint}"
                )
            if when is not None:
                if not isinstance(when, str) or not when.strip():
                    raise TableError(f"{where}: 'when' must be a non-empty condition")
                try:
                    compiled(when)
                except PathError as exc:
                    raise TableError(f"{where}: {exc}") from None
            rows.append(Row(str(status), when))
        return cls(tuple(rows))

    def __bool__(self) -> bool:
        return bool(self.rows)

    def status(self, order: Any) -> str | None:
        """The status of the order object ``order``; None when no row applies."""
        row = self.which(order)
        return None if row is None else self.rows[row].status

    def which(self, order: Any) -> int | None:
        """The index of the first row that applies to ``order``; None when none does."""
        return next((n for n, r in enumerate(self.rows) if r.holds(order)), None)

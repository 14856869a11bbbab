"""The map of a shop's REST API: where its orders are and how their JSON reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from baton_kafka.agents.orders import paths
from baton_kafka.agents.orders.mapping import FieldMap, MapError, keys
from baton_kafka.agents.orders.statuses import StatusTable, TableError

MAP_KEYS = (
    "customer_orders",
    "order",
    "list",
    "item",
    "limit_param",
    "fields",
    "status_values",
    "status_table",
)


@dataclass(frozen=True)
class HttpMap:
    """Where the API keeps a customer's orders and one order, and how its JSON reads.

    ``customer_orders`` and ``order`` are paths under the base URL with ``{customer_id}`` and
    ``{order_id}``; ``list`` and ``item`` are JMESPath expressions (``paths``) into the bodies
    to the list and the object ("" for the body itself); ``limit_param`` a query parameter the
    limit is sent as. ``status_table``, when given, reads the status from several fields.
    """

    customer_orders: str = "/customers/{customer_id}/orders"
    order: str = "/orders/{order_id}"
    list: str = ""
    item: str = ""
    limit_param: str | None = None
    fields: FieldMap = field(default_factory=lambda: FieldMap(expressions=True))
    status_table: StatusTable = field(default_factory=StatusTable)

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> HttpMap:
        """A map as the operator wrote it; raises ``MapError``."""
        keys(raw, MAP_KEYS, "an HTTP order map")
        text = {k: raw[k] for k in MAP_KEYS[:5] if k in raw}
        for k, v in text.items():
            if not isinstance(v, str):
                raise MapError(f"{k!r} must be a string")
        for k in ("list", "item"):
            try:
                paths.compiled(text.get(k, ""))
            except paths.PathError as exc:
                raise MapError(f"{k!r}: {exc}") from None
        try:
            table = StatusTable.parse(raw.get("status_table"))
        except TableError as exc:
            raise MapError(str(exc)) from None
        made = cls(**text, fields=FieldMap.parse(raw, expressions=True), status_table=table)
        if "{customer_id}" not in made.customer_orders:
            raise MapError("'customer_orders' must contain {customer_id}")
        if "{order_id}" not in made.order:
            raise MapError("'order' must contain {order_id}")
        return made

    def value(self, item: Any, ours: str) -> Any:
        """Our field ``ours`` read from their order object ``item`` (the status through the
        status table first, when there is one)."""
        if ours == "status" and self.status_table:
            found = self.status_table.status(item)
            if found is not None:
                return found
        return self.fields.value(item, ours)

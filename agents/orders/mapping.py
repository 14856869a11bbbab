"""The operator's map from an order system's fields to baton's ``Order`` (SQL or JSON)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from pydantic import ValidationError

from baton_kafka.agents.orders import paths
from baton_kafka.agents.orders.source import utc
from baton_kafka.schemas.lines import OrderLine
from baton_kafka.schemas.records import Order

log = logging.getLogger("baton.orders")

FIELDS = tuple(Order.model_fields)
LINE_FIELDS = tuple(OrderLine.model_fields)
# An order line's own fields are mapped as "items.<field>": their name inside each line.
LINE_KEYS = tuple(f"items.{f}" for f in LINE_FIELDS)
REQUIRED = tuple(n for n, f in Order.model_fields.items() if f.is_required())
# Fields held as text: an integer id or a numeric status code of the shop's is read as text.
_TEXT = {"order_id", "customer_id", "product_name", "status", "currency", "carrier", "tracking_no"}
# Money the shop already paid back is read only from a field the map names: their own field
# called "refunded" may be a yes/no flag or mean something else, and it lowers what is offered.
EXPLICIT_ONLY = frozenset({"refunded"})
# A product name made of an order's lines names at most this many of them, then counts the rest.
NAMED_LINES = 2


def dig(body: Any, path: str) -> Any:
    """The value at dotted ``path`` in ``body`` ("" is the body), or None."""
    for part in filter(None, path.split(".")):
        if not isinstance(body, Mapping):
            return None
        body = body.get(part)
    return body


def lines_name(names: list[str]) -> str | None:
    """A product name for an order without one, from its lines' names: the only one, or the
    first ones and how many more (``Kettle, Blender (+2)``); None without lines."""
    names = [n for n in names if n]
    if not names:
        return None
    shown = ", ".join(names[:NAMED_LINES])
    more = len(names) - NAMED_LINES
    return (f"{shown} (+{more})" if more > 0 else shown)[:500]


class MapError(ValueError):
    """The field map cannot be used as written (one line, naming the key)."""


def _text_map(raw: Any, key: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) and v for k, v in raw.items()
    ):
        raise MapError(f"{key!r} must be an object of non-empty strings")
    return dict(raw)


@dataclass(frozen=True)
class FieldMap:
    """Which of their fields (a column, or a dotted path into a JSON object) holds each of ours.

    A field not named is looked for under its own name; ``status_values`` renames their
    statuses (``{"SHIPPED": "shipped"}``), and a status it does not name is kept as it is.
    ``refunded`` is read only when named.
    ``items`` names their list of order lines and ``items.product_name``, ``items.quantity``,
    ... the fields inside each line. An order whose ``product_name`` reads nothing is named
    after its lines (``lines_name``).
    With ``expressions`` the names are JMESPath expressions (``paths``); without, dotted paths.
    """

    fields: Mapping[str, str] = field(default_factory=dict)
    status_values: Mapping[str, str] = field(default_factory=dict)
    expressions: bool = False

    @classmethod
    def parse(cls, raw: Mapping[str, Any], *, expressions: bool = False) -> FieldMap:
        """The ``fields`` and ``status_values`` keys of a map; raises ``MapError``."""
        fields = _text_map(raw.get("fields"), "fields")
        unknown = sorted(set(fields) - set(FIELDS) - set(LINE_KEYS))
        if unknown:
            raise MapError(
                f"'fields' names {', '.join(unknown)}, not fields of an order "
                f"({', '.join((*FIELDS, *LINE_KEYS))})"
            )
        if expressions:
            for ours, path in fields.items():
                try:
                    paths.compiled(path)
                except paths.PathError as exc:
                    raise MapError(f"'fields' {ours}: {exc}") from None
        return cls(fields, _text_map(raw.get("status_values"), "status_values"), expressions)

    def read(self, body: Any, path: str) -> Any:
        """The value at ``path`` (an expression or a dotted path) in ``body``, or None."""
        return paths.read(body, path) if self.expressions else dig(body, path)

    def value(self, body: Any, ours: str) -> Any:
        """Our field ``ours`` read from their object ``body``."""
        return self.read(body, self.name(ours))

    def name(self, ours: str) -> str:
        """Their name for our field ``ours``."""
        return self.fields.get(ours, ours)

    def explicit(self, ours: str) -> bool:
        """Whether the operator named a source for ``ours``."""
        return ours in self.fields

    def reads(self, ours: str) -> bool:
        """Whether ``ours`` is read: every field, but ``EXPLICIT_ONLY`` ones only when named."""
        return ours not in EXPLICIT_ONLY or self.explicit(ours)

    def _line(self, line: Mapping[str, Any]) -> dict[str, Any]:
        """One of their order lines with our field names (a field they lack is left out)."""
        found = {
            ours: self.read(line, self.fields.get(f"items.{ours}", ours)) for ours in LINE_FIELDS
        }
        return {k: v for k, v in found.items() if v is not None}

    def order(self, value_of: Callable[[str], Any], where: str) -> Order | None:
        """The order read through ``value_of(ours)``; None (logged) when it is not a valid one."""
        order, problems = self.read_order(value_of)
        if order is None:
            log.warning(
                "skipped order %s of %s, not valid: %s", value_of("order_id"), where, problems
            )
        return order

    def read_order(self, value_of: Callable[[str], Any]) -> tuple[Order | None, str]:
        """The order read through ``value_of(ours)``, or None and why it is not a valid one."""
        data: dict[str, Any] = {}
        for ours in FIELDS:
            if not self.reads(ours):
                continue
            value = value_of(ours)
            if value is None:
                continue
            if ours in _TEXT and not isinstance(value, str):
                value = str(value)
            elif isinstance(value, Decimal):
                value = float(value)
            elif isinstance(value, datetime):
                value = utc(value)
            if ours == "status":
                value = self.status_values.get(value, value)
            if ours == "items" and isinstance(value, list):
                value = [self._line(v) if isinstance(v, Mapping) else v for v in value]
            data[ours] = value
        if not data.get("product_name") and isinstance(data.get("items"), list):
            names = [i.get("product_name") for i in data["items"] if isinstance(i, Mapping)]
            named = lines_name([str(n) for n in names if n is not None])
            if named:
                data["product_name"] = named
        try:
            order = Order.model_validate(data)
        except ValidationError as exc:
            return None, "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'order'}: {e['msg']}" for e in exc.errors()
            )
        if order.ordered_at.tzinfo is None or (
            order.delivered_at is not None and order.delivered_at.tzinfo is None
        ):
            order = order.model_copy(
                update={
                    "ordered_at": utc(order.ordered_at),
                    "delivered_at": utc(order.delivered_at) if order.delivered_at else None,
                }
            )
        return order, ""


def keys(raw: Mapping[str, Any], allowed: tuple[str, ...], what: str) -> None:
    """Refuse a key ``what`` does not read: a typo would silently mean a default."""
    unknown = sorted(set(raw) - set(allowed))
    if unknown:
        raise MapError(
            f"{', '.join(map(repr, unknown))} is not a key of {what} (use {', '.join(allowed)})"
        )

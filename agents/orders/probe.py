"""What the HTTP order map makes of one order object, field by field (``baton check``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from baton_kafka.agents.orders.http_map import HttpMap
from baton_kafka.agents.orders.mapping import FIELDS, LINE_FIELDS, REQUIRED
from baton_kafka.schemas.lines import OrderLine
from baton_kafka.schemas.records import Order


@dataclass(frozen=True)
class Read:
    """One of our fields: the path it is read from, what baton sees, and a note when needed."""

    field: str
    path: str | None
    value: Any
    empty: bool = False
    note: str = ""


@dataclass(frozen=True)
class Seen:
    """One order object of the shop's read through the map: each field, and the order or why
    it is not a valid one."""

    order: Order | None
    problem: str
    reads: tuple[Read, ...]

    @property
    def unread(self) -> list[Read]:
        """The fields whose path read nothing."""
        return [r for r in self.reads if r.empty and r.path]


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, str | list | dict) and not value)


def _default(ours: str) -> Any:
    info = Order.model_fields[ours]
    return None if info.is_required() else info.default


def _note(ours: str, seen_value: Any) -> str:
    if ours in REQUIRED:
        if ours == "product_name" and seen_value:
            return "read nothing: named after its lines"
        return "read nothing, and baton needs it"
    default = _default(ours)
    return "read nothing" + (f" (baton's default {default!r})" if default not in (None, ()) else "")


def _unnamed(field: str, path: str, value: Any) -> Read:
    # A field the map does not name is looked for under its own name; finding nothing there
    # is the usual case for an optional one, not a path gone wrong.
    return Read(field, None, value, True, f"read nothing: the map names no path, {path!r} is empty")


def _lines(mapping: HttpMap, lines: list[Any]) -> list[Read]:
    if not lines or not isinstance(lines[0], dict):
        return []
    reads = []
    for ours in LINE_FIELDS:
        path = mapping.fields.fields.get(f"items.{ours}", ours)
        value = mapping.fields.read(lines[0], path)
        empty = _empty(value)
        required = OrderLine.model_fields[ours].is_required()
        if empty and not required and f"items.{ours}" not in mapping.fields.fields:
            reads.append(_unnamed(f"items[0].{ours}", path, value))
            continue
        note = ("read nothing, and baton needs it" if required else "read nothing") if empty else ""
        reads.append(Read(f"items[0].{ours}", path, value, empty, note))
    return reads


def seen(mapping: HttpMap, item: Any) -> Seen:
    """``item`` (one order object of the shop's API) as baton reads it through ``mapping``."""
    if not isinstance(item, dict):
        return Seen(None, "the entry is not a JSON object", ())
    order, problem = mapping.fields.read_order(lambda ours: mapping.value(item, ours))
    reads: list[Read] = []
    for ours in FIELDS:
        if not mapping.fields.reads(ours):
            reads.append(Read(ours, None, None, note="not read: the map names no path for it"))
            continue
        path = mapping.fields.name(ours)
        raw = mapping.fields.value(item, ours)
        if ours == "status" and mapping.status_table:
            row = mapping.status_table.which(item)
            if row is not None:
                path, raw = f"status_table row {row + 1}", mapping.status_table.rows[row].status
        value = getattr(order, ours) if order is not None else raw
        if ours == "items":
            lines = raw if isinstance(raw, list) else []
            one = "read nothing: a one-item order" if _empty(raw) else ""
            reads.append(Read(ours, path, f"{len(lines)} line(s)", _empty(raw), one))
            reads.extend(_lines(mapping, lines))
            continue
        empty = _empty(raw)
        if empty and ours == "product_name" and value and not mapping.fields.explicit(ours):
            # Their orders have no name of their own: being named after the lines is expected.
            reads.append(Read(ours, None, value, note="named after its lines"))
            continue
        if empty and ours not in REQUIRED and not mapping.fields.explicit(ours):
            reads.append(_unnamed(ours, path, value))
            continue
        reads.append(Read(ours, path, value, empty, _note(ours, value) if empty else ""))
    return Seen(order, problem, tuple(reads))

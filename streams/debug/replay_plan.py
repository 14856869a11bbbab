"""The pure parts of ``baton replay``: which recorded tickets to replay, and how replies differ."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from baton_kafka.schemas.records import Reply, Ticket
from baton_kafka.streams.observe.shown import shown

if TYPE_CHECKING:
    from baton_kafka.streams.kafka.client import Message

DIFF_FIELDS = ("status", "order_id", "solution", "reply")
Offsets = dict[int | None, int]


def parse_offsets(values: Sequence[str] | None) -> Offsets:
    """``N`` (every partition) or ``P:N`` (partition P), comma-separated or repeated.

    Raises ``ValueError`` with a readable reason.
    """
    out: Offsets = {}
    for value in values or ():
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            partition, sep, offset = part.rpartition(":")
            try:
                number = int(offset)
                key = int(partition) if sep else None
            except ValueError:
                raise ValueError(f"{part!r} is not N or PARTITION:N") from None
            if number < 0 or (key is not None and key < 0):
                raise ValueError(f"{part!r}: offsets and partitions are not negative")
            out[key] = number
    return out


def _bound(offsets: Offsets, partition: int) -> int | None:
    return offsets.get(partition, offsets.get(None))


@dataclass(frozen=True)
class Selection:
    """What to replay; every given criterion must hold (repeated values of one are OR'ed)."""

    from_offsets: Offsets = field(default_factory=dict)
    to_offsets: Offsets = field(default_factory=dict)
    since: Mapping[int, int | None] | None = None
    until: Mapping[int, int | None] | None = None
    sessions: frozenset[str] = frozenset()
    tickets: frozenset[str] = frozenset()
    dead_lettered: frozenset[str] | None = None
    # Customer -> when `baton forget` erased them: their tickets from before are not replayed.
    erased: Mapping[str, datetime] = field(default_factory=dict)

    def offset_ok(self, partition: int, offset: int) -> bool:
        """``from``/``to`` are inclusive; ``since``/``until`` are the first offsets at or after
        those times (None: no record that late, so nothing from ``since`` / no ``until`` bound).
        """
        low = _bound(self.from_offsets, partition)
        high = _bound(self.to_offsets, partition)
        if (low is not None and offset < low) or (high is not None and offset > high):
            return False
        if self.since is not None:
            first = self.since.get(partition)
            if first is None or offset < first:
                return False
        if self.until is not None:
            end = self.until.get(partition)
            if end is not None and offset >= end:
                return False
        return True

    def ticket_ok(self, ticket: Ticket) -> bool:
        return (
            (not self.sessions or ticket.session_id in self.sessions)
            and (not self.tickets or ticket.ticket_id in self.tickets)
            and (self.dead_lettered is None or ticket.ticket_id in self.dead_lettered)
        )


@dataclass
class Selected:
    """The tickets to replay, in replay order, and what was passed over."""

    tickets: list[Ticket] = field(default_factory=list)
    invalid: int = 0
    duplicates: int = 0
    erased: int = 0


def select(messages: Iterable[Message], selection: Selection) -> Selected:
    """Valid tickets of the tickets topic that ``selection`` picks, first occurrence of an id.

    Replay order is publication time, then partition and offset, so a session's tickets
    keep their order when the replay re-keys them by session.
    """
    out = Selected()
    seen: set[str] = set()
    ordered = sorted(messages, key=lambda m: (m.timestamp, m.partition, m.offset))
    for m in ordered:
        if not selection.offset_ok(m.partition, m.offset):
            continue
        try:
            ticket = Ticket.model_validate_json(m.value or b"")
        except ValidationError:
            out.invalid += 1
            continue
        if not selection.ticket_ok(ticket):
            continue
        erased = selection.erased.get(ticket.customer_id) if ticket.customer_id else None
        if erased is not None and datetime.fromtimestamp(m.timestamp / 1000, UTC) <= erased:
            out.erased += 1
            continue
        if ticket.ticket_id in seen:
            out.duplicates += 1
            continue
        seen.add(ticket.ticket_id)
        out.tickets.append(ticket)
    return out


def first_replies(messages: Iterable[Message]) -> dict[str, Reply]:
    """The first reply of every ticket in a replies topic (unreadable records and holding
    replies are skipped)."""
    out: dict[str, Reply] = {}
    for m in messages:
        try:
            reply = Reply.model_validate_json(m.value or b"")
        except ValidationError:
            continue
        if reply.status != "holding":  # a slow ticket's holding reply is not its reply
            out.setdefault(reply.ticket_id, reply)
    return out


def diff(ticket: Ticket, original: Reply | None, replayed: Reply | None) -> dict[str, Any]:
    """How the replayed reply differs: ``same``, ``changed``, ``new`` (no original) or
    ``failed`` (no replayed reply), with ``{field: {"before", "after"}}`` for changed fields.
    """
    entry: dict[str, Any] = {
        "ticket_id": ticket.ticket_id,
        "session_id": ticket.session_id,
        "changes": {},
    }
    if replayed is None:
        entry["result"] = "failed"
        return entry
    if original is None:
        entry["result"] = "new"
        entry["changes"] = {f: {"before": None, "after": getattr(replayed, f)} for f in DIFF_FIELDS}
        return entry
    for name in DIFF_FIELDS:
        before, after = getattr(original, name), getattr(replayed, name)
        if before != after:
            entry["changes"][name] = {"before": before, "after": after}
    entry["result"] = "changed" if entry["changes"] else "same"
    return entry


def _short(value: Any, limit: int = 60) -> str:
    if value is None:
        return "null"
    text = " ".join(str(value).split())
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


_MARK = {"same": "=", "changed": "~", "new": "+", "failed": "!"}


def diff_line(entry: Mapping[str, Any]) -> str:
    """One ticket's diff as one line."""
    result = entry["result"]
    who = f"{shown(entry['ticket_id'])} ({shown(entry['session_id'])})"
    head = f"{_MARK.get(result, '?')} {who} {result}"
    if result == "failed":
        return head + ": no reply in the replay namespace"
    if result == "new":
        return head + f": no original reply; now {entry['changes']['status']['after']}"
    parts = [
        f"{name} {_short(change['before'])} -> {_short(change['after'])}"
        for name, change in entry["changes"].items()
    ]
    return head + (": " + "; ".join(parts) if parts else "")


def summary(namespace: str, entries: Sequence[Mapping[str, Any]], **extra: Any) -> dict[str, Any]:
    """Counts by result plus the per-ticket entries: the ``--json`` document."""
    counts = {k: sum(1 for e in entries if e["result"] == k) for k in _MARK}
    return {
        "namespace": namespace,
        "replayed": len(entries),
        **counts,
        **extra,
        "tickets": list(entries),
    }

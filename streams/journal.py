"""The stage journal: the newest stage result of the ticket each session has in flight."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from schemas.codec import dumps, loads
from schemas.records import StageName

if TYPE_CHECKING:
    from streams.pipeline import State

TABLE = "journal"
PENDING_PREFIX = b"pending:"
ANSWERED = b"answered"
_ORDER: dict[StageName, int] = {"understand": 0, "lookup": 1, "strategy": 2}


@dataclass(frozen=True)
class Entry:
    """One journal entry: ``data`` is the stage's output record, or the reply's state."""

    ticket_id: str
    stage: StageName
    data: bytes

    @property
    def pending(self) -> bool:
        """A reply that may or may not have reached the replies topic."""
        return self.stage == "strategy" and self.data.startswith(PENDING_PREFIX)

    @property
    def finished(self) -> bool:
        """The ticket has its reply, sent or pending."""
        return self.stage == "strategy"

    def reached(self, stage: StageName) -> bool:
        """The ticket got to ``stage`` or beyond: the stage has run for it."""
        return _ORDER[self.stage] >= _ORDER[stage]


def encode(entry: Entry) -> bytes:
    """A JSON header line, then the data as is (orjson never writes a raw newline)."""
    return dumps({"ticket_id": entry.ticket_id, "stage": entry.stage}) + b"\n" + entry.data


def decode(raw: bytes) -> Entry:
    """The inverse of ``encode``."""
    header, _, data = raw.partition(b"\n")
    head = loads(header)
    return Entry(ticket_id=head["ticket_id"], stage=head["stage"], data=data)


class Journal:
    """One entry per session, overwritten stage by stage and by the session's next ticket.

    A session has one ticket in flight (the session gate), so its entry is all a redelivered
    record needs: the result to forward again, or that the ticket is answered. Keyed by
    session, the table is bounded by the live sessions instead of growing with every ticket;
    answered tickets older than the newest are known from the baton's ``answered`` list.
    """

    def __init__(self, state: State) -> None:
        self.state = state

    def get(self, session_id: str, ticket_id: str) -> Entry | None:
        """The session's entry if it belongs to ``ticket_id``."""
        raw = self.state.get(TABLE, session_id)
        if raw is None:
            return None
        entry = decode(raw)
        return entry if entry.ticket_id == ticket_id else None

    def record(self, session_id: str, ticket_id: str, stage: StageName, data: bytes) -> None:
        """Write the session's entry; its changelog record follows asynchronously."""
        self.state.put(TABLE, session_id, encode(Entry(ticket_id, stage, data)))

    async def record_durably(
        self, session_id: str, ticket_id: str, stage: StageName, data: bytes
    ) -> None:
        """Write the session's entry and wait until its changelog record is acknowledged."""
        await self.state.put_durably(TABLE, session_id, encode(Entry(ticket_id, stage, data)))

    def answered(self, session_id: str, ticket_id: str) -> None:
        """Record that the ticket's reply is on the replies topic."""
        self.record(session_id, ticket_id, "strategy", ANSWERED)

    def forget(self, session_id: str) -> None:
        """Remove the session's entry (the session expired)."""
        self.state.delete(TABLE, session_id, session_id)

"""The ledger: each session's actions and their states, one durable table row per session."""

from __future__ import annotations

from collections.abc import Callable

import orjson

from baton_kafka.schemas.action import FINAL, Action, LedgerEntry
from baton_kafka.streams.runtime.session.batons import SessionTable


def moves(old: LedgerEntry, new: LedgerEntry) -> bool:
    """Whether ``new`` may replace ``old``: not from a final state to an open one, and not
    from confirmed or failed to any other state."""
    if old.state in FINAL and new.state not in FINAL:
        return False
    return old.state not in ("confirmed", "failed") or new.state == old.state


class Ledger:
    """Entries by idempotency key inside the row of their session (key: session_id), so the
    row lives in the changelog partition of the session's actions and moves with them.
    Every write is durable (acknowledged by the changelog) before it returns."""

    def __init__(self, table: SessionTable) -> None:
        self.table = table

    def row(self, session_id: str) -> dict[str, LedgerEntry]:
        """The session's entries by idempotency key."""
        raw = self.table.get(session_id)
        if raw is None:
            return {}
        return {k: LedgerEntry.model_validate(v) for k, v in orjson.loads(raw).items()}

    def get(self, action: Action) -> LedgerEntry | None:
        return self.row(action.session_id).get(action.idempotency_key)

    async def save(self, entry: LedgerEntry) -> None:
        """Record ``entry`` in its session's row, durably; a final state is never moved back to
        an open one, nor a confirmed or failed one to another (a late answer, a stale report)."""
        row = self.row(entry.action.session_id)
        old = row.get(entry.idempotency_key)
        if old is not None and not moves(old, entry):
            return
        if old is not None and old.told and old.state == entry.state:
            entry = entry.model_copy(update={"told": True})  # told stays told
        row[entry.idempotency_key] = entry
        data = {k: e.model_dump(mode="json") for k, e in row.items()}
        await self.table.put_durably(entry.action.session_id, orjson.dumps(data))

    def open(self, mine: Callable[[str], bool] = lambda _: True) -> list[LedgerEntry]:
        """The entries not final of the sessions ``mine`` owns, oldest first."""
        found = [
            e
            for session, _ in self.table.items()
            if mine(session)
            for e in self.row(session).values()
            if e.state not in FINAL
        ]
        return sorted(found, key=lambda e: e.action.requested_at)

    def untold(self, mine: Callable[[str], bool] = lambda _: True) -> list[LedgerEntry]:
        """The final entries of the sessions ``mine`` owns whose customer was not told yet."""
        found = [
            e
            for session, _ in self.table.items()
            if mine(session)
            for e in self.row(session).values()
            if e.untold
        ]
        return sorted(found, key=lambda e: e.action.requested_at)

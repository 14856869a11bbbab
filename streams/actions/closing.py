"""A person's ``done`` or ``failed`` decision on an action waiting for them, in the ledger."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from baton_kafka.agents.people_refused import Refused
from baton_kafka.schemas.action import LedgerEntry
from baton_kafka.schemas.decision import Decision
from baton_kafka.schemas.records import utcnow
from baton_kafka.streams.actions.ledger import Ledger

NOTE_CHARS = 300


@dataclass
class Closer:
    """Closes an action a person was asked to carry out, once: the decision must name an
    action of its session's ledger that waits for a person (its hand-off packet written);
    the ledger holds the person's verdict durably before anyone is told."""

    ledger: Ledger
    # Tells the customer (runner.Runner.told), outside the session's gate: it enters it.
    tell: Callable[[LedgerEntry], Awaitable[LedgerEntry]]

    async def close(self, decision: Decision) -> LedgerEntry:
        """The entry ``decision`` closes, saved; ``Refused`` when it closes nothing. A copy of a
        decision that closed it already returns the entry as it is (applied once)."""
        key = decision.item or ""
        entry = self.ledger.row(decision.session_id).get(key)
        if entry is None:
            raise Refused(
                "decision_not_pending", f"the session's ledger has no action {key!r} to close"
            )
        if entry.closed_by == decision.decision_id:
            return entry  # read again after a crash: finish telling, change nothing
        if not entry.waiting:
            why = f"closed by decision {entry.closed_by}" if entry.closed_by else entry.state
            raise Refused(
                "decision_not_pending", f"action {key} is not waiting for a person ({why})"
            )
        done = decision.action == "done"
        said = f": {decision.text[:NOTE_CHARS]}" if decision.text.strip() else ""
        closed = entry.model_copy(
            update={
                "state": "confirmed" if done else "failed",
                "remote_id": decision.reference if done else entry.remote_id,
                "detail": f"{decision.action} by {decision.by or 'a person'}{said}",
                "closed_by": decision.decision_id,
                "told": False,
                "updated_at": utcnow(),
            }
        )
        await self.ledger.save(closed)
        return closed

    async def told(self, decision: Decision) -> None:
        """Tell the customer what the decision closed (at most once: the ledger records it)."""
        entry = self.ledger.row(decision.session_id).get(decision.item or "")
        if entry is not None and entry.closed_by == decision.decision_id:
            await self.tell(entry)

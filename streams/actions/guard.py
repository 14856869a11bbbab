"""Money bounded again on the executor's side: the decision that approved an action verified
once more by its signature, and the daily caps, before anything is sent."""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson
from pydantic import ValidationError

from baton_kafka.schemas.action import Action
from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.decision import AUTHORISING, Decision
from baton_kafka.streams.actions.caps import CENT, DailyCaps, Use, day_of, uses
from baton_kafka.streams.actions.ledger import Ledger
from baton_kafka.streams.runtime.records.placement import session_partition
from baton_kafka.streams.runtime.records.signing import HEADER, Signer


@dataclass
class Guard:
    """What an action must pass besides its session's offer and its order."""

    signer: Signer
    decisions_topic: str
    caps: DailyCaps = field(default_factory=DailyCaps)
    # Each session's partition, computed once (a session never changes partition), and its
    # ledger row as last read with what it takes from the caps.
    _partitions: dict[str, int] = field(default_factory=dict, repr=False)
    _read: dict[str, tuple[bytes, list[Use]]] = field(default_factory=dict, repr=False)

    def unsigned(self, action: Action, baton: Baton) -> str | None:
        """Why the decision that approved ``action`` does not verify again (its record kept in
        the baton, its signature under the signing keys, and what it approved), or None; none
        to check without a decision or without signing keys."""
        if action.decision_id is None or not self.signer.enabled:
            return None
        did = action.decision_id
        note = next((n for n in baton.people if n.decision_id == did), None)
        if note is None or not note.signed:
            return f"decision {did} left no signed record in the session"
        headers = [(HEADER, note.signature.encode())]
        value = note.signed.encode()
        problem = self.signer.problem(self.decisions_topic, action.session_id, value, headers)
        if problem is not None:
            return f"decision {did} does not verify: {problem}"
        try:
            decision = Decision.model_validate_json(value)
        except ValidationError:
            return f"decision {did}'s signed record is not a decision"
        if decision.decision_id != did or decision.session_id != action.session_id:
            return f"decision {did}'s signed record is another decision's"
        if decision.action not in AUTHORISING:
            return f"decision {did} is a {decision.action}, which authorises no action"
        return _beyond(decision, action)

    def over(self, action: Action, ledger: Ledger) -> str | None:
        """Why ``action`` is over a daily cap (counted from the ledger this worker holds)."""
        if not self.caps.set:
            return None
        day = day_of(action.requested_at)
        used: list[Use] = []
        for session, raw in ledger.table.items():
            kept = self._read.get(session)
            if kept is None or kept[0] != raw:
                # Only the fields the caps read; a row unchanged since is not read again.
                kept = (raw, uses([orjson.loads(raw)]))
                self._read[session] = kept
                self._partitions[session] = session_partition(session, self.caps.partitions)
            used += [u for u in kept[1] if u.day == day]
        mine = action.session_id
        if mine not in self._partitions:
            self._partitions[mine] = session_partition(mine, self.caps.partitions)
        return self.caps.over(action, used, self._partitions)


def _beyond(decision: Decision, action: Action) -> str | None:
    """Why ``action`` carries more than the signed decision approved, or None."""
    amount = action.amount or 0.0
    if decision.action == "approve":
        if decision.amount is not None and amount > decision.amount + CENT:
            return f"{amount:.2f} is more than decision {decision.decision_id} approved"
        return None
    if any(
        line.kind == action.kind and amount <= (line.amount or 0.0) + CENT
        for line in decision.offer
    ):
        return None
    return f"decision {decision.decision_id}'s answer promised no {action.kind} of {amount:.2f}"

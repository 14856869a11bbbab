"""The manual executor: every action handed to a person, who closes it with a decision."""

from __future__ import annotations

from baton_kafka.schemas.action import Action
from baton_kafka.streams.actions.executor import ForPerson, Outcome

NAME = "manual"


class ManualExecutor:
    """Sends nothing: each action becomes a hand-off packet (reason ``action_manual``) and
    waits in the ledger for a person's signed ``done`` or ``failed`` decision."""

    name = NAME

    async def execute(self, action: Action) -> Outcome:
        raise ForPerson(
            f"handed to a person: {action.kind} for order {action.order_id} under "
            f"{action.idempotency_key}; waiting for a done or failed decision"
        )

    async def lookup(self, action: Action, remote_id: str | None) -> Outcome | None:
        # A person's decision moves the ledger itself; an entry left sent (a crash between
        # saving it and handing it over) is handed over again, under the same packet id.
        return None

    async def check(self) -> None:
        """Nothing to probe: the hand-off queue is the broker's."""

    async def close(self) -> None:
        """Nothing to close."""

"""An executor of a shop's own: refunds above a threshold go to a person through the hand-off
queue, everything else through the shipped HTTP executor and its map.

    BATON_EXECUTOR=examples.executors.large_refunds_by_hand:make
    SHOP_EXECUTOR_MAP=examples/executors/shopify_refunds.json
"""

from __future__ import annotations

import os
from pathlib import Path

from baton_kafka.schemas.action import Action
from baton_kafka.streams.actions.executor import Executor, ForPerson, Outcome
from baton_kafka.streams.actions.http import HttpExecutor
from baton_kafka.streams.actions.http_map import ActionMap

ABOVE = 200.0


class LargeRefundsByHand:
    """Hands a refund above ``above`` to a person; asks ``system`` for the rest."""

    name = "large-refunds-by-hand"

    def __init__(self, system: Executor, above: float = ABOVE) -> None:
        self.system = system
        self.above = above

    def _by_hand(self, action: Action) -> bool:
        return action.kind == "refund" and (action.amount or 0.0) > self.above

    async def execute(self, action: Action) -> Outcome:
        if self._by_hand(action):
            # The ledger records it needs_person; the packet asks a person to close it.
            raise ForPerson(f"a refund above {self.above:.2f} is carried out by a person")
        return await self.system.execute(action)

    async def lookup(self, action: Action, remote_id: str | None) -> Outcome | None:
        return None if self._by_hand(action) else await self.system.lookup(action, remote_id)

    async def check(self) -> None:
        await self.system.check()

    async def close(self) -> None:
        await self.system.close()


def make() -> LargeRefundsByHand:
    """The factory ``BATON_EXECUTOR`` names: the HTTP executor of ``SHOP_EXECUTOR_MAP``."""
    return LargeRefundsByHand(HttpExecutor(ActionMap.read(Path(os.environ["SHOP_EXECUTOR_MAP"]))))

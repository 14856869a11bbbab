"""The expiry sweeps: idle batons and old customer-index entries go, a few at a time."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.records import utcnow
from baton_kafka.streams.runtime.session.batons import BatonStore
from baton_kafka.streams.settings import Settings

# A sweep yields to the event loop after this many batons or index entries: parsing thousands
# at once would hold every stage's records back for as long.
YIELD_EVERY = 50


def index_since(settings: Settings, now: datetime | None = None) -> datetime:
    """The oldest last-ticket time a session summary may have to stay in the customer index."""
    return (now or utcnow()) - timedelta(days=settings.index_retention_days)


@dataclass(frozen=True)
class IndexSweep:
    """What one sweep of the customer index removed."""

    sessions: int = 0
    customers: int = 0


async def expire_batons(
    batons: BatonStore,
    owned: Callable[[str], bool],
    cutoff: datetime,
    send_summary: Callable[[Baton], Awaitable[None]],
) -> int:
    """Tombstone the owned batons idle since before ``cutoff``, each after its summary is sent.

    Returns how many were tombstoned.
    """
    expired = 0
    for seen, baton in enumerate(batons.owned(owned), 1):
        if seen % YIELD_EVERY == 0:
            await asyncio.sleep(0)
        if baton.updated_at >= cutoff:
            continue
        # Read again: an erasure (or a ticket) may have come while the sweep paused, and the
        # summary of an erased baton would write the erased customer's index entry back.
        if batons.get(baton.session_id) != baton:
            continue
        await send_summary(baton)
        # The stages ran while this sweep waited: a session that took a ticket meanwhile stays.
        if batons.get(baton.session_id) != baton:
            continue
        batons.delete(baton.session_id)
        expired += 1
    return expired


async def sweep_index(batons: BatonStore, since: datetime) -> IndexSweep:
    """Drop the index's sessions older than ``since``; tombstone the customers left with none.

    Each customer's index is read and written without a pause, so an update the index agent
    applies between two of them is never overwritten.
    """
    sessions = customers = 0
    for seen, customer_id in enumerate(batons.customers(), 1):
        if seen % YIELD_EVERY == 0:
            await asyncio.sleep(0)
        dropped, tombstoned = batons.prune_index(customer_id, since)
        sessions += dropped
        customers += tombstoned
    return IndexSweep(sessions=sessions, customers=customers)

"""The customer index as the pipeline keeps it: session summaries sent, applied and swept."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from baton_kafka.agents import history, memory
from baton_kafka.agents.guards import UNTRUSTED
from baton_kafka.schemas.baton import Baton, IndexUpdate
from baton_kafka.schemas.codec import InvalidRecord, dumps, parse
from baton_kafka.streams.runtime.records import placement
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.signing import Headers, Signer
from baton_kafka.streams.runtime.records.sink import Sink
from baton_kafka.streams.runtime.session import erasure, expiry
from baton_kafka.streams.runtime.session.batons import BatonStore
from baton_kafka.streams.settings import Settings

log = logging.getLogger("baton.index")


@dataclass(frozen=True)
class CustomerIndex:
    """Sends a session's summary to the index topic; folds, erases and sweeps on its worker."""

    settings: Settings
    batons: BatonStore
    signer: Signer
    out: Sink
    topic: str

    async def send(self, baton: Baton, ticket_id: str | None, expired: bool = False) -> None:
        """Send the session's summary keyed by its own customer (none for a guest's session)."""
        if baton.customer_id:
            update = IndexUpdate(
                customer_id=baton.customer_id,
                summary=memory.summarize(baton, ticket_id, expired=expired),
                orders=history.orders_discussed(baton),
            )
            await self.out.send(self.topic, baton.customer_id, dumps(update))

    def apply(
        self, value: bytes | None, headers: Headers | None = None, source: Source | None = None
    ) -> None:
        """Fold one signed summary into the customer's index, or apply an erasure request.

        ``source`` (with its key) is where the record was read; the topic has one partition.
        """
        source = source or Source()

        def misplaced(customer_id: str) -> str | None:
            return placement.misplaced(source, customer_id, 1)

        if problem := self.signer.problem(self.topic, source.key, value, headers):
            log.error("ignoring an index update (%s): %s", UNTRUSTED, problem)
            return
        if erasure.requested(headers):
            erasure.erase_index(self.batons, value, misplaced)
            return
        try:
            update = parse(IndexUpdate, value)
        except InvalidRecord as exc:
            log.error("ignoring an invalid index update: %s", exc)
            return
        if problem := misplaced(update.customer_id):
            log.error("ignoring an index update (%s): %s", UNTRUSTED, problem)
            return
        since = expiry.index_since(self.settings)
        self.batons.merge_index(update.customer_id, update.summary, since, update.orders)

    async def sweep(self, now: datetime | None = None) -> expiry.IndexSweep:
        """Drop entries past the retention; only the index agent's worker calls it."""
        return await expiry.sweep_index(self.batons, expiry.index_since(self.settings, now))

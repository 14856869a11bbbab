"""An order source as one ticket's stages read it: the customer's orders read once per ticket."""

from __future__ import annotations

from typing import Any

from baton_kafka.agents.orders.source import OrderSource
from baton_kafka.agents.ticket_memo import TicketMemo
from baton_kafka.schemas.records import Order


class TicketOrders:
    """``source`` for the stages of the ticket ``memo`` is about: the ticket's customer's orders
    are read from it once (by the first stage that asks) and that answer is the later stages'
    too; anything else (``get``, another customer, a failed read) goes to ``source`` as asked.

    A snapshot is the source's own answer held in the worker's memory, never what a record
    carried: the strategy's trust check reads it as it would read the source. A source's own
    cache across tickets (the HTTP source's) is asked once per ticket, so one ticket sees one of
    its answers.
    """

    def __init__(self, source: OrderSource, memo: TicketMemo) -> None:
        self._source = source
        self._memo = memo

    async def for_customer(self, customer_id: str, limit: int = 50) -> list[Order]:
        """The customer's orders, most recent first: the ticket's snapshot when it is the
        ticket's customer (a copy of the list: the caller may change it)."""
        memo = self._memo
        if customer_id != memo.customer_id:
            return await self._source.for_customer(customer_id, limit)
        kept = memo.orders.get(limit)
        if kept is None:
            # A read that raises keeps nothing: the next stage asks the source again.
            kept = list(await self._source.for_customer(customer_id, limit))
            memo.orders[limit] = kept
        return list(kept)

    async def get(self, order_id: str) -> Order | None:
        """One order by id, or None: asked of the source."""
        return await self._source.get(order_id)

    async def close(self) -> None:
        """Close the source."""
        await self._source.close()

    def __getattr__(self, name: str) -> Any:
        # A shop's source may offer more than the protocol; its stages reach it as before.
        return getattr(self._source, name)

"""What an order source is: the read-only protocol the pipeline uses, and the writing one."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Protocol, runtime_checkable

from baton_kafka.schemas.records import Order


class StoreUnavailable(Exception):
    """The order source cannot be reached, opened or queried (the ticket is flagged, not lost)."""


class SourceMisconfigured(StoreUnavailable):
    """The order source is set up wrongly (a missing column, a foreign table): an operator's fix.

    At start it stops the worker with one line; met later it is treated as unavailable.
    """


@runtime_checkable
class OrderSource(Protocol):
    """Where the pipeline reads the customers' orders: all it ever asks of an order system.

    A source may also define ``async def check(self) -> None``: it runs once when a worker
    starts, in an event loop of its own (keep nothing from it), and ``SourceMisconfigured``
    raised there stops the worker with one line.
    """

    async def for_customer(self, customer_id: str, limit: int = 50) -> list[Order]:
        """The customer's orders, most recent first, at most ``limit``."""
        ...

    async def get(self, order_id: str) -> Order | None:
        """One order by id, or None."""
        ...

    async def close(self) -> None:
        """Release connections; later calls raise ``StoreUnavailable``."""
        ...


# The former name of ``OrderSource``, kept for code written against it.
OrderStore = OrderSource


@runtime_checkable
class OrderWriter(Protocol):
    """Where ``baton orders import``, the demo and the bench write orders."""

    async def upsert(self, orders: Iterable[Order]) -> int:
        """Insert or update orders by ``order_id``; return how many were written."""
        ...

    async def count(self) -> int:
        """How many orders the store holds."""
        ...

    async def close(self) -> None:
        """Release connections; later calls raise ``StoreUnavailable``."""
        ...


class WritableStore(OrderSource, OrderWriter, Protocol):
    """A store baton owns: read by the pipeline, written by the import."""


def utc(moment: datetime) -> datetime:
    """``moment`` in UTC; a naive time is taken as UTC, so stored times sort consistently."""
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def clamp_limit(limit: int) -> int:
    """A ``limit`` argument as a non-negative int."""
    return max(0, int(limit))

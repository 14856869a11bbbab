"""Where the pipeline's records go."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Protocol

from baton_kafka.schemas.framing import frame, unframe
from baton_kafka.streams.observe import tracing


class Sink(Protocol):
    """Where records go: ``send`` returns once the broker acknowledged the record.

    A sink may also offer ``enqueue(topic, key, value, headers)``: it returns once the record
    is queued behind the ones sent before it, with an awaitable that completes at the
    broker's acknowledgement (see :func:`enqueue`).
    """

    async def send(
        self,
        topic: str,
        key: str | None,
        value: bytes,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> None: ...

    async def contains(
        self, topic: str, key: str, since: datetime, match: Callable[[bytes], bool]
    ) -> bool:
        """Whether ``key``'s partition of ``topic`` holds a matching record from ``since`` on."""
        ...


async def enqueue(
    sink: Sink,
    topic: str,
    key: str | None,
    value: bytes,
    headers: list[tuple[str, bytes]] | None = None,
) -> Awaitable[None]:
    """Queue a record on ``sink`` in send order; await the result for the acknowledgement.

    A sink without ``enqueue`` sends the record in full first: its records are acknowledged
    one at a time, in order, as with ``send``.
    """
    queue = getattr(sink, "enqueue", None)
    if queue is not None:
        acked: Awaitable[None] = await queue(topic, key, value, headers)
        return acked
    await sink.send(topic, key, value, headers)
    return settled()


def settled() -> asyncio.Future[None]:
    """An acknowledgement already in: nothing is left to wait for."""
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    done.set_result(None)
    return done


class TracedSink:
    """A sink that adds the current trace context (``traceparent``) to every record's headers."""

    def __init__(self, inner: Sink) -> None:
        self.inner = inner

    async def send(
        self,
        topic: str,
        key: str | None,
        value: bytes,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> None:
        await self.inner.send(topic, key, value, tracing.inject(headers))

    async def enqueue(
        self,
        topic: str,
        key: str | None,
        value: bytes,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> Awaitable[None]:
        return await enqueue(self.inner, topic, key, value, tracing.inject(headers))

    async def contains(
        self, topic: str, key: str, since: datetime, match: Callable[[bytes], bool]
    ) -> bool:
        return await self.inner.contains(topic, key, since, match)


class FramingSink:
    """A sink that writes the values of registered topics in the Schema Registry's framed form
    (byte 0, the schema id, the JSON), and unframes them for ``contains``' match."""

    def __init__(self, inner: Sink, schema_ids: dict[str, int]) -> None:
        self.inner = inner
        self.schema_ids = dict(schema_ids)

    async def send(
        self,
        topic: str,
        key: str | None,
        value: bytes,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> None:
        await self.inner.send(topic, key, self._framed(topic, value), headers)

    async def enqueue(
        self,
        topic: str,
        key: str | None,
        value: bytes,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> Awaitable[None]:
        return await enqueue(self.inner, topic, key, self._framed(topic, value), headers)

    def _framed(self, topic: str, value: bytes) -> bytes:
        schema_id = self.schema_ids.get(topic)
        return value if schema_id is None else frame(schema_id, value)

    async def contains(
        self, topic: str, key: str, since: datetime, match: Callable[[bytes], bool]
    ) -> bool:
        return await self.inner.contains(topic, key, since, lambda v: match(unframe(v)[1]))

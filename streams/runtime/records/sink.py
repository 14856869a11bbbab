"""Where the pipeline's records go."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from baton_kafka.schemas.framing import frame, unframe
from baton_kafka.streams.observe import tracing


class Sink(Protocol):
    """Where records go: ``send`` returns once the broker acknowledged the record, with the
    record's offset when the broker said it (None: not known)."""

    async def send(
        self,
        topic: str,
        key: str | None,
        value: bytes,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> int | None: ...

    async def contains(
        self, topic: str, key: str, since: datetime, match: Callable[[bytes], bool]
    ) -> bool:
        """Whether ``key``'s partition of ``topic`` holds a matching record from ``since`` on."""
        ...


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
    ) -> int | None:
        return await self.inner.send(topic, key, value, tracing.inject(headers))

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
    ) -> int | None:
        schema_id = self.schema_ids.get(topic)
        framed = value if schema_id is None else frame(schema_id, value)
        return await self.inner.send(topic, key, framed, headers)

    async def contains(
        self, topic: str, key: str, since: datetime, match: Callable[[bytes], bool]
    ) -> bool:
        return await self.inner.contains(topic, key, since, lambda v: match(unframe(v)[1]))

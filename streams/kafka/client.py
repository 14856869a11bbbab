"""Plain aiokafka clients for the CLI: publish records and read topics."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from aiokafka import TopicPartition
from aiokafka.errors import KafkaError

from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.framing import unframe
from baton_kafka.schemas.records import Ticket
from baton_kafka.streams.kafka.connect import (
    BrokerUnreachable,
    new_consumer,
    new_producer,
    probe_broker,
    topic_partitions,
)
from baton_kafka.streams.kafka.topics import TICKETS, TopicNames, ensure_topics
from baton_kafka.streams.settings import Settings


@dataclass(frozen=True)
class Message:
    """One record read from a topic."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]

    @classmethod
    def of(cls, r: Any) -> Message:
        """The message of an aiokafka ``ConsumerRecord``; a value in the Schema Registry's
        framed form is its JSON (baton's readers take records in either form)."""
        return cls(
            topic=r.topic,
            partition=r.partition,
            offset=r.offset,
            timestamp=r.timestamp,
            key=r.key,
            value=unframe(r.value)[1] if r.value else r.value,
            headers=tuple((k, bytes(v)) for k, v in r.headers),
        )


async def publish(
    settings: Settings,
    topic: str,
    records: Iterable[tuple[str | None, bytes]],
    on_sent: object = None,
    headers_of: Callable[[str | None, bytes], list[tuple[str, bytes]]] | None = None,
) -> int:
    """Send ``(key, value)`` pairs in order and wait for every acknowledgement.

    ``headers_of(key, value)`` gives each record's headers (a signature depends on both).
    """
    await probe_broker(settings)
    if topic in TopicNames.of(settings).all() and not await topic_partitions(settings, [topic]):
        # A broker that does not create topics on first use would refuse the records.
        await ensure_topics(settings)
    producer = new_producer(settings, acks="all", linger_ms=5)
    await producer.start()
    sent = 0
    try:
        pending = []
        for key, value in records:
            fut = await producer.send(
                topic,
                value,
                key=key.encode() if key else None,
                headers=headers_of(key, value) if headers_of else None,
            )
            pending.append(fut)
            if len(pending) >= 500:
                await asyncio.gather(*pending)
                if callable(on_sent):
                    on_sent(len(pending))
                sent += len(pending)
                pending = []
        await asyncio.gather(*pending)
        if callable(on_sent):
            on_sent(len(pending))
        sent += len(pending)
    except KafkaError as exc:
        raise BrokerUnreachable(f"publishing to {topic} failed: {type(exc).__name__}") from None
    finally:
        await producer.stop()
    return sent


async def publish_tickets(settings: Settings, tickets: Iterable[Ticket]) -> int:
    """Publish ``tickets`` to this namespace's tickets topic, keyed by session, in order."""
    return await publish(
        settings, settings.topic(TICKETS), ((t.session_id, dumps(t)) for t in tickets)
    )


async def read(
    settings: Settings,
    topic: str,
    *,
    from_beginning: bool,
    idle_timeout: float | None,
    limit: int | None = None,
) -> AsyncIterator[Message]:
    """Yield a topic's records (all partitions), stopping after ``idle_timeout`` s of silence."""
    await probe_broker(settings)
    consumer = new_consumer(
        settings,
        group_id=None,
        enable_auto_commit=False,
        client_id=f"baton-tail-{uuid.uuid4().hex[:6]}",
    )
    await consumer.start()
    try:
        partitions = (await topic_partitions(settings, [topic])).get(topic)
        if not partitions:
            raise BrokerUnreachable(f"topic {topic!r} does not exist")
        tps = [TopicPartition(topic, p) for p in partitions]
        consumer.assign(tps)
        if from_beginning:
            await consumer.seek_to_beginning(*tps)
        else:
            await consumer.seek_to_end(*tps)
        count = 0
        while True:
            batch = await consumer.getmany(timeout_ms=int((idle_timeout or 3600) * 1000))
            if not batch:
                if idle_timeout is not None:
                    return
                continue
            for tp_records in batch.values():
                for r in tp_records:
                    yield Message.of(r)
                    count += 1
                    if limit is not None and count >= limit:
                        return
    finally:
        await consumer.stop()

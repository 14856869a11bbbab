"""Warm an Apache Kafka the bench started before measuring: a JVM compiles its hot paths only
after thousands of requests, and a production broker has run for weeks."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass

from baton_kafka.streams.bench.kafka import create_topics
from baton_kafka.streams.kafka.connect import new_consumer, new_producer
from baton_kafka.streams.settings import Settings

# Senders each waiting for their record's acknowledgement: many small requests, as workers
# make without linger, not a few large batches.
SENDERS = 16
# About a stage record's size.
PAYLOAD = b'{"warm":"' + b"x" * 1000 + b'"}'


@dataclass(frozen=True)
class Warmed:
    """What warming a broker did: for how long, and how many records it wrote and read."""

    seconds: float
    written: int
    read: int


async def warm_broker(settings: Settings, seconds: float, topic: str) -> Warmed:
    """Write small records to ``topic`` one acknowledgement at a time from ``SENDERS`` tasks
    for ``seconds`` while a consumer group reads them, committing after each fetch."""
    await create_topics(settings, [topic], settings.partitions, settings.replication_factor)
    acks = settings.producer_acks
    producer = new_producer(settings, acks=acks if acks == "all" else int(acks), linger_ms=0)
    consumer = new_consumer(
        settings,
        topic,
        group_id=f"{topic}.group",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await producer.start()
    await consumer.start()
    read = 0
    stop = asyncio.Event()

    async def reader() -> None:
        nonlocal read
        while not stop.is_set():
            batches = await consumer.getmany(timeout_ms=100)
            got = sum(len(records) for records in batches.values())
            if got:
                read += got
                await consumer.commit()

    async def sender(index: int, until: float) -> int:
        sent = 0
        key = str(index).encode()
        while time.monotonic() < until:
            await (await producer.send(topic, PAYLOAD, key=key))
            sent += 1
        return sent

    reading = asyncio.create_task(reader())
    try:
        until = time.monotonic() + seconds
        written = sum(await asyncio.gather(*(sender(i, until) for i in range(SENDERS))))
    finally:
        stop.set()
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reading
        await consumer.stop()
        await producer.stop()
    return Warmed(seconds, written, read)

"""Kafka side of a ``baton bench`` run: publish tickets, collect outputs, read topics back."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition

from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.records import Ticket
from baton_kafka.streams.bench.procs import BenchError, Child
from baton_kafka.streams.kafka.connect import (
    new_admin,
    new_consumer,
    new_producer,
    topic_partitions,
)
from baton_kafka.streams.settings import Settings


async def create_topics(
    settings: Settings, names: Iterable[str], partitions: int, replication: int = 1
) -> None:
    """Create topics (an existing one is left as it is)."""
    from aiokafka.admin import NewTopic

    admin = new_admin(settings)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(n, partitions, replication) for n in names])
    finally:
        await admin.close()


class Publisher:
    """Sends tickets keyed by session and remembers when each was sent (epoch seconds)."""

    def __init__(self, settings: Settings, topic: str) -> None:
        self.topic = topic
        self.sent_at: dict[str, float] = {}
        self._producer = new_producer(settings, acks="all", linger_ms=5)

    async def __aenter__(self) -> Publisher:
        await self._producer.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._producer.stop()

    async def send(self, tickets: Iterable[Ticket]) -> int:
        """Send ``tickets`` in order and wait for every acknowledgement."""
        pending = []
        for t in tickets:
            now = time.time()
            self.sent_at[t.ticket_id] = now
            pending.append(
                await self._producer.send(
                    self.topic,
                    dumps(t),
                    key=t.session_id.encode(),
                    timestamp_ms=int(now * 1000),
                )
            )
        await asyncio.gather(*pending)
        return len(pending)


@dataclass(frozen=True)
class Output:
    """One record read from an output topic."""

    session_id: str
    ticket_id: str
    partition: int
    produced_at: float
    received_at: float
    value: bytes


# None: a record that is no ticket's output (a holding reply), not collected.
Identify = Callable[[bytes], tuple[str, str] | None]


def reply_ids(value: bytes) -> tuple[str, str] | None:
    """Session and ticket of a ``Reply``; None for a holding reply (the ticket's own follows)."""
    data = orjson.loads(value)
    if data.get("status") == "holding":
        return None
    return str(data["session_id"]), str(data["ticket_id"])


def stage_record_ids(value: bytes) -> tuple[str, str]:
    """Session and ticket of a ``StageRecord``."""
    ticket = orjson.loads(value)["ticket"]
    return str(ticket["session_id"]), str(ticket["ticket_id"])


class Collector:
    """Reads an output topic from the start into ``outputs``, in each partition's order."""

    def __init__(self, settings: Settings, topic: str, identify: Identify) -> None:
        self.topic = topic
        self.identify = identify
        self.outputs: list[Output] = []
        self.seen: set[str] = set()
        self.on_new: Callable[[int], None] | None = None
        self._settings = settings
        self._task: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()

    async def start(self) -> None:
        consumer = new_consumer(
            self._settings,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        await consumer.start()
        partitions = (await topic_partitions(self._settings, [self.topic])).get(self.topic)
        if not partitions:
            await consumer.stop()
            raise BenchError(f"topic {self.topic} does not exist")
        tps = [TopicPartition(self.topic, p) for p in partitions]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        self._task = asyncio.create_task(self._run(consumer))

    async def _run(self, consumer: AIOKafkaConsumer) -> None:
        try:
            while True:
                batch = await consumer.getmany(timeout_ms=200, max_records=2000)
                now = time.time()
                new = 0
                for records in batch.values():
                    for r in records:
                        ids = self.identify(r.value or b"")
                        if ids is None:
                            continue
                        session, ticket = ids
                        produced = r.timestamp / 1000 if r.timestamp and r.timestamp > 0 else now
                        self.outputs.append(
                            Output(session, ticket, r.partition, produced, now, r.value or b"")
                        )
                        if ticket not in self.seen:
                            self.seen.add(ticket)
                            new += 1
                if new:
                    if self.on_new is not None:
                        self.on_new(new)
                    self._changed.set()
        finally:
            await consumer.stop()

    async def wait_for(
        self,
        ids: set[str],
        *,
        stall_s: float,
        children: Iterable[Child] = (),
        deadline_s: float | None = None,
    ) -> bool:
        """Wait until every id in ``ids`` arrived; False after ``stall_s`` without progress.

        Raises ``BenchError`` when a child process dies meanwhile.
        """
        watched = list(children)
        started = time.monotonic()
        last_progress, last_count = started, -1
        while not ids <= self.seen:
            count = len(ids & self.seen)
            now = time.monotonic()
            if count != last_count:
                last_progress, last_count = now, count
            if now - last_progress > stall_s:
                return False
            if deadline_s is not None and now - started > deadline_s:
                return False
            for child in watched:
                if not child.alive():
                    raise BenchError(
                        f"{child.name} exited (code {child.proc.poll()}):\n{child.tail()}"
                    )
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), 1.0)
        return True

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


async def read_topics(
    settings: Settings, topics: Iterable[str], idle_s: float = 2.0, first_s: float = 30.0
) -> list[tuple[str, bytes | None, bytes | None]]:
    """Every ``(topic, key, value)`` of some topics, stopping after ``idle_s`` s of silence.

    The first records may take up to ``first_s``: a broker holding many records answers the
    first fetch slowly, and stopping then would read an empty topic.
    """
    return [(t, k, v) for t, k, v, _ in await read_records(settings, topics, idle_s, first_s)]


async def read_records(
    settings: Settings, topics: Iterable[str], idle_s: float = 2.0, first_s: float = 30.0
) -> list[tuple[str, bytes | None, bytes | None, float]]:
    """``read_topics`` with each record's timestamp (epoch seconds, as the producer set it)."""
    consumer = new_consumer(settings, group_id=None, enable_auto_commit=False)
    await consumer.start()
    records: list[tuple[str, bytes | None, bytes | None, float]] = []
    try:
        wanted = list(topics)
        found = await topic_partitions(settings, wanted)
        tps = [TopicPartition(topic, p) for topic in wanted for p in found.get(topic, [])]
        if not tps:
            return records
        # An empty topic (a run without dead letters) is known empty at once: waiting out
        # ``first_s`` for its first record cost every workload half a minute. A partition's end
        # offset can be too low on the embedded broker but is never 0 once it holds a record.
        # Asked before the partitions are assigned, so no fetch starts from their end.
        ends = await consumer.end_offsets(tps)
        starts = await consumer.beginning_offsets(tps)
        if all(ends[tp] <= starts[tp] for tp in tps):
            return records
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        wait_s = max(idle_s, first_s)
        while True:
            batch = await consumer.getmany(timeout_ms=int(wait_s * 1000), max_records=5000)
            if not batch:
                return records
            wait_s = idle_s
            for tp, rs in batch.items():
                records.extend((tp.topic, r.key, r.value, r.timestamp / 1000) for r in rs)
    finally:
        await consumer.stop()


async def read_topic(
    settings: Settings, topic: str, idle_s: float = 2.0
) -> list[tuple[bytes | None, bytes | None]]:
    """Every ``(key, value)`` of a topic, stopping after ``idle_s`` seconds of silence."""
    return [(k, v) for _, k, v in await read_topics(settings, [topic], idle_s)]


async def topics_named(settings: Settings, prefixes: tuple[str, ...]) -> list[str]:
    """The broker's topics whose names start with one of ``prefixes``."""
    admin = new_admin(settings)
    await admin.start()
    try:
        return sorted(t for t in await admin.list_topics() if t.startswith(prefixes))
    finally:
        await admin.close()


async def replicas(settings: Settings, topics: Iterable[str]) -> dict[str, int]:
    """The fewest replicas any partition of each topic has (topics the broker does not know
    are left out)."""
    admin = new_admin(settings)
    await admin.start()
    try:
        described = await admin.describe_topics(list(topics))
    finally:
        await admin.close()
    return {
        str(t["topic"]): min(len(p["replicas"]) for p in t["partitions"])
        for t in described
        if t.get("partitions")
    }


async def latest_values(settings: Settings, topic: str, idle_s: float = 2.0) -> dict[str, bytes]:
    """The last value per key of a (changelog) topic; tombstones remove the key."""
    latest: dict[str, bytes] = {}
    for key, value in await read_topic(settings, topic, idle_s):
        name = (key or b"").decode("utf-8", "replace")
        if value is None:
            latest.pop(name, None)
        else:
            latest[name] = value
    return latest

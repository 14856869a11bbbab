"""Reading whole topics once, without a consumer group: what the debugging commands look at."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from baton_kafka.streams.kafka.client import Message
from baton_kafka.streams.kafka.connect import new_consumer, probe_broker, topic_partitions
from baton_kafka.streams.settings import Settings

IDLE_TIMEOUT_S = 5.0


def _consumer(settings: Settings) -> AIOKafkaConsumer:
    return new_consumer(
        settings,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        client_id=f"baton-debug-{uuid.uuid4().hex[:6]}",
    )


async def _partitions(settings: Settings, topics: Sequence[str]) -> list[TopicPartition]:
    found = await topic_partitions(settings, topics)
    return [TopicPartition(t, p) for t in topics for p in found.get(t, [])]


async def read_topics(
    settings: Settings,
    topics: Sequence[str],
    *,
    start: Mapping[TopicPartition, int] | None = None,
    idle_timeout: float = IDLE_TIMEOUT_S,
) -> dict[str, list[Message]]:
    """Every record of ``topics`` present now, per topic in partition/offset order.

    Stops when each partition reaches the high watermark of its fetch responses. The
    ListOffsets end offset is not used: the embedded broker under-reports it after
    multi-record batches. ``idle_timeout`` seconds without a record also end the read, in
    case a broker never reports a watermark. Missing topics read as empty.
    """
    await probe_broker(settings)
    consumer = _consumer(settings)
    await consumer.start()
    out: dict[str, list[Message]] = {t: [] for t in topics}
    try:
        tps = await _partitions(settings, topics)
        if not tps:
            return out
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        for tp, offset in (start or {}).items():
            if tp in tps:
                consumer.seek(tp, offset)
        targets: dict[TopicPartition, int] = {}
        last_record = time.monotonic()
        while True:
            batch = await consumer.getmany(timeout_ms=200, max_records=5000)
            for records in batch.values():
                for r in records:
                    out[r.topic].append(Message.of(r))
            if batch:
                last_record = time.monotonic()
            if await _caught_up(consumer, tps, targets):
                break
            if time.monotonic() - last_record > idle_timeout:
                break
    finally:
        await consumer.stop()
    for messages in out.values():
        messages.sort(key=lambda m: (m.partition, m.offset))
    return out


async def _caught_up(
    consumer: AIOKafkaConsumer, tps: Sequence[TopicPartition], targets: dict[TopicPartition, int]
) -> bool:
    """True once every partition reached the first watermark seen for it (a fixed snapshot)."""
    for tp in tps:
        if tp not in targets:
            high = consumer.highwater(tp)
            if high is None:
                return False
            targets[tp] = high
        if await consumer.position(tp) < targets[tp]:
            return False
    return True


def offset_or_none(answer: Any) -> int | None:
    """The offset of an ``offsets_for_times`` answer; None when no record is that late.

    The embedded broker answers offset 0 with timestamp -1 instead of None for a time
    after its last record.
    """
    if answer is None or answer.timestamp is None or answer.timestamp < 0:
        return None
    return int(answer.offset)


async def offsets_at(settings: Settings, topic: str, timestamp_ms: int) -> dict[int, int | None]:
    """Per partition of ``topic``: the first offset at or after ``timestamp_ms``, or None."""
    await probe_broker(settings)
    consumer = _consumer(settings)
    await consumer.start()
    try:
        tps = await _partitions(settings, [topic])
        if not tps:
            return {}
        answers = await consumer.offsets_for_times(dict.fromkeys(tps, timestamp_ms))
    finally:
        await consumer.stop()
    return {tp.partition: offset_or_none(answers.get(tp)) for tp in tps}

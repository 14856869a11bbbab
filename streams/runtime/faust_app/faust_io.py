"""The pipeline's sink and tables on Faust: the app's producer and changelog-backed tables."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import faust

from baton_kafka.streams.kafka.topics import BATON_TABLE, CUSTOMER_TABLE, TopicNames
from baton_kafka.streams.runtime.records.placement import session_partition
from baton_kafka.streams.settings import Settings

# How long a pending reply's check may read the replies partition before it is retried.
SCAN_PATIENCE_S = 30.0


def offset_of(metadata: Any) -> int | None:
    """The offset a send's metadata names (aiokafka's and Faust's have one; None otherwise)."""
    offset = getattr(metadata, "offset", None)
    return offset if isinstance(offset, int) else None


class FaustSink:
    """Sends through the app's producer and waits for the broker's acknowledgement."""

    def __init__(
        self, app: faust.App, names: TopicNames, partitions: int, settings: Settings | None = None
    ) -> None:
        self.app = app
        self.partitions = partitions
        # The broker and credentials of the scans in ``contains``.
        self.settings = settings
        self._started = False
        self.topics = {
            name: app.topic(
                name,
                partitions=1 if name == names.memory_index else partitions,
                key_type=bytes,
                value_type=bytes,
                key_serializer="raw",
                value_serializer="raw",
            )
            for name in names.all()
        }

    async def send(
        self,
        topic: str,
        key: str | None,
        value: bytes,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> int | None:
        # surrogateescape: a key read as bytes that are not UTF-8 goes out as it came in.
        raw_key = key.encode("utf-8", "surrogateescape") if key is not None else None
        channel = self.topics[topic]
        if self.app.in_transaction or not self._started:
            # A transaction's records go through its own producer, which the topic picks; the
            # first record starts the app's producer if it is not yet.
            fut = await channel.send(key=raw_key, value=value, headers=headers)
            self._started = True
            return offset_of(await fut)
        # The app's producer directly: the bytes are final and the broker's acknowledgement is
        # awaited right here, so the topic's per-record machinery (its producer look-up and
        # its callbacks) would only cost time.
        sent = await self.app.producer.send(topic, raw_key, value, None, None, headers or [])
        return offset_of(await sent)

    async def contains(
        self, topic: str, key: str, since: datetime, match: Callable[[bytes], bool]
    ) -> bool:
        """Scan ``key``'s partition of ``topic`` from ``since`` to its end for a match."""
        from aiokafka import TopicPartition

        from baton_kafka.streams.kafka.connect import new_consumer

        assert self.settings is not None, "FaustSink.contains needs the settings"
        tp = TopicPartition(topic, session_partition(key, self.partitions))
        # Under exactly_once a reply of an aborted transaction (a killed worker's) is in the log
        # but was never delivered: only committed replies count as sent.
        isolation = (
            "read_committed"
            if self.settings.processing_guarantee == "exactly_once"
            else "read_uncommitted"
        )
        consumer = new_consumer(
            self.settings, group_id=None, enable_auto_commit=False, isolation_level=isolation
        )
        await consumer.start()
        try:
            consumer.assign([tp])
            start = (await consumer.offsets_for_times({tp: int(since.timestamp() * 1000)}))[tp]
            # The embedded broker answers offset 0 / timestamp -1 for "nothing that late".
            if start is None or start.timestamp < 0:
                return False
            end = (await consumer.end_offsets([tp]))[tp]
            consumer.seek(tp, start.offset)
            return await scan(consumer, tp, end, match)
        finally:
            await consumer.stop()


class ScanIncomplete(RuntimeError):
    """A partition could not be read to its end in time: whether it holds a record is unknown."""


async def scan(
    consumer: Any,
    tp: Any,
    end: int,
    match: Callable[[bytes], bool],
    patience_s: float = SCAN_PATIENCE_S,
) -> bool:
    """Whether ``tp`` holds a matching record before ``end``; raises ``ScanIncomplete``.

    A fetch that comes back empty says nothing about the records still to read (a busy broker
    answers late), so only reaching ``end`` proves absence: answering "not there" early would
    send a reply the topic already has.
    """
    deadline = time.monotonic() + patience_s
    while await consumer.position(tp) < end:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ScanIncomplete(f"{tp.topic}[{tp.partition}] not read to offset {end} in time")
        batch = await consumer.getmany(tp, timeout_ms=int(min(left, 2.0) * 1000))
        if any(match(r.value) for r in batch.get(tp, []) if r.value is not None):
            return True
    return False


def _counting(name: str, on_read: Callable[[str], None] | None) -> Any:
    """Faust's ``on_changelog_event`` hook reporting each record read into table ``name``."""
    if on_read is None:
        return None

    async def read(event: Any) -> None:
        on_read(name)

    return read


class FaustSessionTable:
    """A session table: partitioned like the session-keyed topics, so reads are local."""

    def __init__(
        self,
        app: faust.App,
        name: str,
        partitions: int,
        on_read: Callable[[str], None] | None = None,
    ) -> None:
        self.partitions = partitions
        self.table = app.Table(
            name,
            default=None,
            partitions=partitions,
            key_type=str,
            value_type=bytes,
            on_changelog_event=_counting(name, on_read),
        )

    def get(self, key: str) -> bytes | None:
        # The table's store, as ``table.get`` reads it, without the table's per-read hooks
        # (a statistic) and the exception a missing key costs there.
        value = self.table.data.get(key)
        return bytes(value) if value is not None else None

    def put(self, key: str, value: bytes) -> None:
        self.table[key] = value

    async def put_durably(self, key: str, value: bytes) -> None:
        # The session's partition, as a stage's record of it is read from: a deadline's task
        # (an approval's) writes outside any stream's event.
        fut = self.table.send_changelog(session_partition(key, self.partitions), key, value)
        self.table.data[key] = value
        await fut

    def items(self) -> list[tuple[str, bytes]]:
        return [(k, bytes(v)) for k, v in list(self.table.data.items()) if v is not None]

    def delete(self, key: str) -> None:
        """Remove ``key`` and write its tombstone to the session's changelog partition."""
        self.table.data.pop(key, None)
        self.table.send_changelog(
            session_partition(key, self.partitions), key, None, value_serializer="raw"
        )


class FaustIndexTable:
    """An index table: global (every worker holds a replica), written only by the index agent."""

    def __init__(
        self, app: faust.App, name: str, on_read: Callable[[str], None] | None = None
    ) -> None:
        # Faust's documented setting for a GlobalTable shared by several workers.
        self.table = app.GlobalTable(
            name,
            default=None,
            partitions=1,
            recovery_buffer_size=1,
            use_partitioner=True,
            key_type=str,
            value_type=bytes,
            on_changelog_event=_counting(name, on_read),
        )

    def get(self, key: str) -> bytes | None:
        value = self.table.data.get(key)  # as in the session table
        return bytes(value) if value is not None else None

    def put(self, key: str, value: bytes) -> None:
        self.table[key] = value

    def keys(self) -> list[str]:
        return [k for k, v in list(self.table.data.items()) if v is not None]

    def delete(self, key: str) -> None:
        """Remove ``key``; the table's partitioner sends the tombstone (no current event needed)."""
        if key in self.table.data:
            del self.table[key]


class FaustState:
    """The pipeline's tables as changelog-backed Faust tables of raw JSON bytes.

    ``on_read`` hears of every changelog record applied to a table, by the table's name.
    """

    def __init__(
        self, app: faust.App, partitions: int, on_read: Callable[[str], None] | None = None
    ) -> None:
        self.batons = FaustSessionTable(app, BATON_TABLE, partitions, on_read)
        self.customers = FaustIndexTable(app, CUSTOMER_TABLE, on_read)

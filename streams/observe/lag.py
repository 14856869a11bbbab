"""Consumer lag from public client APIs: the group's committed offsets against high-water marks.

A ``LagSampler`` asks the cluster every few seconds (``BATON_LAG_INTERVAL``), through its own
admin client and consumer built by ``streams.kafka.connect`` (so the ``BATON_KAFKA_*``
security settings apply), and exports the last sample as ``baton_consumer_lag``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from aiokafka import TopicPartition
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from baton_kafka.streams.kafka.connect import new_admin, new_consumer
from baton_kafka.streams.settings import Settings

if TYPE_CHECKING:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.admin import AIOKafkaAdminClient

log = logging.getLogger("baton.metrics")

Highwater = Callable[[TopicPartition], int | None]


def partition_lag(committed: int | None, highwater: int, log_start: int = 0) -> int:
    """Records the group has still to commit on one partition; never negative.

    ``committed`` is the next offset to read, as Kafka stores it; without a commit the group
    starts at the earliest record (baton's consumers reset to earliest), ``log_start``.
    """
    start = committed if committed is not None and committed >= 0 else log_start
    return max(0, highwater - start)


class LagSampler(Collector):
    """Samples one consumer group's lag on the partitions ``partitions()`` names."""

    def __init__(
        self,
        settings: Settings,
        group_id: str,
        partitions: Callable[[], Iterable[Any]],
        highwater: Highwater | None = None,
    ) -> None:
        self.settings = settings
        self.group_id = group_id
        self.partitions = partitions
        # A fetch response's high-water mark, when the worker has one: on the embedded broker
        # ListOffsets reports a batch's first offset + 1, which is short of the real end.
        self.highwater = highwater
        self.lag: dict[TopicPartition, int] = {}
        self._admin: AIOKafkaAdminClient | None = None
        self._consumer: AIOKafkaConsumer | None = None
        self._failing = False
        self._assigned = False

    async def _clients(self) -> tuple[AIOKafkaAdminClient, AIOKafkaConsumer]:
        if self._admin is None or self._consumer is None:
            admin = new_admin(self.settings, client_id=f"{self.group_id}-lag")
            consumer = new_consumer(
                self.settings,
                group_id=None,
                enable_auto_commit=False,
                client_id=f"{self.group_id}-lag",
            )
            try:
                await admin.start()
                await consumer.start()
            except BaseException:
                await _quietly(admin.close())
                await _quietly(consumer.stop())
                raise
            self._admin, self._consumer = admin, consumer
        return self._admin, self._consumer

    async def sample(self) -> dict[TopicPartition, int]:
        """Ask the cluster once; the lag per partition, also kept for the next scrape."""
        tps = sorted({TopicPartition(tp.topic, tp.partition) for tp in self.partitions()})
        self._assigned = bool(tps)
        if not tps:
            self.lag = {}
            return {}
        admin, consumer = await self._clients()
        committed = await admin.list_consumer_group_offsets(self.group_id, partitions=tps)
        ends = await consumer.end_offsets(tps)
        uncommitted = [
            tp
            for tp in tps
            if tp not in committed or committed[tp].offset is None or committed[tp].offset < 0
        ]
        starts = await consumer.beginning_offsets(uncommitted) if uncommitted else {}
        lag: dict[TopicPartition, int] = {}
        for tp in tps:
            end = ends.get(tp)
            seen = self._seen(tp)
            if end is None and seen is None:
                continue
            high = max(h for h in (end, seen) if h is not None)
            mark = committed.get(tp)
            lag[tp] = partition_lag(mark.offset if mark else None, high, starts.get(tp, 0))
        self.lag = lag
        return lag

    def _seen(self, tp: TopicPartition) -> int | None:
        if self.highwater is None:
            return None
        try:
            return self.highwater(tp)
        except Exception:
            return None

    async def run(self, interval_s: float) -> None:
        """Sample every ``interval_s`` seconds until cancelled, then close the clients.

        Until partitions are assigned it looks every second at most (that costs no request),
        so the first figures follow the assignment closely.
        """
        try:
            while True:
                await self.tick()
                await asyncio.sleep(interval_s if self._assigned else min(interval_s, 1.0))
        finally:
            await self.close()

    async def tick(self) -> None:
        """One sample; after a failure nothing is exported and the next sample reconnects."""
        try:
            await self.sample()
        except Exception as exc:
            # Stale figures would hide a stuck group: export none until a sample works.
            self.lag = {}
            if not self._failing:
                log.warning("consumer lag not sampled: %s", type(exc).__name__)
            self._failing = True
            await self.close()
        else:
            self._failing = False

    async def close(self) -> None:
        admin, consumer = self._admin, self._consumer
        self._admin = self._consumer = None
        if admin is not None:
            await _quietly(admin.close())
        if consumer is not None:
            await _quietly(consumer.stop())

    def describe(self) -> Iterable[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        yield lag_metric(self.lag)


def lag_metric(lag: Mapping[TopicPartition, int]) -> GaugeMetricFamily:
    """``baton_consumer_lag{topic,partition}`` of one sample."""
    gauge = GaugeMetricFamily(
        "baton_consumer_lag",
        "Records of an assigned input partition the consumer group has not committed yet: "
        "high-water mark minus the group's committed offset, sampled every BATON_LAG_INTERVAL s.",
        labels=["topic", "partition"],
    )
    for tp, n in sorted(lag.items()):
        gauge.add_metric([tp.topic, str(tp.partition)], n)
    return gauge


async def _quietly(closing: Any) -> None:
    try:
        await closing
    except Exception:
        log.debug("closing a lag client failed", exc_info=True)

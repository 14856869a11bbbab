"""LagSampler: committed offsets against high-water marks, as the public clients answer them."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiokafka import TopicPartition
from aiokafka.structs import OffsetAndMetadata
from faust.types import TP
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from baton_kafka.streams.observe.lag import LagSampler, partition_lag
from baton_kafka.streams.observe.metrics import PrometheusObserver
from baton_kafka.streams.settings import load

T0, T1, T2 = (TopicPartition("ns.support.understood", p) for p in range(3))


@dataclass
class FakeAdmin:
    committed: dict[TopicPartition, int]
    asked: list[tuple[str, list[TopicPartition]]] = field(default_factory=list)
    closed: bool = False
    fail: bool = False

    async def list_consumer_group_offsets(
        self, group_id: str, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        if self.fail:
            raise ConnectionError("coordinator gone")
        self.asked.append((group_id, partitions))
        # As Kafka answers for partitions asked explicitly: -1 where the group never committed.
        return {tp: OffsetAndMetadata(self.committed.get(tp, -1), "") for tp in partitions}

    async def close(self) -> None:
        self.closed = True


@dataclass
class FakeConsumer:
    ends: dict[TopicPartition, int]
    starts: dict[TopicPartition, int] = field(default_factory=dict)
    stopped: bool = False

    async def end_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.ends[tp] for tp in tps if tp in self.ends}

    async def beginning_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.starts.get(tp, 0) for tp in tps}

    async def stop(self) -> None:
        self.stopped = True


def sampler(
    admin: FakeAdmin,
    consumer: FakeConsumer,
    assigned: list[Any],
    highwater: Any = None,
) -> LagSampler:
    s = LagSampler(load({}), "baton-ns", lambda: assigned, highwater=highwater)
    s._admin, s._consumer = admin, consumer  # type: ignore[assignment]
    return s


def exported(s: LagSampler) -> dict[tuple[str, str], float]:
    m = PrometheusObserver()
    m.watch_lag(s)
    text = generate_latest(m.registry).decode()
    return {
        (x.labels["topic"], x.labels["partition"]): x.value
        for family in text_string_to_metric_families(text)
        for x in family.samples
        if x.name == "baton_consumer_lag"
    }


def test_partition_lag() -> None:
    assert partition_lag(100, 120) == 20
    # No commit yet: the group starts at the earliest record still in the log.
    assert partition_lag(None, 120, log_start=30) == 90
    assert partition_lag(-1, 120) == 120
    # A committed offset past a stale high-water mark is no negative lag.
    assert partition_lag(125, 120) == 0


async def test_a_sample_is_high_water_minus_committed_per_assigned_partition() -> None:
    admin = FakeAdmin({T0: 100, T1: 40})
    consumer = FakeConsumer({T0: 120, T1: 40, T2: 15}, starts={T2: 5})
    # Faust hands over its own TP tuples; the sampler asks with aiokafka's.
    s = sampler(admin, consumer, [TP(T0.topic, 0), TP(T1.topic, 1), TP(T2.topic, 2)])
    assert await s.sample() == {T0: 20, T1: 0, T2: 10}
    assert admin.asked == [("baton-ns", [T0, T1, T2])]
    assert exported(s) == {
        (T0.topic, "0"): 20,
        (T1.topic, "1"): 0,
        (T2.topic, "2"): 10,
    }


async def test_the_fetch_high_water_mark_wins_when_list_offsets_is_short() -> None:
    # The embedded broker answers ListOffsets with the last batch's first offset + 1.
    consumer = FakeConsumer({T0: 101, T1: 50})
    seen = {T0: 130, T1: None}
    s = sampler(FakeAdmin({T0: 100, T1: 45}), consumer, [T0, T1], highwater=seen.get)
    assert await s.sample() == {T0: 30, T1: 5}


async def test_a_partition_no_client_knows_the_end_of_is_left_out() -> None:
    s = sampler(FakeAdmin({T0: 1}), FakeConsumer({}), [T0])
    assert await s.sample() == {}
    assert exported(s) == {}


async def test_no_assignment_no_request() -> None:
    admin = FakeAdmin({})
    s = sampler(admin, FakeConsumer({}), [])
    s.lag = {T0: 3}
    assert await s.sample() == {}
    assert admin.asked == [] and exported(s) == {}


async def test_a_failed_sample_exports_nothing_and_reconnects(
    caplog: pytest.LogCaptureFixture,
) -> None:
    admin, consumer = FakeAdmin({T0: 1}), FakeConsumer({T0: 4})
    s = sampler(admin, consumer, [T0])
    await s.tick()
    assert exported(s) == {(T0.topic, "0"): 3}

    admin.fail = True
    await s.tick()
    await s.tick()
    # No stale figure, the broken clients closed, one warning for the run of failures.
    assert exported(s) == {}
    assert admin.closed and consumer.stopped
    warnings = [r for r in caplog.records if "consumer lag not sampled" in r.getMessage()]
    assert len(warnings) == 1

    fresh = FakeAdmin({T0: 2})

    async def reconnect() -> tuple[Any, Any]:
        return fresh, FakeConsumer({T0: 4})

    s._clients = reconnect  # type: ignore[method-assign]
    await s.tick()
    assert exported(s) == {(T0.topic, "0"): 2}
    assert fresh.asked


async def test_run_samples_until_cancelled_then_closes() -> None:
    admin, consumer = FakeAdmin({T0: 1}), FakeConsumer({T0: 4})
    s = sampler(admin, consumer, [T0])
    task = asyncio.create_task(s.run(0.01))
    while not admin.asked:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert admin.closed and consumer.stopped
    assert s._admin is None and s._consumer is None


async def test_the_first_sample_follows_the_assignment_not_the_interval() -> None:
    admin, assigned = FakeAdmin({T0: 1}), []
    s = sampler(admin, FakeConsumer({T0: 4}), assigned)
    task = asyncio.create_task(s.run(3600))
    await asyncio.sleep(0.05)
    assert admin.asked == []  # nothing assigned: no request at all
    assigned.append(T0)

    async def first_sample() -> None:
        while not admin.asked:
            await asyncio.sleep(0.01)

    # Within about a second, not the hour of the interval.
    await asyncio.wait_for(first_sample(), timeout=3)
    assert s.lag == {T0: 3}
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

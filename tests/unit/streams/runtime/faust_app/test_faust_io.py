"""Reading a replies partition to its end before a pending reply is called unsent."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka import TopicPartition

from baton_kafka.streams.runtime.faust_app.faust_io import ScanIncomplete, scan

TP = TopicPartition("support.replies", 3)


@dataclass
class _Record:
    value: bytes


@dataclass
class SlowConsumer:
    """A consumer whose first fetches come back empty, as a busy broker's do."""

    values: list[bytes]
    empty_fetches: int
    stalled: bool = False
    fetches: list[int] = field(default_factory=list)
    offset: int = 0

    async def position(self, tp: TopicPartition) -> int:
        return self.offset

    async def getmany(self, tp: TopicPartition, timeout_ms: int) -> dict:
        self.fetches.append(timeout_ms)
        if self.stalled or len(self.fetches) <= self.empty_fetches:
            return {}
        batch, self.offset = self.values[self.offset :], len(self.values)
        return {tp: [_Record(v) for v in batch]}


async def test_empty_fetches_before_the_end_do_not_mean_absent() -> None:
    consumer = SlowConsumer([b"other", b"wanted"], empty_fetches=2)
    assert await scan(consumer, TP, end=2, match=lambda v: v == b"wanted")
    assert len(consumer.fetches) == 3


async def test_reaching_the_end_without_a_match_means_absent() -> None:
    consumer = SlowConsumer([b"other", b"another"], empty_fetches=1)
    assert not await scan(consumer, TP, end=2, match=lambda v: v == b"wanted")


async def test_a_partition_that_cannot_be_read_in_time_is_unknown_not_absent() -> None:
    consumer = SlowConsumer([b"wanted"], empty_fetches=0, stalled=True)
    with pytest.raises(ScanIncomplete, match=r"support.replies\[3\] not read to offset 1"):
        await scan(consumer, TP, end=1, match=lambda v: v == b"wanted", patience_s=0.05)
    assert all(ms <= 50 for ms in consumer.fetches)


def test_the_index_table_lists_its_keys_and_tombstones_a_key_outside_any_stream() -> None:
    import faust

    from baton_kafka.streams.runtime.faust_app.faust_io import FaustIndexTable

    app = faust.App("t-index", broker="kafka://127.0.0.1:1", store="memory://", autodiscover=False)
    table = FaustIndexTable(app, "customers")
    sent: list[tuple[int | None, str, bytes | None]] = []

    def send_changelog(partition: int | None, key: str, value: bytes | None, **_: Any) -> Any:
        sent.append((partition, key, value))
        return SimpleNamespace(message=SimpleNamespace(partition=0))

    table.table.send_changelog = send_changelog  # type: ignore[method-assign]
    table.put("C1", b"{}")
    table.put("C2", b"{}")
    assert table.keys() == ["C1", "C2"]
    table.delete("C1")
    table.delete("C9")  # not there: no tombstone
    assert table.keys() == ["C2"] and table.get("C1") is None
    # No partition given: the one-partition changelog's partitioner places the tombstone.
    assert sent[-1] == (None, "C1", None) and len(sent) == 3

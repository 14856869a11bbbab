"""The intake's forwarder: outputs queued in the order read, events acked once forwarded."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from baton_kafka.streams.runtime.forwarding import Forwarder


@dataclass
class FakeMessage:
    offset: int
    tp: str


@dataclass
class FakeEvent:
    message: FakeMessage


@dataclass
class FakeStream:
    """Events with Faust's ack interface, recording the acks."""

    items: list[FakeEvent]
    acked: list[tuple[str, int]] = field(default_factory=list)

    async def events(self) -> Any:
        for item in self.items:
            yield item

    async def ack(self, event: FakeEvent) -> bool:
        self.acked.append((event.message.tp, event.message.offset))
        return True


def stream_of(*partitions: tuple[str, int]) -> FakeStream:
    """``count`` events of each partition, interleaved as a fetch hands them out."""
    longest = max(count for _, count in partitions)
    return FakeStream(
        [
            FakeEvent(FakeMessage(offset, tp))
            for offset in range(longest)
            for tp, count in partitions
            if offset < count
        ]
    )


class Broker:
    """Acknowledgements the test completes (or fails) by hand, in any order."""

    def __init__(self) -> None:
        self.queued: list[tuple[str, int]] = []
        self.pending: dict[tuple[str, int], asyncio.Future[None]] = {}

    async def forward(self, event: FakeEvent) -> asyncio.Future[None]:
        place = (event.message.tp, event.message.offset)
        self.queued.append(place)
        self.pending[place] = asyncio.get_running_loop().create_future()
        return self.pending[place]


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_forwards_are_queued_in_read_order_and_acked_in_each_partitions_order() -> None:
    stream = stream_of(("a", 3), ("b", 2))
    broker = Broker()
    await Forwarder("intake", window=10).run(stream, broker.forward)
    # Every forward was queued before any acknowledgement came back, in the order read.
    assert broker.queued == [("a", 0), ("b", 0), ("a", 1), ("b", 1), ("a", 2)]
    assert stream.acked == []
    # Acknowledged out of order: each partition's acks still go out in offset order.
    for place in [("a", 2), ("b", 1), ("a", 0)]:
        broker.pending[place].set_result(None)
    await settle()
    assert stream.acked == [("a", 0)]
    broker.pending[("a", 1)].set_result(None)
    broker.pending[("b", 0)].set_result(None)
    await settle()
    assert sorted(stream.acked) == [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1)]
    assert [o for tp, o in stream.acked if tp == "a"] == [0, 1, 2]


async def test_a_failed_forward_holds_back_its_partitions_acks_only() -> None:
    stream = stream_of(("a", 3), ("b", 2))
    broker = Broker()
    await Forwarder("intake", window=10).run(stream, broker.forward)
    broker.pending[("a", 1)].set_exception(ConnectionError("broker gone"))
    for ack in broker.pending.values():
        if not ack.done():
            ack.set_result(None)
    await settle()
    # a:1 is read again after a restart, and so is everything after it in its partition.
    assert sorted(stream.acked) == [("a", 0), ("b", 0), ("b", 1)]


async def test_at_most_window_forwards_wait_for_their_acknowledgement() -> None:
    stream = stream_of(("a", 5))
    broker = Broker()
    running = asyncio.create_task(Forwarder("intake", window=2).run(stream, broker.forward))
    await settle()
    assert broker.queued == [("a", 0), ("a", 1)]
    broker.pending[("a", 0)].set_result(None)
    await settle()
    assert broker.queued == [("a", 0), ("a", 1), ("a", 2)]
    for offset in (1, 2):
        broker.pending[("a", offset)].set_result(None)
        await settle()
    for offset in (3, 4):
        await settle()
        broker.pending[("a", offset)].set_result(None)
    await running
    await settle()
    assert stream.acked == [("a", o) for o in range(5)]

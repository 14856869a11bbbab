"""The session scheduler and gate: concurrent across sessions, strictly ordered within one."""

from __future__ import annotations

import asyncio
import logging
import random
from dataclasses import dataclass, field
from typing import Any

import pytest

from baton_kafka.streams.runtime.session.scheduler import SessionGate, SessionScheduler


@dataclass
class FakeMessage:
    offset: int
    tp: str = "topic-0"


@dataclass
class FakeEvent:
    key: bytes
    value: int
    message: FakeMessage


@dataclass
class FakeStream:
    """A stream of events with Faust's ack interface, recording the ack order."""

    items: list[FakeEvent]
    acked: list[int] = field(default_factory=list)

    async def events(self) -> Any:
        for item in self.items:
            await asyncio.sleep(0)
            yield item

    async def ack(self, event: FakeEvent) -> bool:
        self.acked.append(event.message.offset)
        return True


def events(sessions: int, per_session: int) -> list[FakeEvent]:
    order = [(s, k) for k in range(per_session) for s in range(sessions)]
    return [
        FakeEvent(key=f"s{s}".encode(), value=k, message=FakeMessage(offset=i))
        for i, (s, k) in enumerate(order)
    ]


async def test_sessions_run_concurrently_and_each_stays_in_order() -> None:
    rng = random.Random(7)
    stream = FakeStream(events(sessions=20, per_session=5))
    seen: dict[bytes, list[int]] = {}
    running = 0
    peak = 0

    async def handle(event: FakeEvent) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(rng.uniform(0.001, 0.02))
        seen.setdefault(event.key, []).append(event.value)
        running -= 1

    scheduler = SessionScheduler("t", max_running=8, max_buffered=1000)
    await scheduler.run(stream, handle)
    while len(stream.acked) < len(stream.items):
        await asyncio.sleep(0.01)
    assert all(values == [0, 1, 2, 3, 4] for values in seen.values())
    assert len(seen) == 20
    assert 1 < peak <= 8
    assert sorted(stream.acked) == list(range(100))


async def test_a_hung_session_does_not_block_others_and_is_not_acked() -> None:
    release = asyncio.Event()
    stream = FakeStream(events(sessions=3, per_session=2))
    done: list[tuple[bytes, int]] = []

    async def handle(event: FakeEvent) -> None:
        if event.key == b"s0" and event.value == 0:
            await release.wait()
        done.append((event.key, event.value))

    scheduler = SessionScheduler("t", max_running=10, max_buffered=100)
    await scheduler.run(stream, handle)
    for _ in range(100):
        if len(done) == 4:
            break
        await asyncio.sleep(0.01)
    assert sorted(done) == [(b"s1", 0), (b"s1", 1), (b"s2", 0), (b"s2", 1)]
    hung_offsets = {e.message.offset for e in stream.items if e.key == b"s0"}
    assert not hung_offsets & set(stream.acked)
    release.set()
    for _ in range(100):
        if len(done) == 6:
            break
        await asyncio.sleep(0.01)
    assert [d for d in done if d[0] == b"s0"] == [(b"s0", 0), (b"s0", 1)]
    assert sorted(stream.acked) == list(range(6))


async def test_a_failing_handler_leaves_its_record_unacked() -> None:
    stream = FakeStream(events(sessions=2, per_session=1))

    async def handle(event: FakeEvent) -> None:
        if event.key == b"s0":
            raise RuntimeError("boom")

    scheduler = SessionScheduler("t", max_running=4, max_buffered=10)
    await scheduler.run(stream, handle)
    await asyncio.sleep(0.05)
    # Nor is anything after it in its partition acked: the commit must not pass it.
    assert stream.acked == []


async def test_gate_holds_the_next_ticket_until_the_previous_reply() -> None:
    gate = SessionGate(timeout_s=5)
    order: list[str] = []
    await gate.enter("s", "t1", lambda: None)

    async def second() -> None:
        await gate.enter("s", "t2", lambda: None)
        order.append("t2 entered")

    task = asyncio.create_task(second())
    await asyncio.sleep(0.05)
    order.append("t1 replied")
    gate.leave("s", "t1")
    await task
    assert order == ["t1 replied", "t2 entered"]
    await gate.enter("other", "x", lambda: None)
    assert len(gate) == 2


async def test_a_copy_of_the_holding_ticket_does_not_strand_the_waiting_ones() -> None:
    gate = SessionGate(timeout_s=5)
    await gate.enter("s", "t1", lambda: None)
    waiting = asyncio.create_task(gate.enter("s", "t2", lambda: None))
    await asyncio.sleep(0.05)
    await gate.enter("s", "t1", lambda: None)  # a redelivered copy of t1
    gate.leave("s", "t1")
    await asyncio.wait_for(waiting, 1)


async def test_gate_waits_for_a_ticket_the_baton_reports_unfinished(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "baton.scheduler")
    gate = SessionGate(timeout_s=5)
    pending: list[str | None] = ["t1"]
    entered = asyncio.Event()

    async def enter() -> None:
        await gate.enter("s", "t2", lambda: pending[0])
        entered.set()

    task = asyncio.create_task(enter())
    await asyncio.sleep(0.3)
    assert not entered.is_set()
    pending[0] = None
    await asyncio.wait_for(task, 2)
    assert entered.is_set()
    # Said once however long it waited, naming what it waited for.
    said = [r.getMessage() for r in caplog.records if "waits for" in r.getMessage()]
    assert said == [
        "session s: ticket t2 waits for t1, which its baton shows started and not answered"
    ]


async def test_gate_gives_up_after_its_timeout() -> None:
    gate = SessionGate(timeout_s=0.3)
    await gate.enter("s", "t1", lambda: None)
    await asyncio.wait_for(gate.enter("s", "t2", lambda: None), 2)


async def test_a_key_beyond_its_queue_cap_overflows_at_once_and_other_keys_go_on() -> None:
    flood = [FakeEvent(b"s0", k, FakeMessage(offset=k)) for k in range(10)]
    other = [FakeEvent(b"s1", k, FakeMessage(offset=10 + k)) for k in range(2)]
    stream = FakeStream(flood + other)
    release = asyncio.Event()
    handled: list[tuple[bytes, int]] = []
    overflowed: list[int] = []

    async def handle(event: FakeEvent) -> None:
        if event.key == b"s0":
            await release.wait()
        handled.append((event.key, event.value))

    async def overflow(event: FakeEvent) -> None:
        overflowed.append(event.value)

    # Room for 5 records in all: without the cap, s0 would take it and s1 would never be read.
    scheduler = SessionScheduler("t", max_running=4, max_buffered=5, max_queued_per_key=3)
    await asyncio.wait_for(scheduler.run(stream, handle, overflow), 1)
    for _ in range(100):
        if len(handled) == 2:
            break
        await asyncio.sleep(0.01)
    assert handled == [(b"s1", 0), (b"s1", 1)]
    assert overflowed == list(range(3, 10)) and scheduler.queued(b"s0") == 3
    assert stream.acked == []  # s0's first record holds the partition's acks back
    release.set()
    for _ in range(100):
        if len(stream.acked) == 12:
            break
        await asyncio.sleep(0.01)
    assert [v for k, v in handled if k == b"s0"] == [0, 1, 2]
    assert stream.acked == list(range(12)) and scheduler.queued(b"s0") == 0


async def test_an_overflowed_record_is_acked_only_once_its_handler_returned() -> None:
    stream = FakeStream(events(sessions=1, per_session=2))
    handled, dead_lettered = asyncio.Event(), asyncio.Event()

    async def handle(event: FakeEvent) -> None:
        await handled.wait()

    async def overflow(event: FakeEvent) -> None:
        await dead_lettered.wait()

    scheduler = SessionScheduler("t", max_running=4, max_buffered=10, max_queued_per_key=1)
    await scheduler.run(stream, handle, overflow)
    handled.set()
    await asyncio.sleep(0.05)
    assert stream.acked == [0]
    dead_lettered.set()
    await asyncio.sleep(0.05)
    assert stream.acked == [0, 1]


async def test_a_queue_cap_needs_an_overflow_handler() -> None:
    scheduler = SessionScheduler("t", max_running=1, max_buffered=1, max_queued_per_key=1)

    async def handle(event: FakeEvent) -> None:
        return None

    with pytest.raises(ValueError, match="overflow handler"):
        await scheduler.run(FakeStream([]), handle)


async def test_a_refused_record_takes_no_place_in_its_keys_queue() -> None:
    # s0's first record is in flight; the intruder's records of s0 (odd values) are refused.
    release = asyncio.Event()
    items = [FakeEvent(key=b"s0", value=v, message=FakeMessage(offset=v)) for v in range(8)]
    stream = FakeStream(items)
    handled: list[int] = []
    overflowed: list[int] = []

    async def handle(event: FakeEvent) -> None:
        if event.value == 0:
            await release.wait()
        handled.append(event.value)

    async def overflow(event: FakeEvent) -> None:
        overflowed.append(event.value)

    scheduler = SessionScheduler("t", max_running=8, max_buffered=100, max_queued_per_key=2)
    run = asyncio.create_task(
        scheduler.run(stream, handle, overflow, bypass=lambda e: e.value % 2 == 1)
    )
    await asyncio.sleep(0.05)
    # The refused ones ran at once, beside the record in flight, and were never counted.
    assert handled == [1, 3, 5, 7] and scheduler.queued(b"s0") == 2
    # The owner's later records: one queued behind the first, the rest past the cap of 2.
    assert overflowed == [4, 6]
    release.set()
    await run
    while len(stream.acked) < len(items):
        await asyncio.sleep(0.01)
    assert handled == [1, 3, 5, 7, 0, 2] and sorted(stream.acked) == list(range(8))


async def test_records_run_in_sequence_by_the_key_read_from_them() -> None:
    """``key_of`` decides which records wait for each other, whatever the records' own keys:
    records sharing a read key never overlap and keep their order; others run side by side."""
    rng = random.Random(11)
    # Every record has its own key; the value's session (value // 10) is what orders them.
    items = [
        FakeEvent(key=f"r{i}".encode(), value=10 * s + k, message=FakeMessage(offset=i))
        for i, (s, k) in enumerate((s, k) for k in range(4) for s in range(6))
    ]
    stream = FakeStream(items)
    seen: dict[int, list[int]] = {}
    running: dict[int, int] = {}
    overlapped = []
    peak = 0

    async def handle(event: FakeEvent) -> None:
        nonlocal peak
        session = event.value // 10
        running[session] = running.get(session, 0) + 1
        overlapped.append(running[session] > 1)
        peak = max(peak, sum(running.values()))
        await asyncio.sleep(rng.uniform(0.001, 0.01))
        seen.setdefault(session, []).append(event.value % 10)
        running[session] -= 1

    scheduler = SessionScheduler("t", max_running=8, max_buffered=1000)
    await scheduler.run(stream, handle, key_of=lambda e: str(e.value // 10).encode())
    while len(stream.acked) < len(items):
        await asyncio.sleep(0.01)
    assert seen == {s: [0, 1, 2, 3] for s in range(6)}
    assert not any(overlapped)
    assert peak > 1
    assert stream.acked == list(range(len(items)))

"""Recovery paths: what a worker does with the state and the offsets a crash left behind."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from faust.types import TP

from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.agents.rules.offline import OfflineLLM
from baton_kafka.schemas import Baton, Reply, Ticket, dumps
from baton_kafka.streams.observe.observer import CountingObserver
from baton_kafka.streams.runtime.faust_app.app import create_app
from baton_kafka.streams.runtime.pipeline import Pipeline
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.session.scheduler import SessionGate, SessionScheduler
from baton_kafka.streams.settings import Settings
from baton_kafka.streams.testing import MemorySink, MemoryState, MemoryTable
from tests.fixtures import data


def _pipeline(store: SQLiteOrderStore, state: MemoryState) -> Pipeline:
    # A short turn timeout: a session held by mistake shows up as a timeout, not a hang.
    return Pipeline(
        settings=Settings(namespace="u"),
        llm=OfflineLLM(),
        store=store,
        sink=MemorySink(),
        state=state,
        gate=SessionGate(timeout_s=5),
        observer=CountingObserver(),
    )


@pytest.fixture
def pipeline(store: SQLiteOrderStore) -> Pipeline:
    return _pipeline(store, MemoryState())


def _sent(p: Pipeline) -> MemorySink:
    assert isinstance(p.sink, MemorySink)
    return p.sink


def _state(p: Pipeline) -> MemoryState:
    assert isinstance(p.state, MemoryState)
    return p.state


async def _stage(p: Pipeline, stage: str, topic: str) -> None:
    _, value = _sent(p).sent[topic].pop(0)
    await p.run_stage(stage, value, Source(topic, 0, 0))  # type: ignore[arg-type]


def _baton(p: Pipeline) -> Baton:
    baton = p.batons.get("S1")
    assert baton is not None
    return baton


def _replies(p: Pipeline) -> list[Reply]:
    return [Reply.model_validate_json(v) for _, v in _sent(p).sent[p.topics.replies]]


async def test_a_context_rebuilt_from_a_snapshot_does_not_hold_the_session(
    pipeline: Pipeline,
) -> None:
    p, p_topics = pipeline, pipeline.topics
    first = data.ticket("t1", "My kettle is leaking, I want a refund.")
    second = data.ticket("t2", "Can I send it back for repair instead?")
    await p.intake(dumps(first), Source())
    for stage, topic in (
        ("understand", p_topics.sessions),
        ("lookup", p_topics.understood),
        ("strategy", p_topics.matched),
    ):
        await _stage(p, stage, topic)
    after_first = _state(p).batons.data["S1"]
    await p.intake(dumps(second), Source())
    await _stage(p, "understand", p_topics.sessions)
    # The crash lost the baton's latest write: look-up rebuilds it from the record's snapshot.
    _state(p).batons.data["S1"] = after_first
    await _stage(p, "lookup", p_topics.understood)
    await _stage(p, "strategy", p_topics.matched)
    assert [r.ticket_id for r in _replies(p)] == ["t1", "t2"]
    third = data.ticket("t3", "How long will that take?")
    await p.intake(dumps(third), Source())
    await asyncio.wait_for(_stage(p, "understand", p_topics.sessions), timeout=3)
    assert _sent(p).sent[p_topics.understood], "the third ticket went on without waiting"


async def test_a_redelivered_copy_is_settled_from_the_baton(pipeline: Pipeline) -> None:
    p, topics = pipeline, pipeline.topics
    ticket = data.ticket("t1", "My kettle is leaking, I want a refund.")
    for _ in range(3):
        await p.intake(dumps(ticket), Source())
    await _stage(p, "understand", topics.sessions)
    # A copy while understand is the newest stage: its output is sent again (the crash may
    # have come before the first send was acknowledged), without a second model call.
    await _stage(p, "understand", topics.sessions)
    first, again = _sent(p).sent[topics.understood]
    assert first == again
    _sent(p).sent[topics.understood].pop()
    await _stage(p, "lookup", topics.understood)
    # A copy of a ticket already past understand stops there: its output is on its way.
    await _stage(p, "understand", topics.sessions)
    assert not _sent(p).sent[topics.understood]
    assert len(p.gate) == 1, "the original still holds the session"
    (matched,) = _sent(p).sent[topics.matched]
    await _stage(p, "strategy", topics.matched)
    # Once answered, a copy at any stage stops and leaves the session free.
    await p.run_stage("strategy", matched[1], Source(topics.matched, 0, 0))
    await p.run_stage("lookup", first[1], Source(topics.understood, 0, 0))
    assert not _sent(p).sent[topics.matched]
    assert [r.ticket_id for r in _replies(p)] == ["t1"]
    assert p.observer.counts["done.understand.reused"] == 2  # type: ignore[attr-defined]
    assert p.observer.counts["done.strategy.reused"] == 1  # type: ignore[attr-defined]
    assert len(p.gate) == 0, "the session is free for the next ticket"


async def test_a_session_holds_one_entry_in_flight(pipeline: Pipeline) -> None:
    p, topics = pipeline, pipeline.topics
    for i in range(5):
        await p.intake(dumps(data.ticket(f"t{i}", f"My kettle is leaking ({i}).")), Source())
        for stage, topic, out in (
            ("understand", topics.sessions, topics.understood),
            ("lookup", topics.understood, topics.matched),
        ):
            await _stage(p, stage, topic)
            entry = _baton(p).in_flight
            assert entry is not None and (entry.ticket_id, entry.stage) == (f"t{i}", stage)
            ((_, sent),) = _sent(p).sent[out]
            assert entry.output.encode() == sent, "the entry is the output as sent"
        await _stage(p, "strategy", topics.matched)
        assert _baton(p).in_flight is None, "an answered ticket is no longer in flight"
    assert [r.ticket_id for r in _replies(p)] == [f"t{i}" for i in range(5)]
    assert _baton(p).answered == [f"t{i}" for i in range(5)]
    # An early ticket's copy is known as answered from the baton.
    await p.intake(dumps(data.ticket("t1", "My kettle is leaking (1).")), Source())
    await _stage(p, "understand", topics.sessions)
    assert not _sent(p).sent[topics.understood] and len(_replies(p)) == 5


@dataclass
class _Message:
    tp: str
    offset: int


@dataclass
class _Event:
    key: bytes
    message: _Message


@dataclass
class _Stream:
    """Faust's stream interface as the scheduler uses it, recording each ack."""

    items: list[_Event]
    acked: list[tuple[str, int]] = field(default_factory=list)

    async def events(self) -> AsyncIterator[_Event]:
        for item in self.items:
            await asyncio.sleep(0)
            yield item

    async def ack(self, event: _Event) -> bool:
        self.acked.append((event.message.tp, event.message.offset))
        return True


async def _until(condition: Callable[[], bool]) -> None:
    for _ in range(200):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never held")


async def test_acks_follow_offset_order_so_a_commit_never_passes_an_unfinished_record() -> None:
    release = asyncio.Event()
    items = [
        _Event(b"slow", _Message("p0", 0)),
        _Event(b"a", _Message("p0", 1)),
        _Event(b"b", _Message("p0", 2)),
        _Event(b"c", _Message("p1", 0)),
        _Event(b"d", _Message("p1", 1)),
    ]
    stream = _Stream(items)
    finished: list[bytes] = []

    async def handle(event: _Event) -> None:
        if event.key == b"slow":
            await release.wait()
        finished.append(event.key)

    await SessionScheduler("t", max_running=10, max_buffered=10).run(stream, handle)
    await _until(lambda: len(finished) == 4)
    # p0's later records are done, but its head is not: none of p0 is acked; p1 is.
    assert stream.acked == [("p1", 0), ("p1", 1)]
    release.set()
    await _until(lambda: len(stream.acked) == 5)
    assert stream.acked[2:] == [("p0", 0), ("p0", 1), ("p0", 2)]


async def test_a_partition_read_again_forgets_what_it_held_before() -> None:
    items = [
        _Event(b"x", _Message("p0", 5)),
        _Event(b"y", _Message("p0", 6)),
        # A rebalance hands the partition back from its committed offset.
        _Event(b"x", _Message("p0", 5)),
        _Event(b"y", _Message("p0", 6)),
    ]
    stream = _Stream(items)
    seen: list[int] = []

    async def handle(event: _Event) -> None:
        seen.append(event.message.offset)
        if len(seen) == 1:
            raise RuntimeError("the first delivery of offset 5 fails")

    await SessionScheduler("t", max_running=10, max_buffered=10).run(stream, handle)
    await _until(lambda: len(seen) == 4)
    await _until(lambda: len(stream.acked) == 2)
    assert stream.acked == [("p0", 5), ("p0", 6)]


@pytest.mark.parametrize(
    ("embedded", "setting", "wait_ms"),
    [(True, None, 100), (True, 25, 25), (False, None, 1500), (False, 25, 1500)],
)
async def test_fetch_wait_is_short_only_on_the_embedded_broker(
    tmp_path: Path, embedded: bool, setting: int | None, wait_ms: int
) -> None:
    settings = Settings(namespace="u", embedded_broker=embedded, data_dir=tmp_path)
    if setting is not None:
        settings = settings.with_(embedded_fetch_wait_ms=setting)
    store = SQLiteOrderStore(tmp_path / "o.sqlite3")
    runtime = create_app(settings, llm=OfflineLLM(), orders=store)
    thread = runtime.app.consumer._thread
    consumer = thread._create_worker_consumer(runtime.app.transport)
    try:
        assert consumer._fetch_max_wait_ms == wait_ms
    finally:
        await consumer.stop()
        await store.close()
        thread.thread_loop.close()  # the never-started consumer thread's own loop


async def test_a_source_partition_hands_on_records_only_once_it_was_sought(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resumed after a rebalance, a source partition stays held until its seek has run."""
    settings = Settings(namespace="u", data_dir=tmp_path)
    store = SQLiteOrderStore(tmp_path / "o.sqlite3")
    consumer = create_app(settings, llm=OfflineLLM(), orders=store).app.consumer
    source = TP(settings.topic("support.tickets"), 0)
    changelog = TP("baton-u-batons-changelog", 0)
    active_at_seek: list[set[TP]] = []

    async def seek_to_committed() -> dict[TP, int]:
        active_at_seek.append(set(consumer._get_active_partitions()))
        return {source: 7}

    monkeypatch.setattr(consumer, "assignment", lambda: {source, changelog})
    monkeypatch.setattr(consumer, "seek_to_committed", seek_to_committed)
    try:
        consumer.pause_partitions({source, changelog})  # as at the start of a rebalance
        consumer.resume_partitions({source, changelog})  # as recovery does before its seek
        assert consumer._get_active_partitions() == {changelog}
        await consumer.perform_seek()
        assert active_at_seek == [{changelog}]
        assert consumer._get_active_partitions() == {source, changelog}
        assert consumer._read_offset[source] == 7
    finally:
        await store.close()
        consumer._thread.thread_loop.close()  # the never-started consumer thread's own loop


@pytest.mark.parametrize(
    ("embedded", "acks", "idempotent"),
    [(False, "all", True), (False, "1", False), (True, "all", False)],
)
async def test_the_producer_is_idempotent_on_kafka_with_acks_all(
    tmp_path: Path, embedded: bool, acks: str, idempotent: bool
) -> None:
    """A send retried after a leader change is written once (a real broker, acks=all)."""
    settings = Settings(
        namespace="u", embedded_broker=embedded, producer_acks=acks, data_dir=tmp_path
    )
    store = SQLiteOrderStore(tmp_path / "o.sqlite3")
    runtime = create_app(settings, llm=OfflineLLM(), orders=store)
    client = runtime.app.producer._new_producer()
    try:
        assert (client._txn_manager is not None) is idempotent
    finally:
        await client.stop()
        await store.close()


@dataclass
class _LossyTable(MemoryTable):
    """A crash keeps only the writes whose changelog record was waited for (the worst case)."""

    durable: dict[str, bytes] = field(default_factory=dict)

    async def put_durably(self, key: str, value: bytes) -> None:
        self.put(key, value)
        self.durable[key] = value

    def crash(self) -> None:
        self.data = dict(self.durable)


async def test_an_answered_ticket_survives_a_crash_that_loses_every_unawaited_write(
    store: SQLiteOrderStore,
) -> None:
    batons = _LossyTable()
    p = _pipeline(store, MemoryState(batons=batons))
    topics = p.topics

    async def answer(t: Ticket) -> None:
        await p.intake(dumps(t), Source())
        await _stage(p, "understand", topics.sessions)
        await _stage(p, "lookup", topics.understood)
        await _stage(p, "strategy", topics.matched)

    first = data.ticket("t1", "My kettle is leaking, I want a refund.")
    await answer(first)
    batons.crash()
    # The session goes on after the restart; the next ticket takes over the entry in flight.
    await answer(data.ticket("t2", "Can it be repaired instead?"))
    await p.intake(dumps(first), Source())
    await _stage(p, "understand", topics.sessions)
    assert [r.ticket_id for r in _replies(p)] == ["t1", "t2"]
    assert not _sent(p).sent[topics.understood]


async def test_a_copy_of_an_answered_ticket_does_not_wait_for_the_ticket_queued_behind_it(
    store: SQLiteOrderStore,
) -> None:
    """After a crash the session's copies come back in order: the answered ticket's copy
    first, then that of the next ticket, whose output to the next stage the crash lost. The
    first copy must not wait for the next ticket to finish: only its own copy, queued behind
    it, can finish it."""
    p = _pipeline(store, MemoryState())
    topics = p.topics
    first = data.ticket("t1", "My kettle is leaking, I want a refund.")
    second = data.ticket("t2", "Can I send it back for repair instead?")
    await p.intake(dumps(first), Source())
    copy_of_first = _sent(p).sent[topics.sessions][0][1]
    for stage, topic in (
        ("understand", topics.sessions),
        ("lookup", topics.understood),
        ("strategy", topics.matched),
    ):
        await _stage(p, stage, topic)
    await p.intake(dumps(second), Source())
    copy_of_second = _sent(p).sent[topics.sessions][0][1]
    await _stage(p, "understand", topics.sessions)
    _sent(p).sent[topics.understood].clear()  # the crash lost the second's output
    assert _baton(p).in_flight is not None and _baton(p).in_flight.ticket_id == "t2"

    restarted = _pipeline(store, _state(p))
    source = Source(topics.sessions, 0, 0)
    await asyncio.wait_for(restarted.run_stage("understand", copy_of_first, source), 1.0)
    await asyncio.wait_for(restarted.run_stage("understand", copy_of_second, source), 1.0)
    for stage, topic in (("lookup", topics.understood), ("strategy", topics.matched)):
        await _stage(restarted, stage, topic)
    assert [r.ticket_id for r in _replies(p) + _replies(restarted)] == ["t1", "t2"]
    assert restarted.observer.counts["done.understand.reused"] == 2  # type: ignore[attr-defined]
    assert len(restarted.gate) == 0

"""A stage's output passed straight on: the next stage runs once, here, and its copy read back
from the topic stops (or runs the stage, when the run here could not)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from baton_kafka.agents.models.llm import Answer
from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.agents.rules.offline import OfflineLLM
from baton_kafka.schemas import Reply, dumps
from baton_kafka.schemas.stages import StrategyDraft
from baton_kafka.streams.observe.observer import CountingObserver
from baton_kafka.streams.runtime.pipeline import Pipeline
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.delivery import Delivery
from baton_kafka.streams.runtime.records.placement import session_partition
from baton_kafka.streams.runtime.session.relay import Relay
from baton_kafka.streams.runtime.session.scheduler import SessionGate
from baton_kafka.streams.runtime.trust.admission_checks import ADMITTING
from baton_kafka.streams.runtime.trust.checks import GO, Host, RecordView, Verdict
from baton_kafka.streams.settings import Settings
from baton_kafka.streams.testing import MemorySink, MemoryState
from tests.fixtures import data

KETTLE = "My kettle is leaking, I want a refund."


def _pipeline(
    store: SQLiteOrderStore, relay: Relay | None = None, keys: Any = (), **fields: Any
) -> Pipeline:
    return Pipeline(
        settings=Settings(namespace="u", signing_keys=keys),
        llm=fields.pop("llm", None) or OfflineLLM(),
        store=store,
        sink=fields.pop("sink", None) or MemorySink(),
        state=MemoryState(),
        gate=SessionGate(timeout_s=5),
        observer=CountingObserver(),
        relay=Relay(owns=lambda topic, session: True) if relay is None else relay,
        **fields,
    )


def _sink(p: Pipeline) -> MemorySink:
    assert isinstance(p.sink, MemorySink)
    return p.sink


def _counts(p: Pipeline) -> dict[str, int]:
    assert isinstance(p.observer, CountingObserver)
    return dict(p.observer.counts)


def _replies(p: Pipeline) -> list[Reply]:
    return [Reply.model_validate_json(v) for _, v in _sink(p).sent[p.topics.replies]]


async def _first_stage(p: Pipeline, text: str, tid: str = "t1", session: str = "S1") -> None:
    await p.intake(dumps(data.ticket(tid, text, session)), Source())
    _, value = _sink(p).sent[p.topics.sessions].pop(0)
    headers = _sink(p).headers[p.topics.sessions].pop(0)
    source = Source(p.topics.sessions, None, 0, key=session)
    await p.run_stage("understand", value, source, headers)


async def _copies(p: Pipeline) -> None:
    """Read back what the stages sent to each other, as the worker's agents would."""
    for stage, topic in (("lookup", p.topics.understood), ("strategy", p.topics.matched)):
        headers = _sink(p).headers[topic]
        for i, (key, value) in enumerate(list(_sink(p).sent[topic])):
            await p.run_stage(stage, value, Source(topic, None, i, key=key), headers[i])


@pytest.fixture(params=[(), (("k1", "a signing secret"),)], ids=["plain", "signed"])
async def ran(store: SQLiteOrderStore, request: pytest.FixtureRequest) -> Pipeline:
    """A pipeline, its records unsigned or signed, that ran one ticket's first stage (and the
    stages passed on after it)."""
    p = _pipeline(store, keys=request.param)
    await _first_stage(p, KETTLE)
    return p


async def test_one_record_runs_the_chain_and_the_copies_read_back_stop(ran: Pipeline) -> None:
    p = ran
    # Passed on signed, placed and traced as the topic's copy: nothing is dead-lettered.
    assert not _sink(p).sent[p.topics.dead_letters]
    assert [r.ticket_id for r in _replies(p)] == ["t1"]
    sent = {t: list(_sink(p).sent[t]) for t in (p.topics.understood, p.topics.matched)}
    assert [len(records) for records in sent.values()] == [1, 1], "each output is on its topic"
    assert p.relay.marked == 2
    await _copies(p)
    # Nothing more was sent, nothing ran twice, and each mark went with its copy.
    assert {t: _sink(p).sent[t] for t in sent} == sent
    assert [r.ticket_id for r in _replies(p)] == ["t1"]
    counts = _counts(p)
    assert counts["done.lookup.ok"] == counts["done.strategy.ok"] == 1
    assert not [k for k in counts if k.endswith(".reused")]
    assert p.relay.marked == 0 and len(p.gate) == 0


async def test_the_outputs_are_those_of_the_chain_read_from_its_topics(
    store: SQLiteOrderStore,
) -> None:
    texts = [
        (KETTLE, "S1"),
        ("Where is my order? It has not arrived.", "S2"),
        ("Actually, can I send it back for repair instead?", "S1"),
        ("My headphones stopped working, I want a refund.", "S3"),
        ("How long will that take?", "S1"),
    ]
    passed = _pipeline(store)
    hops = _pipeline(store, Relay())
    assert passed.relay.enabled and not hops.relay.enabled
    for i, (text, session) in enumerate(texts):
        await _first_stage(passed, text, f"t{i}", session)
        await _copies(passed)
        await _first_stage(hops, text, f"t{i}", session)
        await _copies(hops)

    def shown(p: Pipeline) -> list[tuple[Any, ...]]:
        return [
            (r.ticket_id, r.status, r.reply, r.solution, r.order_id, r.offer, r.usage)
            for r in _replies(p)
        ]

    assert shown(passed) == shown(hops)
    assert len(shown(passed)) == len(texts)
    for session in ("S1", "S2", "S3"):
        a, b = passed.batons.get(session), hops.batons.get(session)
        assert a is not None and b is not None
        assert _timeless(a.model_dump(mode="json")) == _timeless(b.model_dump(mode="json"))


def _timeless(value: Any) -> Any:
    """``value`` without the clock's readings (when each part was written)."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k not in {"at", "updated_at"}}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


async def test_what_is_passed_on_is_read_where_its_copy_is(store: SQLiteOrderStore) -> None:
    """Its dead letters name the copy's topic, partition and offset: a re-drive finds it."""
    read: list[tuple[str, Any, Any, Any]] = []

    class Where:
        name = "where"

        async def __call__(self, host: Host, view: RecordView) -> Verdict:
            s = view.source
            read.append((view.stage.name, s.topic, s.partition, s.offset))
            return GO

    p = _pipeline(store, admitting=(Where(), *ADMITTING))
    for i, session in enumerate(("S1", "S2", "S3")):
        await _first_stage(p, KETTLE, f"t{i}", session)
    understood, matched = p.topics.understood, p.topics.matched
    partitions = p.settings.partitions
    assert [r for r in read if r[0] == "lookup"] == [
        ("lookup", understood, session_partition(s, partitions), i)
        for i, s in enumerate(("S1", "S2", "S3"))
    ]
    assert [r[1:] for r in read if r[0] == "strategy"] == [
        (matched, session_partition(s, partitions), i) for i, s in enumerate(("S1", "S2", "S3"))
    ]


class _HeldSink(MemorySink):
    """Holds every send to ``topic`` until ``go`` is set."""

    def __init__(self, topic: str) -> None:
        super().__init__()
        self.topic = topic
        self.go = asyncio.Event()
        self.waiting = asyncio.Event()

    async def send(self, topic: str, key: str | None, value: bytes, headers: Any = None) -> int:
        if topic == self.topic:
            self.waiting.set()
            await self.go.wait()
        return await super().send(topic, key, value, headers)


async def test_a_copy_read_while_its_run_goes_on_waits_for_it_then_stops(
    store: SQLiteOrderStore,
) -> None:
    held = _HeldSink(Settings(namespace="u").topic("support.order-matched"))
    p = _pipeline(store, sink=held)
    assert p.topics.matched == held.topic
    first = asyncio.create_task(_first_stage(p, KETTLE))
    await asyncio.wait_for(held.waiting.wait(), 5)  # look-up, passed on, is sending its output
    ((_, value),) = held.sent[p.topics.understood]
    copy = asyncio.create_task(p.run_stage("lookup", value, Source(p.topics.understood, 0, 0)))
    await asyncio.sleep(0.2)
    assert not copy.done(), "the copy waits for the run it is a copy of"
    held.go.set()
    await asyncio.wait_for(asyncio.gather(first, copy), 5)
    await _copies(p)
    assert [r.ticket_id for r in _replies(p)] == ["t1"]
    assert len(held.sent[p.topics.matched]) == 1
    assert _counts(p)["done.lookup.ok"] == 1


async def test_a_run_here_that_fails_leaves_the_stage_to_its_copy(
    store: SQLiteOrderStore, caplog: pytest.LogCaptureFixture
) -> None:
    failed: list[str] = []

    class FailsPassedOnce:
        name = "fails_passed_once"

        async def __call__(self, host: Host, view: RecordView) -> Verdict:
            # The record passed on names its partition; this test reads its copies without one.
            if view.source.partition is not None and not failed:
                failed.append(view.stage.name)
                raise RuntimeError("the check broke")
            return GO

    p = _pipeline(store, admitting=(FailsPassedOnce(), *ADMITTING))
    with caplog.at_level("WARNING", logger="baton.pipeline"):
        await _first_stage(p, KETTLE)
    assert failed == ["lookup"] and not _replies(p)
    assert "lookup: passing t1 on failed: RuntimeError" in caplog.text
    await _copies(p)  # look-up runs on its copy, then passes strategy on
    assert [r.ticket_id for r in _replies(p)] == ["t1"]
    counts = _counts(p)
    assert counts["done.understand.ok"] == counts["done.lookup.ok"] == 1
    assert counts["done.strategy.ok"] == 1
    assert len(_sink(p).sent[p.topics.matched]) == 1


async def test_a_partition_another_worker_reads_is_left_to_its_topic(
    store: SQLiteOrderStore,
) -> None:
    asked: list[tuple[str, str]] = []

    def owns(topic: str, session: str) -> bool:
        asked.append((topic, session))
        return False

    p = _pipeline(store, Relay(owns=owns))
    await _first_stage(p, KETTLE)
    assert asked == [(p.topics.understood, "S1")]
    assert not _replies(p) and p.relay.marked == 0
    await _copies(p)
    assert [r.ticket_id for r in _replies(p)] == ["t1"]
    assert _counts(p)["done.lookup.ok"] == _counts(p)["done.strategy.ok"] == 1


async def test_a_partition_that_moved_on_mid_chain_is_left_to_its_new_reader(
    store: SQLiteOrderStore,
) -> None:
    """Each run passed on checks again that this worker reads the partition: after a
    rebalance the new reader runs the copy, so the stage must not run here too."""
    asked: list[str] = []

    def owns(topic: str, session: str) -> bool:
        asked.append(topic)
        return len(asked) <= 3  # both marks and the look-up's run; then the partition moves

    p = _pipeline(store, Relay(owns=owns))
    await _first_stage(p, KETTLE)
    understood, matched = p.topics.understood, p.topics.matched
    assert asked == [understood, understood, matched, matched]
    assert _counts(p)["done.lookup.ok"] == 1 and "done.strategy.ok" not in _counts(p)
    assert not _replies(p)
    # The copy, read by whoever reads the partition now, runs the stage.
    ((_, value),) = _sink(p).sent[matched]
    await p.run_stage("strategy", value, Source(matched, None, 0))
    assert [r.ticket_id for r in _replies(p)] == ["t1"]
    assert _counts(p)["done.strategy.ok"] == 1


async def test_a_mark_is_dropped_after_its_wait_when_no_copy_comes() -> None:
    relay = Relay(owns=lambda topic, session: True, keep_s=0.05)
    assert relay.mark("t1", "lookup", "understood", "S1")
    assert not relay.mark("t1", "lookup", "understood", "S1"), "one run at a time"
    relay.given("t1", "lookup", Source("understood", 0, 0), b"out", None)
    relay.finish("t1", "lookup", True)
    assert relay.marked == 1
    await asyncio.sleep(0.1)
    assert relay.marked == 0
    assert await relay.copy_done("t1", "lookup", b"out") is False, "no mark: the copy runs"


async def test_a_copy_stops_only_when_its_run_finished_on_the_same_bytes() -> None:
    relay = Relay(owns=lambda topic, session: True)
    for tid in ("t1", "t2", "t3"):
        assert relay.mark(tid, "lookup", "understood", "S1")
        relay.given(tid, "lookup", Source("understood", 0, 0), b"out " + tid.encode(), None)
    relay.finish("t1", "lookup", True)
    relay.finish("t2", "lookup", False)
    relay.finish("t3", "lookup", True)
    assert await relay.copy_done("t1", "lookup", b"out t1") is True
    assert await relay.copy_done("t2", "lookup", b"out t2") is False, "the run failed"
    assert await relay.copy_done("t3", "lookup", b"forged") is False, "not the record sent"
    assert await relay.copy_done("t3", "lookup", b"out t3") is True
    assert relay.marked == 1  # t2's: kept until its wait is over
    assert not Relay().mark("t1", "lookup", "understood", "S1"), "off: nothing is passed on"


class _HeldStrategy(OfflineLLM):
    """The offline model, whose first strategy call waits until ``go`` is set."""

    def __init__(self) -> None:
        self.go = asyncio.Event()
        self.waiting = asyncio.Event()
        self.strategy_calls = 0

    async def ask(self, prompt: Any, **kwargs: Any) -> Answer[Any]:
        if prompt.output_type is StrategyDraft:
            self.strategy_calls += 1
            if self.strategy_calls == 1:
                self.waiting.set()
                await self.go.wait()
        return await super().ask(prompt, **kwargs)


async def test_a_stage_running_on_a_record_from_its_topic_is_not_also_run_passed_on(
    store: SQLiteOrderStore,
) -> None:
    """After a crash a worker may read a ticket's old copy at a stage while the stage before
    runs again on the same ticket: what that run would pass on waits its turn on the topic,
    or the stage would run twice at once and answer twice."""
    reading = [False]
    llm = _HeldStrategy()
    p = _pipeline(store, Relay(owns=lambda topic, session: reading[0]), llm=llm)
    understood, matched = p.topics.understood, p.topics.matched
    await _first_stage(p, KETTLE)  # understand, sent on to its topic only
    before = p.batons.get("S1")
    assert before is not None
    ((_, looked_up),) = _sink(p).sent[understood]
    await p.run_stage("lookup", looked_up, Source(understood, None, 0))
    # The crash lost the look-up's entry in the baton, not its output on the topic.
    p.batons.save(before)
    ((_, old_copy),) = _sink(p).sent[matched]
    reading[0] = True
    old = asyncio.create_task(p.run_stage("strategy", old_copy, Source(matched, None, 0)))
    await asyncio.wait_for(llm.waiting.wait(), 5)  # the strategy runs on the old copy
    await asyncio.wait_for(p.run_stage("lookup", looked_up, Source(understood, None, 0)), 5)
    llm.go.set()
    await asyncio.wait_for(old, 5)
    await _copies(p)
    assert [r.ticket_id for r in _replies(p)] == ["t1"]
    assert _counts(p)["done.strategy.ok"] == 1


async def test_no_mark_while_the_topic_s_record_runs_and_a_copy_waits_for_every_run() -> None:
    relay = Relay(owns=lambda topic, session: True)
    with relay.running("t1", "lookup"):
        assert not relay.mark("t1", "lookup", "understood", "S1"), "the stage runs already"
        assert relay.mark("t2", "lookup", "understood", "S1"), "another ticket's run"
    assert relay.mark("t1", "lookup", "understood", "S1"), "the record's run is over"
    relay.given("t1", "lookup", Source("understood", 0, 0), b"first", None)
    copy = asyncio.create_task(relay.copy_done("t1", "lookup", b"second"))
    await asyncio.sleep(0.01)
    relay.finish("t1", "lookup", True)
    # The stage before ran again on the ticket and passed its new output on at once.
    assert relay.mark("t1", "lookup", "understood", "S1")
    relay.given("t1", "lookup", Source("understood", 0, 1), b"second", None)
    await asyncio.sleep(0.01)
    assert not copy.done(), "the copy waits for the later run too"
    relay.finish("t1", "lookup", True)
    assert await asyncio.wait_for(copy, 1) is True


async def test_a_copy_is_told_by_its_place_and_bytes() -> None:
    relay = Relay(owns=lambda topic, session: True)
    assert relay.mark("t1", "lookup", "understood", "S1")
    relay.given("t1", "lookup", Source("understood", 2, 7), b"out", None)
    assert relay.copy_of("lookup", Source("understood", 2, 7), b"out") == "t1"
    # Anything else is decoded and checked as any record.
    assert relay.copy_of("lookup", Source("understood", 2, 7), b"forged") is None
    assert relay.copy_of("lookup", Source("understood", 2, 8), b"out") is None
    assert relay.copy_of("lookup", Source("understood", 1, 7), b"out") is None
    assert relay.copy_of("lookup", Source("understood", None, 7), b"out") is None
    assert relay.copy_of("lookup", Source("understood", 2, 7), None) is None
    assert relay.copy_of("strategy", Source("understood", 2, 7), b"out") is None
    relay.finish("t1", "lookup", True)
    assert await relay.copy_done("t1", "lookup", b"out") is True
    assert relay.copy_of("lookup", Source("understood", 2, 7), b"out") is None, "stopped once"


async def test_a_place_is_forgotten_with_its_mark() -> None:
    relay = Relay(owns=lambda topic, session: True, keep_s=0.05)
    # No offset from the broker: the copy is decoded to be told.
    assert relay.mark("t0", "lookup", "understood", "S1")
    relay.given("t0", "lookup", Source("understood", 0, None), b"out", None)
    assert relay.copy_of("lookup", Source("understood", 0, None), b"out") is None
    relay.finish("t0", "lookup", True)
    assert relay.mark("t1", "lookup", "understood", "S1")
    relay.given("t1", "lookup", Source("understood", 0, 1), b"first", None)
    relay.finish("t1", "lookup", True)
    # The stage before ran again on the ticket: its new output is written elsewhere.
    assert relay.mark("t1", "lookup", "understood", "S1")
    relay.given("t1", "lookup", Source("understood", 0, 2), b"second", None)
    assert relay.copy_of("lookup", Source("understood", 0, 1), b"first") is None
    assert relay.copy_of("lookup", Source("understood", 0, 2), b"second") == "t1"
    relay.finish("t1", "lookup", True)
    await asyncio.sleep(0.1)  # no copy came: the mark and its place go
    assert relay.marked == 0
    assert relay.copy_of("lookup", Source("understood", 0, 2), b"second") is None


class _Counted(Delivery):
    """A record as read, counting how often its bytes are decoded."""

    decoded = 0

    def record(self) -> Any:
        _Counted.decoded += 1
        return super().record()


async def test_copies_read_back_at_their_places_stop_undecoded(ran: Pipeline) -> None:
    p = ran
    partition = session_partition("S1", p.settings.partitions)
    _Counted.decoded = 0
    for stage, topic in (("lookup", p.topics.understood), ("strategy", p.topics.matched)):
        ((key, value),) = _sink(p).sent[topic]
        (headers,) = _sink(p).headers[topic]
        copy = _Counted(value, Source(topic, partition, 0, key=key), headers)
        assert not p.refuses_delivery(stage, copy)
        await p.deliver(stage, copy)
    assert _Counted.decoded == 0
    assert [r.ticket_id for r in _replies(p)] == ["t1"]
    counts = _counts(p)
    assert counts["done.lookup.ok"] == counts["done.strategy.ok"] == 1
    assert p.relay.marked == 0 and len(p.gate) == 0 and not p.relay._at


async def test_a_record_at_a_copy_s_place_with_other_bytes_is_checked_as_any(
    store: SQLiteOrderStore,
) -> None:
    """Bytes that are not those passed on at that place are decoded, checked and refused."""
    p = _pipeline(store, keys=(("k1", "a signing secret"),))
    await _first_stage(p, KETTLE)
    partition = session_partition("S1", p.settings.partitions)
    topic = p.topics.understood
    ((key, value),) = _sink(p).sent[topic]
    (headers,) = _sink(p).headers[topic]
    forged = value.replace(b"leaking", b"LEAKING")
    assert forged != value
    _Counted.decoded = 0
    copy = _Counted(forged, Source(topic, partition, 0, key=key), headers)
    assert p.refuses_delivery("lookup", copy), "its signature does not cover these bytes"
    assert _Counted.decoded > 0
    await p.deliver("lookup", copy)
    assert _sink(p).sent[p.topics.dead_letters], "dead-lettered, never run"
    assert [r.ticket_id for r in _replies(p)] == ["t1"]
    assert _counts(p)["done.lookup.ok"] == 1

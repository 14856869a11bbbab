"""Fair sharing: one session flooding a worker with tickets does not hold the others back."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import orjson

from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.agents.rules.offline import OfflineLLM
from baton_kafka.schemas import DeadLetter, Reply, Ticket, dumps
from baton_kafka.schemas.records import StageName
from baton_kafka.streams.debug.dlq import redrive
from baton_kafka.streams.kafka.topics import TopicNames
from baton_kafka.streams.runtime.faust_app.app import stage_schedulers
from baton_kafka.streams.runtime.faust_app.faust_io import session_partition
from baton_kafka.streams.runtime.pipeline import Pipeline
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.settings import Settings
from baton_kafka.streams.testing import MemorySink, MemoryState
from tests.fixtures.data import ticket
from tests.fixtures.delivery import figures, is_holding

PARTITIONS = 4
FLOOD = 10_000
OTHERS = 20
OTHER_TURNS = 3
DEADLINE_S = 60.0


@dataclass(frozen=True)
class Message:
    topic: str
    partition: int
    offset: int

    @property
    def tp(self) -> tuple[str, int]:
        return (self.topic, self.partition)


@dataclass(frozen=True)
class Event:
    key: bytes | None
    value: bytes
    message: Message


@dataclass
class Stream:
    """One topic as a Faust stream with acks off: every partition, in arrival order."""

    topic: str
    log: list[tuple[str, Message]]
    queue: asyncio.Queue[Event] = field(default_factory=asyncio.Queue)
    acked: int = 0

    async def events(self) -> AsyncIterator[Event]:
        while True:
            yield await self.queue.get()

    async def ack(self, event: Event) -> bool:
        self.acked += 1
        self.log.append(("ack", event.message))
        return True


class Broker(MemorySink):
    """The pipeline's sink, delivering every record to its topic's stream at once.

    ``log`` lists, in order, each dead letter (by the record it is about) and each ack.
    """

    def __init__(self, names: TopicNames) -> None:
        super().__init__()
        self.names = names
        self.log: list[tuple[str, Message]] = []
        self.streams = {name: Stream(name, self.log) for name in names.all()}
        self.offsets: defaultdict[tuple[str, int], int] = defaultdict(int)
        self.replied_at: dict[str, float] = {}
        self.finished: set[str] = set()  # the tickets with a reply or a dead letter

    async def send(
        self,
        topic: str,
        key: str | None,
        value: bytes,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> int:
        await super().send(topic, key, value, headers)
        if topic == self.names.replies and not is_holding(value):
            # A holding reply (a ticket slower than the first-reply deadline, on a loaded
            # machine) comes before the ticket's own reply, which is what finishes it.
            ticket_id = orjson.loads(value)["ticket_id"]
            self.replied_at[ticket_id] = time.perf_counter()
            self.finished.add(ticket_id)
        elif topic == self.names.dead_letters:
            dl = orjson.loads(value)
            about = Message(dl["source_topic"], dl["source_partition"], dl["source_offset"])
            self.log.append(("dead_letter", about))
            self.finished.add(dl["ticket_id"])
        partition = session_partition(key or "", PARTITIONS)
        offset = self.offsets[(topic, partition)]
        self.offsets[(topic, partition)] += 1
        event = Event(key.encode() if key else None, value, Message(topic, partition, offset))
        self.streams[topic].queue.put_nowait(event)
        return offset


@dataclass
class Run:
    """What one in-process run of a worker delivered."""

    published_at: dict[str, float]
    broker: Broker

    def replies(self) -> list[Reply]:
        """Each ticket's own reply (holding replies left out: ``holding``)."""
        sent = self.broker.sent[self.broker.names.replies]
        return [Reply.model_validate_json(v) for _, v in sent if not is_holding(v)]

    def holding(self) -> list[Reply]:
        """The holding replies of tickets slower than the first-reply deadline."""
        sent = self.broker.sent[self.broker.names.replies]
        return [Reply.model_validate_json(v) for _, v in sent if is_holding(v)]

    def dead_letters(self) -> list[DeadLetter]:
        sent = self.broker.sent[self.broker.names.dead_letters]
        return [DeadLetter.model_validate_json(v) for _, v in sent]

    def unfinished(self) -> int:
        """How many tickets have neither a reply nor a dead letter."""
        return len(self.published_at.keys() - self.broker.finished)

    def latencies(self, prefix: str) -> list[float]:
        replied = self.broker.replied_at
        return [replied[t] - at for t, at in self.published_at.items() if t.startswith(prefix)]


def other_ticket(n: int) -> Ticket:
    session = n % OTHERS
    return ticket(f"o{session}-{n // OTHERS}", "My kettle is leaking.", f"other-{session}")


async def run_worker(settings: Settings, store: SQLiteOrderStore, flood: bool) -> Run:
    """Intake, the three stages and the index on one event loop, wired like ``create_app``.

    The other sessions' tickets are published at a steady pace, with ``FLOOD`` tickets of one
    session in bursts between them if ``flood``; returns once every ticket has a reply or a
    dead letter.
    """
    names = TopicNames.of(settings)
    broker = Broker(names)
    pipeline = Pipeline(
        settings=settings, llm=OfflineLLM(), store=store, sink=broker, state=MemoryState()
    )
    schedulers = stage_schedulers(settings)

    def source(event: Event) -> Source:
        return Source(event.message.topic, event.message.partition, event.message.offset)

    async def intake() -> None:
        async for event in broker.streams[names.tickets].events():
            await pipeline.intake(event.value, source(event))

    async def index() -> None:
        async for event in broker.streams[names.memory_index].events():
            await pipeline.apply_index(event.value)

    async def stage_agent(name: StageName, topic: str) -> None:
        async def handle(event: Event) -> None:
            await pipeline.run_stage(name, event.value, source(event))

        async def shed(event: Event) -> None:
            await pipeline.shed(name, event.value, source(event))

        await schedulers[name].run(broker.streams[topic], handle, shed)

    agents = [asyncio.create_task(intake()), asyncio.create_task(index())]
    agents += [
        asyncio.create_task(stage_agent(s.name, pipeline.source_topic(s))) for s in pipeline.chain
    ]
    published_at: dict[str, float] = {}

    async def publish(t: Ticket) -> None:
        published_at[t.ticket_id] = time.perf_counter()
        await broker.send(names.tickets, t.session_id, dumps(t))

    every = FLOOD // (OTHERS * OTHER_TURNS)
    try:
        for n in range(FLOOD):
            if flood:
                await publish(
                    ticket(f"f{n:05d}", "My kettle is leaking, I want a refund.", "FLOOD")
                )
            if n % every == 0 and n // every < OTHERS * OTHER_TURNS:
                await publish(other_ticket(n // every))
            if n % 100 == 99:
                await asyncio.sleep(0.002)  # the producer sends in bursts
        deadline = time.monotonic() + DEADLINE_S
        while not published_at.keys() <= broker.finished and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.1)  # the acks that follow the last reply or dead letter
    finally:
        for task in agents:
            task.cancel()
        await asyncio.gather(*agents, return_exceptions=True)
    return Run(published_at, broker)


def _ms(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p95 = ordered[int(0.95 * (len(ordered) - 1))]
    p50, top = statistics.median(ordered), ordered[-1]
    return f"p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, max {top * 1000:.0f} ms"


async def test_a_flooding_session_is_shed_while_the_others_are_answered_promptly(
    store: SQLiteOrderStore,
) -> None:
    settings = Settings(namespace="u", max_buffered=1_000, max_queued_per_session=100)
    quiet = await run_worker(settings, store, flood=False)
    flooded = await run_worker(settings, store, flood=True)
    assert quiet.unfinished() == flooded.unfinished() == 0, f"stalled for {DEADLINE_S} s"

    # Every flood ticket is answered or dead-lettered, never both, never lost.
    replies = flooded.replies()
    flood_replies = [r.ticket_id for r in replies if r.session_id == "FLOOD"]
    letters = flooded.dead_letters()
    shed = [d for d in letters if d.reason == "session_flood"]
    assert len(shed) == len(letters)
    assert len(set(flood_replies)) == len(flood_replies)
    # A holding reply only ever comes before the same ticket's own reply.
    assert {r.ticket_id for r in flooded.holding()} <= set(flood_replies) | {
        r.ticket_id for r in replies
    }
    assert not set(flood_replies) & {d.ticket_id for d in shed}
    published = {f"f{n:05d}" for n in range(FLOOD)}
    assert set(flood_replies) | {d.ticket_id for d in shed} == published
    assert flood_replies == sorted(flood_replies)  # the answered ones in session order
    assert 100 <= len(flood_replies) < FLOOD and shed

    # A shed ticket carries itself for a re-drive, and is acked only after its dead letter.
    first = shed[0]
    assert first.stage == "understand" and first.ticket is not None
    assert Ticket.model_validate_json(first.payload) == first.ticket
    assert redrive(first) == ("FLOOD", dumps(first.ticket))
    assert "already had 100 tickets waiting" in first.error
    position = {entry: i for i, entry in enumerate(flooded.broker.log)}
    for d in shed:
        read = Message(str(d.source_topic), int(d.source_partition or 0), int(d.source_offset or 0))
        assert position[("dead_letter", read)] < position[("ack", read)]
    by_session = flooded.broker.streams[flooded.broker.names.sessions]
    assert by_session.acked == FLOOD + OTHERS * OTHER_TURNS

    # The other sessions are all answered, and promptly.
    others = [r for r in replies if r.session_id != "FLOOD"]
    assert len(others) == OTHERS * OTHER_TURNS and all(r.status == "answered" for r in others)
    baseline, during = quiet.latencies("o"), flooded.latencies("o")
    figures(
        "session flood",
        flood=FLOOD,
        answered=len(flood_replies),
        dead_lettered=len(shed),
        others_quiet=_ms(baseline),
        others_during_flood=_ms(during),
    )
    assert max(during) < 5.0


async def test_a_shed_record_gets_a_dead_letter_and_no_reply(store: SQLiteOrderStore) -> None:
    sink = MemorySink()
    pipeline = Pipeline(
        settings=Settings(namespace="u", max_queued_per_session=7),
        llm=OfflineLLM(),
        store=store,
        sink=sink,
        state=MemoryState(),
    )
    n = pipeline.topics
    t = ticket("t9", "My kettle is leaking.", "S1")
    await pipeline.intake(dumps(t), Source(n.tickets, 0, 0))
    ((_, record),) = sink.take(n.sessions)
    await pipeline.shed("understand", record, Source(n.sessions, 2, 41))
    await pipeline.shed("understand", b"{not json", Source(n.sessions, 2, 42))
    flood, invalid = (DeadLetter.model_validate_json(v) for _, v in sink.take(n.dead_letters))
    assert (flood.reason, flood.stage, flood.ticket) == ("session_flood", "understand", t)
    assert (flood.source_partition, flood.source_offset) == (2, 41)
    assert flood.error.startswith("session S1 already had 7 tickets waiting in understand")
    assert invalid.reason == "invalid_input" and invalid.source_offset == 42
    assert not sink.sent[n.replies] and pipeline.batons.get("S1") is None


async def test_a_copy_of_the_ticket_in_flight_is_settled_not_shed(store: SQLiteOrderStore) -> None:
    sink = MemorySink()
    pipeline = Pipeline(
        settings=Settings(namespace="u"),
        llm=OfflineLLM(),
        store=store,
        sink=sink,
        state=MemoryState(),
    )
    n = pipeline.topics
    await pipeline.intake(dumps(ticket("t1", "My kettle is leaking.")), Source(n.tickets, 0, 0))
    ((_, record),) = sink.take(n.sessions)
    await pipeline.run_stage("understand", record, Source(n.sessions, 0, 0))
    ((_, understood),) = sink.take(n.understood)
    # Delivered again (a rebalance) behind a full queue: the later tickets of the session wait
    # for this one at the gate, so it goes on (its recorded output is sent again).
    await pipeline.shed("understand", record, Source(n.sessions, 0, 0))
    assert sink.take(n.understood) == [("S1", understood)]
    assert not sink.take(n.dead_letters)

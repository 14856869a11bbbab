"""The test kit, baton's own and a shop's: the chain in memory (``TestPipeline``), an order
source, a sink (with a broker fault to inject) and tables.

pipeline = TestPipeline(orders=MemoryOrders(order), stages=[MY_STAGE])
[reply] = await pipeline.send(Ticket(ticket_id="t1", session_id="s1", text="..."))
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from baton_kafka.agents.models.llm import LLM
from baton_kafka.agents.orders import OrderSource
from baton_kafka.agents.rules.offline import OfflineLLM
from baton_kafka.agents.stage import Stage
from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.handoff import HandoffPacket
from baton_kafka.schemas.records import DeadLetter, Order, Reply, Ticket
from baton_kafka.streams.observe.observer import CountingObserver, Fanout, Guarded, Observer
from baton_kafka.streams.runtime.chain import Chain
from baton_kafka.streams.runtime.pipeline import Pipeline
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.settings import Settings

__all__ = ["MemoryOrders", "MemorySink", "MemoryState", "MemoryTable", "TestPipeline"]

Records = list[tuple[str | None, bytes]]


@dataclass
class MemorySink:
    """Topics in memory: ``sent`` holds the records sent to each topic, ``take`` hands them out.

    A record waits in ``sent`` until a stage takes it: tests may edit ``sent`` (pop a record to
    feed it to a stage by hand, clear a topic to lose it); ``contains`` answers from ``sent``.
    ``headers`` holds each record's headers, in the order sent (not edited with ``sent``).
    ``fail_first`` makes the first matching send raise ``ConnectionError`` (a broker that
    went away after the sends before it: the fault a worker must survive); it is a topic name's
    suffix, or a test of ``(topic, value)``. ``failed`` says whether it has happened.
    """

    sent: defaultdict[str, Records] = field(default_factory=lambda: defaultdict(list))
    headers: defaultdict[str, list[list[tuple[str, bytes]]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    fail_first: str | Callable[[str, bytes], bool] | None = None
    failed: bool = False
    # Per topic, how many records were sent: the next one's offset (``sent`` may be edited).
    written: defaultdict[str, int] = field(default_factory=lambda: defaultdict(int))

    async def send(
        self,
        topic: str,
        key: str | None,
        value: bytes,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> int:
        if not self.failed and self._fails(topic, value):
            self.failed = True
            raise ConnectionError("the broker went away")
        self.sent[topic].append((key, value))
        self.headers[topic].append(list(headers or []))
        offset = self.written[topic]
        self.written[topic] = offset + 1
        return offset

    def _fails(self, topic: str, value: bytes) -> bool:
        if isinstance(self.fail_first, str):
            return topic.endswith(self.fail_first)
        return self.fail_first is not None and self.fail_first(topic, value)

    async def contains(
        self, topic: str, key: str, since: datetime, match: Callable[[bytes], bool]
    ) -> bool:
        return any(k == key and match(v) for k, v in self.sent[topic])

    def take(self, topic: str) -> Records:
        """The records waiting on ``topic``, taken out of ``sent``."""
        return self.sent.pop(topic, [])


@dataclass
class MemoryTable:
    """A table as a dict; ``tombstones`` lists the keys deleted, in order."""

    data: dict[str, bytes] = field(default_factory=dict)
    tombstones: list[str] = field(default_factory=list)

    def get(self, key: str) -> bytes | None:
        return self.data.get(key)

    def put(self, key: str, value: bytes) -> None:
        self.data[key] = value

    async def put_durably(self, key: str, value: bytes) -> None:
        self.put(key, value)

    def items(self) -> list[tuple[str, bytes]]:
        return list(self.data.items())

    def keys(self) -> list[str]:
        return list(self.data)

    def delete(self, key: str) -> None:
        self.data.pop(key, None)
        self.tombstones.append(key)


@dataclass
class MemoryState:
    """The pipeline's tables in memory."""

    batons: MemoryTable = field(default_factory=MemoryTable)
    customers: MemoryTable = field(default_factory=MemoryTable)


class MemoryOrders:
    """An order source in memory: the orders given, read as a shop's source would be."""

    def __init__(self, *orders: Order) -> None:
        self.orders = {o.order_id: o for o in orders}

    def add(self, *orders: Order) -> None:
        """Add or replace ``orders``."""
        self.orders.update({o.order_id: o for o in orders})

    async def for_customer(self, customer_id: str, limit: int = 50) -> list[Order]:
        """The customer's orders, newest first."""
        own = [o for o in self.orders.values() if o.customer_id == customer_id]
        return sorted(own, key=lambda o: o.ordered_at, reverse=True)[:limit]

    async def get(self, order_id: str) -> Order | None:
        return self.orders.get(order_id)

    async def close(self) -> None:
        return None


@dataclass
class TestPipeline:
    """baton's whole chain (and a shop's own stages) without a broker: tickets go in, replies,
    hand-off packets and dead letters come out, exactly as a worker's records would.

    Every record goes through the stages' own code: validation, the session's ownership, the
    baton, the policy checks, dead letters. What it leaves out is Kafka itself (partitions,
    offsets, rebalances): the integration tests cover that on real brokers.

        pipeline = TestPipeline(orders=store, stages=[PRIORITY])
        [reply] = await pipeline.send(Ticket(ticket_id="t1", session_id="s1", text="..."))

    ``sink`` and ``state`` may be given: a ``MemorySink(fail_first=...)`` to lose the broker
    mid-record, the ``state`` of an earlier pipeline to restart on its tables. Attributes the
    kit does not name are the ``Pipeline``'s (``run_stage``, ``intake``, ``batons``, ...).
    """

    __test__ = False  # not a pytest test class, whatever the name says

    orders: OrderSource
    settings: Settings = field(default_factory=lambda: Settings(namespace="test"))
    llm: LLM | None = None
    stages: Chain | Iterable[Stage[Any]] | None = None
    observers: Iterable[Observer] = ()
    sink: MemorySink = field(default_factory=MemorySink)
    state: MemoryState = field(default_factory=MemoryState)
    counts: CountingObserver = field(default_factory=CountingObserver, init=False)
    pipeline: Pipeline = field(init=False)
    _offset: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self.llm = self.llm or OfflineLLM()
        self.pipeline = Pipeline(
            settings=self.settings,
            llm=self.llm,
            store=self.orders,
            sink=self.sink,
            state=self.state,
            observer=Fanout(self.counts, *(Guarded(o) for o in self.observers)),
            chain=Chain.of(self.stages),
        )

    def __getattr__(self, name: str) -> Any:
        """The wrapped ``Pipeline``'s attribute (only called for names the kit lacks)."""
        if name == "pipeline":  # not built yet
            raise AttributeError(name)
        return getattr(self.pipeline, name)

    def __setattr__(self, name: str, value: Any) -> None:
        """Set the kit's own fields here, anything else (``bursts``, ...) on the pipeline."""
        if name in _OWN:
            object.__setattr__(self, name, value)
        else:
            setattr(self.pipeline, name, value)

    async def send(self, *tickets: Ticket | dict[str, Any] | bytes) -> list[Reply]:
        """Publish ``tickets`` in order and run each through the chain; the replies they got.

        A dict or bytes is sent as it would arrive on the tickets topic (an invalid one becomes
        a dead letter, as on a worker).
        """
        topics = self.pipeline.topics
        before = len(self.sink.sent[topics.replies])
        for ticket in tickets:
            value = ticket if isinstance(ticket, bytes) else dumps(ticket)
            await self.pipeline.intake(value, Source(topics.tickets, 0, self._offset))
            self._offset += 1
            for stage in self.pipeline.chain:
                await self.hop(stage.name)
            await self.index()
        return [Reply.model_validate_json(v) for _, v in self.sink.sent[topics.replies][before:]]

    async def hop(self, stage: str, topic: str | None = None) -> None:
        """Run ``stage`` on every record waiting on ``topic`` (the stage's own input topic
        unless given): one step of ``send``, for a test that stops between stages."""
        if topic is None:
            topic = self.pipeline.source_topic(self.pipeline.chain[stage])
        for i, (_, record) in enumerate(self.sink.take(topic)):
            await self.pipeline.run_stage(stage, record, Source(topic, 0, i))

    async def index(self) -> None:
        """Apply the session-index updates waiting (the last step of ``send``)."""
        for _, update in self.sink.take(self.pipeline.topics.memory_index):
            await self.pipeline.apply_index(update)

    @property
    def replies(self) -> list[Reply]:
        """Every reply so far, in order."""
        return [
            Reply.model_validate_json(v) for _, v in self.sink.sent[self.pipeline.topics.replies]
        ]

    @property
    def handoffs(self) -> list[HandoffPacket]:
        """Every hand-off packet so far, in order."""
        topic = self.pipeline.topics.handoffs
        return [HandoffPacket.model_validate_json(v) for _, v in self.sink.sent[topic]]

    @property
    def dead_letters(self) -> list[DeadLetter]:
        """Every dead letter so far, in order."""
        topic = self.pipeline.topics.dead_letters
        return [DeadLetter.model_validate_json(v) for _, v in self.sink.sent[topic]]

    def baton(self, session_id: str) -> Baton | None:
        """The session's baton as the chain left it."""
        return self.pipeline.batons.get(session_id)

    async def aclose(self) -> None:
        """Close the model client and the order source."""
        await self.pipeline.llm.aclose()
        await self.orders.close()


_OWN = frozenset(f.name for f in fields(TestPipeline))

"""The Faust app: topics, changelog-backed tables, one agent per stage; nothing at import."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import faust

from agents.models.llm import LLM
from agents.orders import OrderStore
from streams.kafka.connect import bootstrap_servers
from streams.kafka.faust_consumer import seeking_consumer
from streams.kafka.topics import TopicNames
from streams.observe import web
from streams.observe.dashboard import Recent
from streams.observe.logs import LoggingObserver
from streams.observe.metrics import PrometheusObserver
from streams.observe.observer import CountingObserver, Fanout
from streams.runtime.batons import BATON_TABLE, CUSTOMER_TABLE
from streams.runtime.dead_letters import Source
from streams.runtime.pipeline import Pipeline
from streams.runtime.scheduler import SessionGate, SessionScheduler
from streams.runtime.stages import STAGES, Stage
from streams.settings import Settings

log = logging.getLogger("baton.app")

# The embedded broker answers a fetch only when its wait is up, even if records arrived.
EMBEDDED_FETCH_WAIT_MS = 100


def faust_settings(settings: Settings) -> dict[str, Any]:
    """Faust configuration; the embedded broker gets fast timeouts and one record per batch."""
    conf: dict[str, Any] = {
        "broker": settings.broker,
        "store": "memory://",
        "processing_guarantee": "at_least_once",
        "topic_partitions": settings.partitions,
        "topic_replication_factor": settings.replication_factor,
        "consumer_auto_offset_reset": "earliest",
        "key_serializer": "raw",
        "value_serializer": "raw",
        "web_enabled": True,
        "web_port": settings.web_port,
        "web_bind": settings.web_bind,
        "web_host": settings.web_bind,
        "datadir": str(settings.data_dir / "faust" / settings.app_id),
        "autodiscover": False,
        "producer_acks": -1 if settings.producer_acks == "all" else int(settings.producer_acks),
        "stream_wait_empty": True,
    }
    if settings.embedded_broker:
        # Tansu reports end offsets per batch, so multi-record batches hide a table's last
        # updates from changelog recovery; see README "Embedded broker".
        conf.update(
            broker_session_timeout=3,
            broker_heartbeat_interval=0.5,
            broker_rebalance_timeout=6,
            producer_max_batch_size=1,
        )
    else:
        conf.update(producer_linger=0.005)
    return conf


class FaustSink:
    """Sends through the app's producer and waits for the broker's acknowledgement."""

    def __init__(
        self, app: faust.App, names: TopicNames, partitions: int, bootstrap: str = ""
    ) -> None:
        self.partitions = partitions
        self.bootstrap = bootstrap
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
    ) -> None:
        fut = await self.topics[topic].send(
            key=key.encode() if key is not None else None, value=value, headers=headers
        )
        await fut

    async def contains(
        self, topic: str, key: str, since: datetime, match: Callable[[bytes], bool]
    ) -> bool:
        """Scan ``key``'s partition of ``topic`` from ``since`` to its end for a match."""
        from aiokafka import AIOKafkaConsumer, TopicPartition

        tp = TopicPartition(topic, session_partition(key, self.partitions))
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap, group_id=None, enable_auto_commit=False
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
            while await consumer.position(tp) < end:
                batch = await consumer.getmany(tp, timeout_ms=2000)
                if not batch:
                    return False
                if any(match(r.value) for r in batch.get(tp, []) if r.value is not None):
                    return True
            return False
        finally:
            await consumer.stop()


class FaustSessionTable:
    """A session table: partitioned like the session-keyed topics, so reads are local."""

    def __init__(self, app: faust.App, name: str, partitions: int) -> None:
        self.partitions = partitions
        self.table = app.Table(
            name, default=None, partitions=partitions, key_type=str, value_type=bytes
        )

    def get(self, key: str) -> bytes | None:
        value = self.table.get(key)
        return bytes(value) if value is not None else None

    def put(self, key: str, value: bytes) -> None:
        self.table[key] = value

    async def put_durably(self, key: str, value: bytes) -> None:
        fut = self.table.send_changelog(self.table.partition_for_key(key), key, value)
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

    def __init__(self, app: faust.App, name: str) -> None:
        # Faust's documented setting for a GlobalTable shared by several workers.
        self.table = app.GlobalTable(
            name,
            default=None,
            partitions=1,
            recovery_buffer_size=1,
            use_partitioner=True,
            key_type=str,
            value_type=bytes,
        )

    def get(self, key: str) -> bytes | None:
        value = self.table.get(key)
        return bytes(value) if value is not None else None

    def put(self, key: str, value: bytes) -> None:
        self.table[key] = value


class FaustState:
    """The pipeline's tables as changelog-backed Faust tables of raw JSON bytes."""

    def __init__(self, app: faust.App, partitions: int) -> None:
        self.batons = FaustSessionTable(app, BATON_TABLE, partitions)
        self.customers = FaustIndexTable(app, CUSTOMER_TABLE)


def session_partition(session_id: str, partitions: int) -> int:
    """The partition Kafka's default partitioner gives a session's records."""
    from aiokafka.partitioner import murmur2

    return (murmur2(session_id.encode()) & 0x7FFFFFFF) % partitions


@dataclass
class Runtime:
    """A configured app and the pipeline its agents run."""

    app: faust.App
    pipeline: Pipeline
    sink: FaustSink
    schedulers: dict[str, SessionScheduler]


def _source(event: Any) -> Source:
    msg = event.message
    return Source(topic=msg.topic, partition=msg.partition, offset=msg.offset)


def create_app(settings: Settings, llm: LLM, store: OrderStore) -> Runtime:
    """Build the Faust app with its topics, tables and agents for ``settings``."""
    app = faust.App(settings.app_id, **faust_settings(settings))
    names = TopicNames.of(settings)
    sources = frozenset({names.tickets, *(s.source_topic(names) for s in STAGES)})
    app.transport.Consumer = seeking_consumer(  # type: ignore[misc]
        sources | {names.memory_index},
        fetch_wait_ms=EMBEDDED_FETCH_WAIT_MS if settings.embedded_broker else None,
    )
    sink = FaustSink(app, names, settings.partitions, bootstrap_servers(settings))
    gate = SessionGate(settings.turn_timeout_s)
    schedulers: dict[str, SessionScheduler] = {
        s.name: SessionScheduler(
            s.name, max_running=settings.max_in_flight, max_buffered=settings.max_buffered
        )
        for s in STAGES
    }
    metrics = PrometheusObserver()
    metrics.watch(app, schedulers, names.all(), sessions_open=lambda: len(gate))
    metrics.watch_llm(llm)
    recent = Recent()
    pipeline = Pipeline(
        settings=settings,
        llm=llm,
        store=store,
        sink=sink,
        state=FaustState(app, settings.partitions),
        gate=gate,
        observer=Fanout(CountingObserver(), metrics, LoggingObserver(), recent),
    )
    web.register(app, settings, metrics, recent)

    @app.agent(sink.topics[names.memory_index], name="index")
    async def index(stream: Any) -> None:
        async for event in stream.events():
            await pipeline.apply_index(event.value)

    @app.timer(interval=settings.expiry_interval_s)
    async def expire() -> None:
        owned = {
            tp.partition for tp in app.assignor.assigned_actives() if tp.topic == names.sessions
        }
        expired = await pipeline.expire_sessions(
            lambda sid: session_partition(sid, settings.partitions) in owned
        )
        if expired:
            log.info("expired %d idle sessions", expired)

    @app.agent(sink.topics[names.tickets], name="intake")
    async def intake(stream: Any) -> None:
        async for event in stream.events():
            await pipeline.intake(event.value, _source(event))

    def stage_agent(stage: Stage[Any]) -> None:
        scheduler = schedulers[stage.name]

        async def handle(event: Any) -> None:
            await pipeline.run_stage(stage.name, event.value, _source(event))

        async def agent(stream: Any) -> None:
            await scheduler.run(stream.noack(), handle)

        app.agent(sink.topics[stage.source_topic(names)], name=stage.name)(agent)

    for stage in STAGES:
        stage_agent(stage)

    return Runtime(app=app, pipeline=pipeline, sink=sink, schedulers=schedulers)

"""A worker's Faust agents and timers, each wired to the pipeline it drives."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import faust

from baton_kafka.streams.kafka.topics import TopicNames
from baton_kafka.streams.observe.lag import LagSampler
from baton_kafka.streams.runtime.faust_app.faust_io import FaustSink
from baton_kafka.streams.runtime.intake import session_key
from baton_kafka.streams.runtime.pipeline import Pipeline
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.delivery import Delivery
from baton_kafka.streams.runtime.records.placement import session_partition
from baton_kafka.streams.runtime.session.scheduler import SessionScheduler
from baton_kafka.streams.runtime.stages import Stage
from baton_kafka.streams.settings import Settings

log = logging.getLogger("baton.app")


def source_of(event: Any) -> Source:
    """Where a Faust event's record was read: topic, partition, offset, key, timestamp."""
    msg = event.message
    key = msg.key
    # An unkeyed record names an empty key: it is read from a broker, so its place is checked.
    text = bytes(key).decode("utf-8", "replace") if key is not None else ""
    at = datetime.fromtimestamp(msg.timestamp, UTC) if msg.timestamp else None
    return Source(
        topic=msg.topic,
        partition=msg.partition,
        offset=msg.offset,
        key=text,
        timestamp=at,
        raw_key=None if key is None else bytes(key),
    )


def headers_of(event: Any) -> list[tuple[str, bytes]]:
    """The record's headers as pairs, however the Faust version hands them over."""
    raw = event.message.headers or []
    return list(raw.items()) if isinstance(raw, dict) else [(k, v) for k, v in raw]


class ActivePartitions:
    """The (topic, partition) pairs a worker reads now, not a standby's copies: built again
    only when the group gives the worker a new assignment."""

    def __init__(self, app: faust.App) -> None:
        self.app = app
        self._of: object = None
        self._pairs: frozenset[tuple[str, int]] = frozenset()

    def __call__(self) -> frozenset[tuple[str, int]]:
        assignor = self.app.assignor
        # Faust replaces its assignment object at each rebalance and never changes one in
        # place; without it (another Faust) the pairs are built at every call.
        current = getattr(assignor, "_assignment", None)
        if current is None or current is not self._of:
            actives = assignor.assigned_actives()
            self._pairs = frozenset((tp.topic, tp.partition) for tp in actives)
            self._of = current
        return self._pairs


@dataclass(frozen=True)
class Wiring:
    """What every agent of a worker is wired to: the app, its settings, the pipeline, the sink."""

    app: faust.App
    settings: Settings
    pipeline: Pipeline
    sink: FaustSink
    # Every stage hop asks whether this worker reads a partition: the set is kept per assignment.
    actives: ActivePartitions = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "actives", ActivePartitions(self.app))

    @property
    def names(self) -> TopicNames:
        """The full topic names of the worker's chain."""
        return self.pipeline.topics

    def owns(self, session_id: str) -> bool:
        """This worker reads the session's partition now (not a standby's copy)."""
        return self.reads(self.names.sessions, session_id)

    def reads(self, topic: str, session_id: str) -> bool:
        """This worker reads the session's partition of ``topic`` now (not a standby's copy)."""
        partition = session_partition(session_id, self.settings.partitions)
        return (topic, partition) in self.actives()


def index_agent(w: Wiring) -> None:
    """The agent folding signed session summaries into the customers' index."""

    @w.app.agent(w.sink.topics[w.names.memory_index], name="index")
    async def index(stream: Any) -> None:
        async for event in stream.events():
            await w.pipeline.apply_index(event.value, headers_of(event), source_of(event))


def intake_agent(w: Wiring) -> None:
    """The agent taking raw tickets in: concurrent across sessions, in order within one.

    Forwarding one ticket at a time, each waiting for the broker's acknowledgement, held a
    burst's last tickets back by every earlier ticket's round trip; a session's tickets still
    go out in the order they were read, and each record is acked only after its forward (or
    its dead letter) was acknowledged, in offset order.
    """
    taking = SessionScheduler(
        "intake", max_running=w.settings.max_in_flight, max_buffered=w.settings.max_buffered
    )

    async def take(event: Any) -> None:
        await w.pipeline.intake(event.value, source_of(event), headers_of(event))

    def session(event: Any) -> bytes:
        key = event.message.key
        return session_key(event.value, None if key is None else bytes(key))

    @w.app.agent(w.sink.topics[w.names.tickets], name="intake")
    async def intake(stream: Any) -> None:
        await taking.run(stream.noack(), take, key_of=session)


def decide_agent(w: Wiring) -> None:
    """People's decisions: acked once applied or dead-lettered, concurrent across sessions."""
    deciding = SessionScheduler(
        "decide", max_running=w.settings.max_in_flight, max_buffered=w.settings.max_buffered
    )

    async def decided(event: Any) -> None:
        await w.pipeline.people.handle(event.value, source_of(event), headers_of(event))

    @w.app.agent(w.sink.topics[w.names.decisions], name="decide")
    async def decide(stream: Any) -> None:
        await deciding.run(stream.noack(), decided)


def stage_agent(w: Wiring, stage: Stage[Any], scheduler: SessionScheduler) -> None:
    """The agent running ``stage`` on its source topic through its session scheduler."""
    pipeline = w.pipeline

    # Each record is read once: the admission check, the flood's shedding and the stage
    # share its bytes' one decoding.
    def delivered(event: Any) -> Delivery:
        return Delivery(event.value, source_of(event), headers_of(event))

    async def handle(delivery: Delivery) -> None:
        await pipeline.deliver(stage.name, delivery)

    async def shed(delivery: Delivery) -> None:
        await pipeline.shed_delivery(stage.name, delivery)

    def refused(delivery: Delivery) -> bool:
        return pipeline.refuses_delivery(stage.name, delivery)

    # The first stage's queue of each session is where a burst's tickets wait for its turn.
    bursts = pipeline.bursts if stage.opens_session else None
    arrived = bursts.arrived if bursts is not None else None
    ready = pipeline.quiet if bursts is not None else None

    async def agent(stream: Any) -> None:
        await scheduler.run(stream.noack(), handle, shed, refused, delivered, arrived, ready)

    topic = w.names.role(pipeline.chain.source_role(stage))
    w.app.agent(w.sink.topics[topic], name=stage.name)(agent)


def expiry_timer(w: Wiring) -> None:
    """Every ``BATON_EXPIRY_INTERVAL_S``: expire idle sessions, arm the parked ones' approval
    deadlines, and sweep the index on the worker that writes it."""
    pipeline = w.pipeline

    names = w.names

    @w.app.timer(interval=w.settings.expiry_interval_s)
    async def expire() -> None:
        actives = w.app.assignor.assigned_actives()
        owned = {tp.partition for tp in actives if tp.topic == names.sessions}

        def mine(sid: str) -> bool:
            return session_partition(sid, w.settings.partitions) in owned

        expired = await pipeline.expire_sessions(mine)
        # A start or a rebalance gave this worker parked sessions: their approval deadlines.
        await pipeline.escalations.sweep(mine)
        if expired:
            log.info("expired %d idle sessions", expired)
        # The worker reading the index topic is the index table's one writer: it sweeps it.
        if any(tp.topic == names.memory_index for tp in actives):
            swept = await pipeline.sweep_index()
            if swept.sessions or swept.customers:
                log.info(
                    "dropped %d index entries past the retention, %d customers emptied",
                    swept.sessions,
                    swept.customers,
                )


def lag_task(w: Wiring, lag: LagSampler) -> None:
    """Sample the consumer lag every ``BATON_LAG_INTERVAL_S``."""

    @w.app.task
    async def sample_lag() -> None:
        await lag.run(w.settings.lag_interval_s)

"""What only a real three-node Kafka cluster shows: a leader crash, a rolling restart, scale-out."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from baton_kafka.agents.testing.standin import run_in_thread
from baton_kafka.schemas.records import Reply
from baton_kafka.streams.kafka.kraft import tail
from baton_kafka.streams.kafka.topics import SESSIONS
from tests.fixtures import delivery
from tests.fixtures.brokers import Cluster
from tests.fixtures.data import FOLLOW_UPS, HEADPHONES, KETTLE, OPENING, orders_of, ticket_record
from tests.fixtures.delivery import Tally, figures, settled
from tests.fixtures.deployments import Deployment, WorkerProcess, open_deployment
from tests.fixtures.observability import scrape, total
from tests.fixtures.steps import Steps, within

pytestmark = pytest.mark.integration

STREAM_SESSIONS = 16
# The 12-partition scale-out: each worker makes at most this many model calls at once, so one
# worker's capacity is known (4 calls/s with a 1 s model) and a second worker adds to it.
SCALE_PARTITIONS = 12
SCALE_CONCURRENCY = 4
SCALE_SESSIONS = 24
SCALE_TURNS = 2


def text(session: int, turn: int) -> str:
    """An opening about the session's product, then follow-ups about it."""
    if turn == 0:
        return OPENING[KETTLE if session % 2 == 0 else HEADPHONES]
    return FOLLOW_UPS[(turn - 1) % len(FOLLOW_UPS)]


def ticket_of(prefix: str, session: int, turn: int, customers: str) -> dict[str, Any]:
    """Ticket ``turn`` of session ``<prefix>s<session>``, of customer ``<customers>c<session>``."""
    return ticket_record(
        f"{prefix}t{session}-{turn}",
        f"{prefix}s{session}",
        f"{customers}c{session}",
        text(session, turn),
    )


@dataclass
class SteadyStream:
    """Tickets of ``sessions`` sessions, turn after turn, ``per_tick`` of them each second."""

    deployment: Deployment
    sessions: int
    per_tick: int
    # (when the broker acknowledged it, the ticket), in publication order.
    published: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def tickets(self) -> list[dict[str, Any]]:
        return [t for _, t in self.published]

    def ticket(self, n: int) -> dict[str, Any]:
        p = self.deployment.namespace
        return ticket_of(p, n % self.sessions, n // self.sessions, customers=p)

    def acked_between(self, start: float, end: float) -> int:
        return sum(start < at <= end for at, _ in self.published)

    def acked_after(self, since: float) -> set[str]:
        """Ids of the tickets whose publication was acknowledged after ``since``."""
        return {t["ticket_id"] for at, t in self.published if at > since}

    async def run(self) -> None:
        while not self.stop.is_set():
            tick = time.monotonic()
            n = len(self.published)
            batch = [self.ticket(k) for k in range(n, n + self.per_tick)]
            # Sent one by one and acknowledged by all in-sync replicas: while a partition has no
            # leader the sends wait (the producer retries), as any synchronous producer would.
            await self.deployment.publish_tickets(batch)
            acked = time.time()
            self.published.extend((acked, t) for t in batch)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), max(0.0, 1.0 - (time.monotonic() - tick)))


@contextlib.asynccontextmanager
async def steady_stream(d: Deployment, sessions: int, per_tick: int) -> AsyncIterator[SteadyStream]:
    """Publish a :class:`SteadyStream` in the background for the duration of the block."""
    d.import_orders(o for i in range(sessions) for o in orders_of(f"{d.namespace}c{i}"))
    stream = SteadyStream(d, sessions, per_tick)
    task = asyncio.create_task(stream.run())
    try:
        yield stream
    finally:
        stream.stop.set()
        await task


@dataclass(frozen=True)
class Placement:
    """Where one partition lives: its leader and in-sync replicas (node ids)."""

    leader: int
    isr: frozenset[int]


async def placements(
    bootstrap: str, topics: list[str] | None = None
) -> dict[tuple[str, int], Placement]:
    """Leader and ISR of every partition of ``topics`` (all topics when None), per metadata."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        # Bounded as a whole: a node that accepts connections while it starts or stops may
        # leave a step of the client's start waiting on it.
        async with asyncio.timeout(20):
            await admin.start()
            described = await admin.describe_topics(topics)
    finally:
        await admin.close()
    return {
        (t["topic"], p["partition"]): Placement(p["leader"], frozenset(p["isr"]))
        for t in described
        for p in t["partitions"]
    }


async def back_in_sync(bootstrap: str, node_id: int, timeout: float = 150.0) -> float:
    """Wait until ``node_id`` is in the ISR of every partition in the cluster; seconds waited."""
    started = time.monotonic()
    lagging: list[tuple[str, int]] = []
    while time.monotonic() - started < timeout:
        with contextlib.suppress(Exception):  # a node that is starting may refuse metadata
            found = await placements(bootstrap)
            lagging = [tp for tp, p in found.items() if node_id not in p.isr or p.leader < 0]
            if found and not lagging:
                return time.monotonic() - started
        await asyncio.sleep(0.5)
    raise AssertionError(f"node {node_id} not back in sync after {timeout:.0f}s: {lagging[:10]}")


def replies_of(values: list[bytes]) -> list[Reply]:
    return [Reply.model_validate_json(v) for v in values]


def longest_gap(times: list[float], since: float) -> float:
    """The longest time without a reply from ``since`` to the last reply."""
    after = sorted(t for t in times if t > since)
    return max((b - a for a, b in zip([since, *after], after, strict=False)), default=0.0)


@pytest.mark.timeout(360)
async def test_killing_the_leader_of_a_busy_partition_loses_and_repeats_nothing(
    kafka_cluster: Cluster, tmp_path: Path
) -> None:
    kafka, bootstrap = kafka_cluster.kafka, kafka_cluster.broker.bootstrap
    step = Steps()
    with (
        run_in_thread(latency=0.2) as model,
        open_deployment(kafka_cluster.broker, model.base_url, tmp_path) as d,
    ):
        # Its own budget, below the pytest timeout: a stall fails naming its step (about 35 s
        # is usual), and the deployment above still stops its worker.
        async with within(330, step):
            topic = d.topic(SESSIONS)
            d.start_worker()
            async with steady_stream(d, STREAM_SESSIONS, per_tick=3) as stream:
                await d.read("support.replies", lambda vs: len(vs) >= 10, timeout=150)
                step("first replies", published=len(stream.published))
                # The partition of the re-keyed topic that holds the most tickets so far, and its
                # sessions: replies to their tickets written after the kill show that partition
                # served again.
                keyed = await delivery.drain(d, SESSIONS, quiet=0.5)
                busy, _ = Counter(r.partition for r in keyed).most_common(1)[0]
                there = {r.key.decode() for r in keyed if r.partition == busy and r.key}
                leader = (await placements(bootstrap, [topic]))[(topic, busy)].leader

                assert await asyncio.to_thread(kafka.kill, leader) == -signal.SIGKILL
                killed_at = time.time()
                step(f"node {leader} killed", busy_partition=busy)

                def served_again(values: list[bytes]) -> bool:
                    later = stream.acked_after(killed_at)
                    return any(
                        r.session_id in there and r.ticket_id in later for r in replies_of(values)
                    )

                await d.read("support.replies", served_again, timeout=180)
                step("busy partition served again")
                new_leader = (await placements(bootstrap, [topic]))[(topic, busy)].leader
                assert new_leader not in (leader, -1), "leadership moved to a live node"
                restarted_at = time.time()
                await asyncio.to_thread(kafka.restart, leader)
                in_sync_s = await back_in_sync(bootstrap, leader)
                rejoined_at = time.time()
                step(f"node {leader} back in sync")
                # Tickets go on until replies flow with the node back in the cluster.
                await d.read(
                    "support.replies",
                    lambda vs: any(r.replied_at.timestamp() > rejoined_at for r in replies_of(vs)),
                )

            tally = Tally(
                delivery.sessions(stream.tickets),
                await delivery.replies(d, len(stream.published), timeout=180),
            )
            step("replies read", replies=len(tally.replies))
        tally.assert_exactly_once_in_order()
        published_while_down = stream.acked_between(killed_at, restarted_at)
        assert published_while_down > 0, "tickets kept coming while the node was down"
        times = [r.replied_at.timestamp() for r in tally.replies]
        later = stream.acked_after(killed_at)
        to_later = [r for r in tally.replies if r.ticket_id in later]
        resume_s = min(r.replied_at.timestamp() for r in to_later) - killed_at
        busy_resume_s = (
            min(r.replied_at.timestamp() for r in to_later if r.session_id in there) - killed_at
        )
        # Kafka fences a silent broker after 9 s (broker.session.timeout.ms) and only then
        # drops it from the ISRs, so acks=all writes to every partition wait that long; then
        # the new leaders are elected and the worker finds them.
        assert busy_resume_s < 60, f"the partition was served again {busy_resume_s:.1f}s after"
        figures(
            "kafka cluster: leader of a busy partition killed (-9), then restarted",
            tickets=len(tally.expected),
            sessions=STREAM_SESSIONS,
            lost=len(tally.lost),
            duplicates=len(tally.duplicates),
            reordered_sessions=len(tally.out_of_order()),
            killed_node=leader,
            new_leader=new_leader,
            busy_partition=busy,
            sessions_on_it=len(there),
            published_while_down=published_while_down,
            replied_while_down=sum(killed_at < t <= restarted_at for t in times),
            first_reply_to_a_later_ticket_s=round(resume_s, 1),
            busy_partition_served_again_s=round(busy_resume_s, 1),
            longest_reply_gap_after_kill_s=round(longest_gap(times, killed_at), 1),
            down_s=round(restarted_at - killed_at, 1),
            back_in_isr_s=round(in_sync_s, 1),
            replied_after_rejoin=sum(t > rejoined_at for t in times),
        )


@dataclass(frozen=True)
class Roll:
    """One node's turn in a rolling restart: its exit code and when each step ended."""

    node_id: int
    exit_code: int
    stopping: float
    stopped: float
    answering: float
    in_sync: float


@pytest.mark.timeout(420)
async def test_a_rolling_restart_of_all_brokers_under_load_loses_and_repeats_nothing(
    kafka_cluster: Cluster, tmp_path: Path
) -> None:
    kafka, bootstrap = kafka_cluster.kafka, kafka_cluster.broker.bootstrap
    rolls: list[Roll] = []
    step = Steps()
    with (
        run_in_thread(latency=0.2) as model,
        open_deployment(kafka_cluster.broker, model.base_url, tmp_path) as d,
    ):
        # Its own budget, below the pytest timeout: a stall fails naming its step (about 50 s
        # is usual), and the deployment above still stops its worker.
        async with within(390, step):
            d.start_worker()
            async with steady_stream(d, STREAM_SESSIONS, per_tick=2) as stream:
                await d.read("support.replies", lambda vs: len(vs) >= 6, timeout=150)
                step("first replies", published=len(stream.published))
                for node in list(kafka.members):
                    stopping = time.time()
                    code = await asyncio.to_thread(kafka.kill, node.node_id, signal.SIGTERM)
                    stopped = time.time()
                    # 143: the JVM ran its shutdown hooks on SIGTERM, i.e. a controlled shutdown.
                    assert code == 143, f"node {node.node_id}: exit {code}\n{tail(node.log)}"
                    step(f"node {node.node_id} stopped")
                    await asyncio.to_thread(kafka.restart, node.node_id)
                    answering = time.time()
                    step(f"node {node.node_id} answering")
                    # The next node goes only once this one holds every partition again: with
                    # two replicas out of sync, acks=all writes would be refused (min ISR 2).
                    await back_in_sync(bootstrap, node.node_id)
                    in_sync = time.time()
                    rolls.append(Roll(node.node_id, code, stopping, stopped, answering, in_sync))
                    step(f"node {node.node_id} back in sync", published=len(stream.published))
            step("stream stopped", published=len(stream.published))

            tally = Tally(
                delivery.sessions(stream.tickets),
                await delivery.replies(d, len(stream.published), timeout=180),
            )
            step("replies read", replies=len(tally.replies))
        tally.assert_exactly_once_in_order()
        times = [r.replied_at.timestamp() for r in tally.replies]
        while_down = [sum(r.stopping < t <= r.answering for t in times) for r in rolls]
        # A controlled shutdown hands leadership over first: the worker never stops answering.
        assert all(while_down), f"no reply while a node was down: {while_down}"
        figures(
            "kafka cluster: rolling restart of 3 brokers (SIGTERM) under load",
            tickets=len(tally.expected),
            sessions=STREAM_SESSIONS,
            lost=len(tally.lost),
            duplicates=len(tally.duplicates),
            reordered_sessions=len(tally.out_of_order()),
            stop_s=[round(r.stopped - r.stopping, 1) for r in rolls],
            restart_s=[round(r.answering - r.stopped, 1) for r in rolls],
            back_in_isr_s=[round(r.in_sync - r.answering, 1) for r in rolls],
            roll_s=round(rolls[-1].in_sync - rolls[0].stopping, 1),
            replied_while_each_node_down=while_down,
            longest_reply_gap_s=round(longest_gap(times, rolls[0].stopping), 1),
        )


async def partitions_owned(
    workers: list[WorkerProcess], topic: str, timeout: float = 90.0
) -> list[int]:
    """Partitions of ``topic`` each worker owns (its /metrics), once they split all of them
    and every worker has recovered its tables."""
    deadline = time.monotonic() + timeout
    seen: list[int] = []
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):  # a worker between rebalance and recovery
            samples = [await scrape(w) for w in workers]
            seen = [int(total(s, "baton_partitions_assigned", topic=topic)) for s in samples]
            recovered = all(total(s, "baton_tables_recovered") == 1 for s in samples)
            if recovered and all(seen) and sum(seen) == SCALE_PARTITIONS:
                return seen
        await asyncio.sleep(0.5)
    raise AssertionError(f"the workers never split {topic}'s partitions between them: {seen}")


async def answered_in_order(
    d: Deployment, tickets: list[dict[str, Any]], before: int
) -> list[Reply]:
    """The replies to ``tickets`` (``before`` replies to earlier ones), each once and in order."""
    everything = await delivery.replies(d, before + len(tickets), timeout=240)
    ids = {t["ticket_id"] for t in tickets}
    mine = [r for r in everything if r.ticket_id in ids]
    Tally(delivery.sessions(tickets), mine).assert_exactly_once_in_order()
    assert all(r.status == "answered" for r in mine), Counter(r.status for r in mine)
    return mine


@pytest.mark.timeout(480)
async def test_one_two_three_workers_on_twelve_partitions_rebalance_and_report_throughput(
    kafka_cluster: Cluster, tmp_path: Path
) -> None:
    with (
        run_in_thread(latency=1.0) as model,
        open_deployment(
            kafka_cluster.broker,
            model.base_url,
            tmp_path,
            BATON_PARTITIONS=str(SCALE_PARTITIONS),
            BATON_MODEL_CONCURRENCY=str(SCALE_CONCURRENCY),
        ) as d,
    ):
        p = d.namespace
        topic = d.topic(SESSIONS)
        # Session i of every round belongs to customer i.
        d.import_orders(o for i in range(SCALE_SESSIONS) for o in orders_of(f"{p}c{i}"))

        def round_of(name: str) -> list[dict[str, Any]]:
            return [
                ticket_of(f"{p}{name}", i, turn, customers=p)
                for turn in range(SCALE_TURNS)
                for i in range(SCALE_SESSIONS)
            ]

        workers: list[WorkerProcess] = []
        owned: dict[str, list[int]] = {}
        rates: dict[int, float] = {}
        answered = 0
        for n in (1, 2, 3):
            workers.append(d.start_worker())
            await settled(workers)
            owned[f"{n} workers"] = await partitions_owned(workers, topic)
            tickets = round_of(f"r{n}")
            started = time.time()
            await d.publish_tickets(tickets)
            mine = await answered_in_order(d, tickets, answered)
            answered += len(tickets)
            rates[n] = len(tickets) / (max(r.replied_at.timestamp() for r in mine) - started)

        # Every worker added takes its share of the partitions. What each one adds in tickets
        # per second depends on the machine (on two cores a third worker competes with three
        # brokers for the CPU): the figures below report it, and `baton bench` measures it.
        for n in (1, 2, 3):
            split = owned[f"{n} workers"]
            assert len(split) == n and all(split) and sum(split) == SCALE_PARTITIONS, owned
        assert rates[2] > rates[1], rates  # a second worker doubles the model calls in flight

        # A worker leaves with tickets in flight: the two others take its partitions over.
        tickets = round_of("leave")
        await d.publish_tickets(tickets)
        await d.read("support.replies", lambda vs: len(vs) >= answered + len(tickets) // 3)
        workers[-1].stop()
        left_at = time.time()
        await settled(workers[:-1])
        owned["after one left"] = await partitions_owned(workers[:-1], topic)
        mine = await answered_in_order(d, tickets, answered)
        assert (
            len(owned["after one left"]) == 2 and sum(owned["after one left"]) == SCALE_PARTITIONS
        )
        figures(
            "kafka cluster: 1, 2, 3 workers on 12 partitions (model 1 s a call)",
            tickets_per_round=len(tickets),
            sessions=SCALE_SESSIONS,
            model_concurrency_per_worker=SCALE_CONCURRENCY,
            tickets_per_s={n: round(r, 2) for n, r in rates.items()},
            partitions_per_worker=owned,
            replied_after_one_left=sum(r.replied_at.timestamp() > left_at for r in mine),
            max_calls_in_flight=model.stats()["max_in_flight"],
        )

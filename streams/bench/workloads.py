"""One ``baton bench`` workload: start the processes, warm up, send, collect, measure."""

from __future__ import annotations

import asyncio
import os
import time
import urllib.request
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from baton_kafka.agents.orders import open_store
from baton_kafka.schemas.records import Order, Reply, Ticket
from baton_kafka.streams.bench.bursts import floor, in_bursts, split, spread
from baton_kafka.streams.bench.chains import chain_topics
from baton_kafka.streams.bench.kafka import (
    Collector,
    Publisher,
    create_topics,
    reply_ids,
    stage_record_ids,
)
from baton_kafka.streams.bench.load import Workload
from baton_kafka.streams.bench.procs import BenchError, Child, Sampler, spawn, start_standin
from baton_kafka.streams.bench.report import (
    Measured,
    breakdown,
    delivery_row,
    describe,
    phases,
    split_cpu,
)
from baton_kafka.streams.bench.stats import Row, first_and_last_tenth, rss_drift
from baton_kafka.streams.jsonl import Progress
from baton_kafka.streams.kafka.embedded import free_port
from baton_kafka.streams.kafka.topics import TopicNames, ensure_topics
from baton_kafka.streams.runtime.faust_app.spawn import child_env, spawn_worker
from baton_kafka.streams.runtime.worker import build_llm
from baton_kafka.streams.settings import Settings

WARM_SESSIONS_PER_PARTITION = 3
STALL_S = 120.0
QUIET_S = 3.0
# Session lengths at which the soak reports the size of one long session's baton.
BATON_MARKS = {1, 5, 20, 50, 100, 200, 300}


@dataclass
class Context:
    """What every workload of one run shares."""

    settings: Settings
    embedded: bool
    workdir: Path
    workers: int
    # The broker's processes (the JVMs of a Kafka cluster); none when it runs elsewhere.
    broker_pids: Callable[[], list[int]] = list
    notes: list[str] = field(default_factory=list)

    def space(self, name: str) -> Settings:
        """Settings of a fresh namespace (topics, group, tables) for one workload."""
        namespace = f"bench{uuid.uuid4().hex[:6]}-{name}"
        data = self.workdir / namespace
        data.mkdir(parents=True)
        return self.settings.with_(namespace=namespace, data_dir=data)

    def child(self, s: Settings) -> Settings:
        """Settings of a child process in namespace ``s``: its own web port, the offline
        model and no credentials; no coalescing window (a workload sends a session's tickets
        at once and times each one's own reply)."""
        return s.with_(
            coalesce_window_s=0.0,
            orders_dsn=s.orders_url,
            orders_source="",
            orders_map="",
            log_level="info",
            web_port=free_port(),
            embedded_broker=self.embedded or s.embedded_broker,
            llm="offline",
            anthropic_api_key=None,
            anthropic_base_url=None,
        )


def _broker_cpu(ctx: Context) -> float | None:
    from baton_kafka.streams.bench.stats import processes_cpu

    return processes_cpu(ctx.broker_pids())


async def _import_orders(s: Settings, orders: list[Order]) -> None:
    store = open_store(s.orders_url)
    try:
        for start in range(0, len(orders), 1000):
            await store.upsert(orders[start : start + 1000])
    finally:
        await store.close()


def _standin_stats(base_url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{base_url}/_control/stats", timeout=10) as response:
        data: dict[str, Any] = orjson.loads(response.read())
    data.pop("requests", None)
    return data


async def _timed(
    ctx: Context,
    collector: Collector,
    publisher: Publisher,
    tickets: list[Ticket],
    measured: list[Child],
    others: Mapping[str, Child],
    pace: float | None = None,
) -> Measured:
    """Publish ``tickets`` (all at once, or ``pace`` per second) and wait for every output."""
    ids = {t.ticket_id for t in tickets}
    progress = Progress(len(ids), "answered", min_total=1)
    collector.on_new = lambda n: progress.advance(min(n, len(ids) - progress.done))
    before = sum(c.cpu() for c in measured)
    other_before = {name: c.cpu() for name, c in others.items()}
    broker_before = _broker_cpu(ctx)
    started = time.time()
    if pace is None:
        await publisher.send(tickets)
    else:
        for i in range(0, len(tickets), max(1, int(pace / 10))):
            due = started + i / pace
            await asyncio.sleep(max(0.0, due - time.time()))
            await publisher.send(tickets[i : i + max(1, int(pace / 10))])
    complete = await collector.wait_for(
        ids, stall_s=STALL_S, children=[*measured, *others.values()]
    )
    finished = time.time()
    cpu = sum(c.cpu() for c in measured) - before
    other = {name: c.cpu() - other_before[name] for name, c in others.items()}
    broker_after = _broker_cpu(ctx)
    if broker_before is not None and broker_after is not None:
        other["broker"] = broker_after - broker_before
    collector.on_new = None
    if progress.done < len(ids):
        progress.stream.write("\n")
    return Measured(started, finished, complete, cpu, other, dict(publisher.sent_at))


def _cores() -> int:
    """The cores this process (and the children it starts) may run on."""
    return len(os.sched_getaffinity(0))


def _warm_tickets(s: Settings) -> Workload:
    return Workload("warm", WARM_SESSIONS_PER_PARTITION * s.partitions, 1)


async def _warm_up(
    collector: Collector, publisher: Publisher, warm: list[Ticket], children: list[Child]
) -> None:
    await publisher.send(warm)
    ok = await collector.wait_for(
        {t.ticket_id for t in warm}, stall_s=180.0, children=children, deadline_s=300.0
    )
    if not ok:
        logs = "\n".join(c.tail() for c in children)
        raise BenchError(f"warm-up tickets got no output in time:\n{logs}")
    publisher.sent_at.clear()


def soak_expiry(sessions: int, rate: float) -> tuple[float, float]:
    """Session TTL and expiry sweep interval of a soak: three waves of its sessions idle."""
    wave_s = sessions / rate
    return max(60.0, round(3 * wave_s)), 10.0


async def pipeline(
    ctx: Context,
    name: str,
    *,
    sessions: int,
    per_session: int,
    latency: float | None,
    soak_s: float | None = None,
    rate: float | None = None,
    split_client: bool = False,
    burst: int | None = None,
) -> Row:
    """Run the baton pipeline (stand-in model at ``latency`` s, or offline when None);
    ``split_client``: also split the worker's CPU with the model's client against the stand-in;
    ``burst``: publish the tickets in bursts of that many, each once the one before is answered."""
    s = ctx.space(name)
    load = Workload(name, sessions, per_session)
    warm = _warm_tickets(s)
    await _import_orders(s, load.orders() + warm.orders())
    await ensure_topics(s)
    names = TopicNames.of(s)
    others: dict[str, Child] = {}
    worker_settings = ctx.child(s)
    base_url = ""
    warm_stats: dict[str, Any] = {"calls": 0}
    ttl_s, sweep_s = soak_expiry(sessions, rate or 1.0)
    if soak_s is not None:
        # Idle sessions must expire within the soak, as they would within days in production
        # (BATON_SESSION_TTL): the live sessions then stay as many as the traffic keeps busy.
        worker_settings = worker_settings.with_(session_ttl_s=ttl_s, expiry_interval_s=sweep_s)
    if latency is not None:
        standin, base_url = start_standin(
            latency, child_env(worker_settings), s.data_dir / "standin.log"
        )
        others["stand-in"] = standin
        worker_settings = worker_settings.with_(
            llm="anthropic",
            anthropic_api_key="sk-bench-not-a-real-key",
            anthropic_base_url=base_url,
        )
    workers = []
    for i in range(ctx.workers):
        log = s.data_dir / f"worker-{i}.log"
        workers.append(Child(f"worker {i}", spawn_worker(worker_settings, log), log))
    collector = Collector(s, names.replies, reply_ids)
    sampler = Sampler(workers, interval=2.0 if soak_s else 0.5)
    try:
        await collector.start()
        async with Publisher(s, names.tickets) as publisher:
            await _warm_up(collector, publisher, warm.tickets(), [*workers, *others.values()])
            # Tickets published and not answered yet: what waits in the worker and the broker.
            sampler.backlog = lambda: max(0, len(publisher.sent_at) - len(collector.seen))
            if latency is not None:
                warm_stats = _standin_stats(base_url)
            sampler.start()
            if soak_s is None:
                tickets = load.tickets()
                bursts = split(tickets, burst or len(tickets))

                def timed(part: list[Ticket]) -> Awaitable[Measured]:
                    # A light load (``rate``) paces the tickets; otherwise all go at once.
                    return _timed(ctx, collector, publisher, part, workers, others, pace=rate)

                m = await (in_bursts(timed, bursts) if len(bursts) > 1 else timed(tickets))
            else:
                assert rate is not None
                tickets = load.take(int(soak_s * rate))
                m = await _timed(ctx, collector, publisher, tickets, workers, others, pace=rate)
            await asyncio.sleep(QUIET_S)
        await sampler.stop()
        row, first = delivery_row(name, m, collector.outputs, tickets, sessions)
        if soak_s is None and len(bursts) > 1:
            row.extra["bursts"] = spread(bursts, first, m.sent_at)
            cpu = {"worker": row.cpu_ms_per_ticket, **row.extra["other_cpu_ms_per_ticket"]}
            if "broker" in cpu and (low := floor(len(bursts[0]), cpu, _cores())):
                row.extra["bursts"]["floor"] = low
        peaks = [mem[1] for w in workers if (mem := w.memory())]
        row.peak_rss_mib = max(peaks, default=None)
        replies = {t: Reply.model_validate_json(o.value) for t, o in first.items()}
        row.extra.update(phases(tickets, first, replies, m.sent_at))
        await describe(s, row, tickets, replies, load.orders(), len(warm.tickets()))
        several = bursts if soak_s is None and len(bursts) > 1 else ()
        parts = await breakdown(s, tickets, first, m.sent_at, latency, several)
        if by_phase := parts.pop("phases_p50_ms", None):
            row.extra["bursts"]["phases_p50_ms"] = by_phase
        row.extra.update(parts)
        if latency is not None:
            stats = _standin_stats(base_url)
            row.extra["model_calls_seen_by_standin"] = stats["calls"] - warm_stats["calls"]
            row.extra["model_calls_in_flight_max"] = stats["max_in_flight"]
            row.extra["model_latency_s"] = latency
            if split_client:
                await _client_split(worker_settings, row, tickets)
        if soak_s is not None:
            # Warm-up: the first block of sessions, then their expiry.
            settle_s = sessions * per_session / (rate or 1.0) + ttl_s + 2 * sweep_s
            warmup_s = min(settle_s, soak_s / 3)
            drift = rss_drift(sampler.samples, warmup_s=warmup_s)
            row.extra["rss_samples_mib"] = [(round(t), round(v, 1)) for t, v in sampler.samples]
            row.extra["backlog_samples"] = [(round(t), n) for t, n in sampler.backlog_samples]
            backlog = first_and_last_tenth(sampler.backlog_samples, warmup_s)
            row.extra["target_rate"] = rate
            row.extra["session_ttl_s"] = ttl_s
            row.extra["customers"] = sessions
            row.extra["sessions"] = len({t.session_id for t in tickets})
            if drift is not None:
                row.extra["rss_drift"] = {
                    "start_mib": round(drift.start_mib, 1),
                    "end_mib": round(drift.end_mib, 1),
                    "low_mib": round(drift.low_mib, 1),
                    "high_mib": round(drift.high_mib, 1),
                    "change": round(drift.change, 4),
                    "flat_within_10pct": drift.flat,
                }
            if backlog is not None:
                row.extra["backlog_tickets"] = {
                    "start": round(backlog[0]),
                    "end": round(backlog[1]),
                }
    finally:
        await sampler.stop()
        await collector.stop()
        for child in [*workers, *others.values()]:
            child.stop()
    try:
        await _in_process(s, row, load, tickets, offline=latency is None, soak=soak_s is not None)
    except Exception as exc:
        # These figures come from running the pipeline's code in this process: a failure
        # there must not throw away what the worker run measured.
        row.extra["in_process_error"] = f"{type(exc).__name__}: {exc}"
    return row


async def _client_split(s: Settings, row: Row, tickets: list[Ticket]) -> None:
    """The CPU split with the worker's own model client, against the stand-in still running:
    what the client (the SDK, its HTTP stack) costs in the worker's process per ticket."""
    llm = build_llm(s)
    try:
        await split_cpu(s, row, tickets, model=llm)
    except Exception as exc:
        # As below: the worker run's figures stand without the split.
        row.extra["in_process_error"] = f"{type(exc).__name__}: {exc}"
    finally:
        await llm.aclose()


async def _in_process(
    s: Settings, row: Row, load: Workload, tickets: list[Ticket], *, offline: bool, soak: bool
) -> None:
    """The CPU split of an offline run; a long session's baton sizes after a soak."""
    from baton_kafka.streams.bench.inproc import baton_growth

    if offline and row.cpu_ms_per_ticket is not None:
        await split_cpu(s, row, tickets)
    if soak:
        turns = max(BATON_MARKS)
        growth = await baton_growth(s, [load.ticket(0, i) for i in range(turns)], BATON_MARKS)
        row.extra["baton_bytes_by_session_length"] = {str(k): v for k, v in sorted(growth.items())}


async def chain(ctx: Context, kind: str, *, sessions: int, per_session: int) -> Row:
    """A reference chain (``faust`` or ``aiokafka``) over the same tickets as the pipeline."""
    s = ctx.space(f"ref-{kind}")
    load = Workload("cpu", sessions, per_session)
    warm = _warm_tickets(s)
    topics = chain_topics(s, kind)
    await create_topics(s, topics, s.partitions, s.replication_factor)
    child = spawn(
        f"{kind} chain",
        ["-m", "baton_kafka.streams.bench.chains", kind],
        child_env(ctx.child(s)),
        s.data_dir / f"{kind}.log",
    )
    collector = Collector(s, topics[-1], stage_record_ids)
    sampler = Sampler([child])
    try:
        await collector.start()
        async with Publisher(s, topics[0]) as publisher:
            await _warm_up(collector, publisher, warm.tickets(), [child])
            sampler.start()
            tickets = load.tickets()
            m = await _timed(ctx, collector, publisher, tickets, [child], {})
            await asyncio.sleep(QUIET_S)
        await sampler.stop()
        label = {"faust": "cpu: bare Faust chain", "aiokafka": "cpu: plain aiokafka chain"}[kind]
        row, _ = delivery_row(label, m, collector.outputs, tickets, sessions)
        mem = child.memory()
        row.peak_rss_mib = mem[1] if mem else None
        return row
    finally:
        await sampler.stop()
        await collector.stop()
        child.stop()

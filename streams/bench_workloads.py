"""One ``baton bench`` workload: start the processes, warm up, send, collect, measure."""

from __future__ import annotations

import asyncio
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agents.orders import open_store
from schemas.baton import Baton
from schemas.records import DeadLetter, Order, Reply, Ticket
from streams.bench_chains import chain_topics
from streams.bench_load import Workload, prompt_sizes
from streams.bench_run import (
    BenchError,
    Child,
    Collector,
    Output,
    Publisher,
    Sampler,
    child_env,
    create_topics,
    latest_values,
    read_topic,
    read_topics,
    reply_ids,
    spawn,
    stage_record_ids,
    start_standin,
    topics_named,
)
from streams.bench_stats import (
    Row,
    check_delivery,
    counts,
    percentile,
    rss_drift,
    split_sessions,
    steady_rate,
)
from streams.broker import free_port
from streams.jsonl import Progress
from streams.settings import Settings
from streams.topics import TopicNames, ensure_topics

WARM_SESSIONS_PER_PARTITION = 3
STALL_S = 120.0
QUIET_S = 3.0


@dataclass
class Context:
    """What every workload of one run shares."""

    settings: Settings
    bootstrap: str
    embedded: bool
    workdir: Path
    workers: int
    env: Mapping[str, str]
    broker_pid: int | None = None
    notes: list[str] = field(default_factory=list)

    def space(self, name: str) -> Settings:
        """Settings of a fresh namespace (topics, group, tables) for one workload."""
        namespace = f"bench{uuid.uuid4().hex[:6]}-{name}"
        data = self.workdir / namespace
        data.mkdir(parents=True)
        return self.settings.with_(namespace=namespace, data_dir=data)

    def child_env(self, s: Settings, **extra: str) -> dict[str, str]:
        values = {
            "BATON_BROKER": s.broker,
            "BATON_NAMESPACE": s.namespace,
            "BATON_DATA_DIR": str(s.data_dir),
            "BATON_ORDERS_DSN": s.orders_url,
            "BATON_PARTITIONS": str(s.partitions),
            "BATON_LOG_LEVEL": "info",
            "BATON_WEB_PORT": str(free_port()),
        }
        if self.embedded:
            values["BATON_EMBEDDED_BROKER"] = "1"
        return child_env(self.env, **{**values, **extra})


def _broker_cpu(ctx: Context) -> float | None:
    from streams.bench_stats import cpu_seconds

    return cpu_seconds(ctx.broker_pid) if ctx.broker_pid else None


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


@dataclass
class Measured:
    """What one timed phase produced."""

    started: float
    finished: float
    complete: bool
    cpu_s: float
    other_cpu: dict[str, float]
    sent_at: dict[str, float]


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


def _latency_row(
    name: str, m: Measured, collector: Collector, tickets: list[Ticket], sessions: int
) -> tuple[Row, dict[str, Output]]:
    ids = {t.ticket_id for t in tickets}
    published: dict[str, list[str]] = {}
    for t in tickets:
        published.setdefault(t.session_id, []).append(t.ticket_id)
    outputs = [o for o in collector.outputs if o.ticket_id in ids]
    delivery = check_delivery(published, ((o.session_id, o.ticket_id) for o in outputs))
    first: dict[str, Output] = {}
    for o in outputs:
        first.setdefault(o.ticket_id, o)
    latencies = [o.produced_at - m.sent_at[t] for t, o in first.items() if t in m.sent_at]
    done_at = [o.produced_at for o in first.values()]
    last = max(done_at, default=m.finished)
    seconds = last - m.started
    n = len(first)
    row = Row(
        workload=name,
        tickets=len(tickets),
        seconds=round(seconds, 2),
        rate=n / seconds if seconds > 0 else None,
        steady_rate=steady_rate(done_at),
        p50_s=percentile(latencies, 50),
        p95_s=percentile(latencies, 95),
        p99_s=percentile(latencies, 99),
        cpu_ms_per_ticket=1000 * m.cpu_s / n if n else None,
        order_violations=delivery.order_violations,
        lost=len(delivery.lost),
        duplicates=delivery.duplicates,
    )
    row.extra.update(
        sessions=sessions,
        sessions_out_of_order=delivery.sessions_out_of_order,
        sessions_split_over_partitions=split_sessions((o.session_id, o.partition) for o in outputs),
        lost_ids=delivery.lost[:20],
        complete=m.complete,
        other_cpu_ms_per_ticket={k: round(1000 * v / n, 2) for k, v in m.other_cpu.items()}
        if n
        else {},
    )
    return row, first


async def pipeline(
    ctx: Context,
    name: str,
    *,
    sessions: int,
    per_session: int,
    latency: float | None,
    soak_s: float | None = None,
    rate: float | None = None,
) -> Row:
    """Run the baton pipeline (stand-in model at ``latency`` s, or offline when None)."""
    s = ctx.space(name)
    load = Workload(name, sessions, per_session)
    warm = _warm_tickets(s)
    await _import_orders(s, load.orders() + warm.orders())
    await ensure_topics(s, ctx.bootstrap)
    names = TopicNames.of(s)
    others: dict[str, Child] = {}
    extra: dict[str, str] = {"BATON_LLM": "offline"}
    base_url = ""
    warm_stats: dict[str, Any] = {"calls": 0}
    if latency is not None:
        standin, base_url = start_standin(latency, ctx.child_env(s), s.data_dir / "standin.log")
        others["stand-in"] = standin
        extra = {
            "BATON_LLM": "anthropic",
            "ANTHROPIC_API_KEY": "sk-bench-not-a-real-key",
            "ANTHROPIC_BASE_URL": base_url,
        }
    workers = [
        spawn(
            f"worker {i}",
            ["-m", "streams.cli", "worker"],
            ctx.child_env(s, **extra),
            s.data_dir / f"worker-{i}.log",
        )
        for i in range(ctx.workers)
    ]
    collector = Collector(ctx.bootstrap, names.replies, reply_ids)
    sampler = Sampler(workers, interval=2.0 if soak_s else 0.5)
    try:
        await collector.start()
        async with Publisher(ctx.bootstrap, names.tickets) as publisher:
            await _warm_up(collector, publisher, warm.tickets(), [*workers, *others.values()])
            if latency is not None:
                warm_stats = _standin_stats(base_url)
            sampler.start()
            if soak_s is None:
                tickets = load.tickets()
                m = await _timed(ctx, collector, publisher, tickets, workers, others)
            else:
                assert rate is not None
                endless = load.endless()
                tickets = [next(endless) for _ in range(int(soak_s * rate))]
                m = await _timed(ctx, collector, publisher, tickets, workers, others, pace=rate)
            await asyncio.sleep(QUIET_S)
        await sampler.stop()
        row, first = _latency_row(name, m, collector, tickets, sessions)
        peaks = [mem[1] for w in workers if (mem := w.memory())]
        row.peak_rss_mib = max(peaks, default=None)
        replies = {t: Reply.model_validate_json(o.value) for t, o in first.items()}
        row.extra.update(_phases(tickets, first, replies, m.sent_at))
        await _describe(ctx, s, row, tickets, replies, load.orders())
        if latency is not None:
            stats = _standin_stats(base_url)
            row.extra["model_calls_seen_by_standin"] = stats["calls"] - warm_stats["calls"]
            row.extra["model_calls_in_flight_max"] = stats["max_in_flight"]
            row.extra["model_latency_s"] = latency
        if soak_s is not None:
            drift = rss_drift(sampler.samples, warmup_s=min(60.0, soak_s / 5))
            row.extra["rss_samples_mib"] = [(round(t), round(v, 1)) for t, v in sampler.samples]
            row.extra["target_rate"] = rate
            if drift is not None:
                row.extra["rss_drift"] = {
                    "start_mib": round(drift.start_mib, 1),
                    "end_mib": round(drift.end_mib, 1),
                    "low_mib": round(drift.low_mib, 1),
                    "high_mib": round(drift.high_mib, 1),
                    "change": round(drift.change, 4),
                    "flat_within_10pct": drift.flat,
                }
    finally:
        await sampler.stop()
        await collector.stop()
        for child in [*workers, *others.values()]:
            child.stop()
    if latency is None and row.cpu_ms_per_ticket is not None:
        await _split_cpu(s, row, tickets)
    return row


async def _split_cpu(s: Settings, row: Row, tickets: list[Ticket]) -> None:
    """Add how much of the worker's CPU the stages' code and the model account for."""
    from streams.bench_inproc import measure

    cost = await measure(s, tickets)
    n = cost.replies or 1
    stages_ms = 1000 * (cost.total_s - cost.model_s) / n
    model_ms = 1000 * cost.model_s / n
    assert row.cpu_ms_per_ticket is not None
    row.extra["cpu_split_ms_per_ticket"] = {
        "model": round(model_ms, 3),
        "stages_without_model": round(stages_ms, 3),
        "transport_and_tables": round(row.cpu_ms_per_ticket - stages_ms - model_ms, 3),
        "in_process_replies": cost.replies,
    }


def _spread(values: list[float]) -> dict[str, float | None]:
    return {
        f"p{q}": round(v, 3) if (v := percentile(values, q)) is not None else None for q in (50, 95)
    }


def _phases(
    tickets: list[Ticket],
    first: Mapping[str, Output],
    replies: Mapping[str, Reply],
    sent_at: Mapping[str, float],
) -> dict[str, Any]:
    """Where the time went: waiting before intake, inside the worker, and per turn.

    A turn runs from the later of the ticket's publication and the previous reply of its
    session to its own reply: the time the pipeline needed for that ticket alone.
    """
    before, inside, turns = [], [], []
    previous: dict[str, float] = {}
    for t in tickets:
        out, reply = first.get(t.ticket_id), replies.get(t.ticket_id)
        if out is None or reply is None or t.ticket_id not in sent_at:
            continue
        total = out.produced_at - sent_at[t.ticket_id]
        worker = reply.timings_ms.get("end_to_end")
        if worker is not None:
            inside.append(worker / 1000)
            before.append(total - worker / 1000)
        start = max(sent_at[t.ticket_id], previous.get(t.session_id, 0.0))
        turns.append(out.produced_at - start)
        previous[t.session_id] = out.produced_at
    return {
        "wait_before_intake_s": _spread(before),
        "worker_end_to_end_s": _spread(inside),
        "turn_s": _spread(turns),
    }


async def _describe(
    ctx: Context,
    s: Settings,
    row: Row,
    tickets: list[Ticket],
    replies: dict[str, Reply],
    orders: list[Order],
) -> None:
    """Fill in calls, tokens, statuses, dead letters and baton sizes from what was written."""
    n = len(replies) or 1
    usage = [r.usage for r in replies.values()]
    row.calls_per_ticket = sum(u.calls for u in usage) / n
    prompt = sum(u.input_tokens + u.cache_read_tokens + u.cache_write_tokens for u in usage)
    row.tokens_per_ticket = prompt / n
    row.extra["output_tokens_per_ticket"] = round(sum(u.output_tokens for u in usage) / n, 1)
    row.extra["statuses"] = counts(r.status for r in replies.values())
    wanted = {t.ticket_id for t in tickets}
    letters = [
        DeadLetter.model_validate_json(v)
        for _, v in await read_topic(ctx.bootstrap, TopicNames.of(s).dead_letters)
        if v
    ]
    row.extra["dead_letters"] = counts(d.reason for d in letters if d.ticket_id in wanted)
    topics = await topics_named(ctx.bootstrap, (f"{s.namespace}.", f"{s.app_id}-"))
    written = Counter(topic for topic, _, _ in await read_topics(ctx.bootstrap, topics))
    total = len(tickets) + WARM_SESSIONS_PER_PARTITION * s.partitions
    row.extra["kafka_records_per_ticket"] = {
        "total": round(sum(written.values()) / total, 2),
        **{
            t.removeprefix(f"{s.namespace}.").removeprefix(f"{s.app_id}-"): round(n / total, 2)
            for t, n in sorted(written.items())
        },
    }
    raw = await latest_values(ctx.bootstrap, f"{s.app_id}-batons-changelog")
    batons = {}
    for value in raw.values():
        baton = Baton.model_validate_json(value)
        if baton.session_id.startswith(f"{row.workload}-"):
            batons[baton.session_id] = (baton, len(value))
    if batons:
        sizes = [size for _, size in batons.values()]
        row.extra["baton_bytes"] = {
            "mean": round(sum(sizes) / len(sizes)),
            "max": max(sizes),
            "tickets_per_session": round(
                sum(len(b.tickets) for b, _ in batons.values()) / len(batons), 1
            ),
        }
    if row.tokens_per_ticket:
        sizes_ = prompt_sizes(
            tickets,
            replies,
            {k: b for k, (b, _) in batons.items()},
            {o.order_id: o for o in orders},
        )
        row.extra["prompt"] = {
            "sent_tokens": sizes_.sent,
            "minimal_tokens": sizes_.minimal,
            "ratio": round(sizes_.ratio, 3) if sizes_.ratio else None,
            "context_tokens": sizes_.sent_context,
            "minimal_context_tokens": sizes_.minimal_context,
            "context_ratio": round(sizes_.context_ratio, 3) if sizes_.context_ratio else None,
            "cache_read_share": round(sizes_.cache_share, 3) if sizes_.cache_share else 0.0,
        }


async def chain(ctx: Context, kind: str, *, sessions: int, per_session: int) -> Row:
    """A reference chain (``faust`` or ``aiokafka``) over the same tickets as the pipeline."""
    s = ctx.space(f"ref-{kind}")
    load = Workload("cpu", sessions, per_session)
    warm = _warm_tickets(s)
    topics = chain_topics(s, kind)
    await create_topics(ctx.bootstrap, topics, s.partitions)
    child = spawn(
        f"{kind} chain",
        ["-m", "streams.bench_chains", kind],
        ctx.child_env(s),
        s.data_dir / f"{kind}.log",
    )
    collector = Collector(ctx.bootstrap, topics[-1], stage_record_ids)
    sampler = Sampler([child])
    try:
        await collector.start()
        async with Publisher(ctx.bootstrap, topics[0]) as publisher:
            await _warm_up(collector, publisher, warm.tickets(), [child])
            sampler.start()
            tickets = load.tickets()
            m = await _timed(ctx, collector, publisher, tickets, [child], {})
            await asyncio.sleep(QUIET_S)
        await sampler.stop()
        label = {"faust": "cpu: bare Faust chain", "aiokafka": "cpu: plain aiokafka chain"}[kind]
        row, _ = _latency_row(label, m, collector, tickets, sessions)
        mem = child.memory()
        row.peak_rss_mib = mem[1] if mem else None
        return row
    finally:
        await sampler.stop()
        await collector.stop()
        child.stop()

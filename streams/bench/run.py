"""``baton bench``: throughput, latency, CPU, memory and prompt size of one worker, measured.

Workloads: ``latency`` (the Messages-API stand-in answering after ``--latency`` s), ``cpu`` (the
offline model, next to a bare Faust chain and a plain aiokafka chain over the same records),
``tokens`` (prompt tokens against the smallest prompts with the same facts) and ``soak`` (worker
memory at a steady rate). The run starts its own broker (``tansu``, the embedded one, a one-node
Apache Kafka or a three-node one replicating every topic three times) unless ``BATON_BROKER`` is
set.
"""

from __future__ import annotations

import asyncio
import os
import platform
import shutil
import sys
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from baton_kafka.streams.jit import DEFAULT_JIT
from baton_kafka.streams.settings import Settings

if TYPE_CHECKING:
    from baton_kafka.streams.bench.stats import Row

WORKLOADS = ("latency", "cpu", "tokens", "soak", "overhead", "scale")
# ``all`` runs these; ``overhead`` and ``scale`` are asked for by name.
DEFAULT_WORKLOADS = ("latency", "cpu", "tokens", "soak")
DEFAULT_SESSIONS = {
    "latency": 600,
    "cpu": 600,
    "tokens": 200,
    "soak": 600,
    "overhead": 30,
    "scale": 600,
}
DEFAULT_PER_SESSION = 5
DEFAULT_SOAK_RATE = 50.0
# The overhead workload's light load: one ticket at a time, then one burst over 30 sessions.
OVERHEAD_RATE = 2.0
BURST_SESSIONS = 30
# One burst is one sample of a noisy machine: the overhead workload measures several.
BURSTS = 5
# Seconds of traffic an Apache Kafka the bench started gets before anything is measured: a
# broker measured cold spent about twice the CPU a second on the one-at-a-time tickets.
WARM_BROKER_S = 20.0
# The scale-out workload: this many partitions, then 1, 2 and 3 workers in turn.
SCALE_PARTITIONS = 12
SCALE_WORKERS = (1, 2, 3)
BROKERS = ("tansu", "kafka")
# Besides: three Apache Kafka nodes, every topic replicated three times and written with
# acks=all (two replicas in sync at least), as the cluster's integration tests run it. Not
# part of ``--broker both``: three JVMs take a third of a run's start-up on their own.
CLUSTER = "kafka-cluster"
CLUSTER_NODES = 3
BROKER_CHOICES = (*BROKERS, CLUSTER)


@dataclass(frozen=True)
class BenchOptions:
    """What to measure: the workloads, their shape and the worker processes."""

    workload: str = "all"
    tickets: int | None = None
    sessions: int | None = None
    latency: float = 1.0
    workers: int = 1
    partitions: int | None = None
    model_concurrency: int | None = None
    soak_minutes: float = 2.0
    rate: float | None = None
    broker: str = "tansu"
    bursts: int = BURSTS
    warm_broker_s: float = WARM_BROKER_S
    # The compilers of an Apache Kafka the run starts (``streams.jit.JIT_FLAGS``).
    broker_jit: str = DEFAULT_JIT


@dataclass
class BrokerRun:
    """The broker a run uses: what it is, where, its processes and how to stop it."""

    kind: str
    url: str
    version: str | None = None
    started: bool = False
    # Nodes of an Apache Kafka the bench started, and how its topics were written.
    nodes: int = 1
    replication: int = 1
    acks: str | None = None
    pids: Callable[[], list[int]] = list
    stop: Callable[[], None] = lambda: None
    # What warmed the broker before the run measured it: seconds and records written and read.
    warmed: dict[str, float | int] | None = None
    # The JVM compilers of an Apache Kafka the run started.
    jit: str | None = None
    # The filesystem an Apache Kafka the run started keeps its data on (``ext4``, ``tmpfs``).
    storage: str | None = None

    @property
    def embedded(self) -> bool:
        return self.kind == "tansu"

    def describe(self) -> dict[str, Any]:
        """The result's ``broker`` field (a cluster's nodes, replication and acks too)."""
        data: dict[str, Any] = {
            "kind": self.kind,
            "version": self.version,
            "started_by_bench": self.started,
        }
        if self.nodes > 1:
            data.update(nodes=self.nodes, replication=self.replication, acks=self.acks)
        if self.warmed is not None:
            data["warmed"] = self.warmed
        if self.jit is not None:
            data["jit"] = self.jit
        if self.storage is not None:
            data["storage"] = self.storage
        return data

    def configure(self, settings: Settings) -> Settings:
        """``settings`` for this broker: its address and, on a cluster, its replication."""
        settings = settings.with_(broker=self.url)
        if self.nodes > 1:
            settings = settings.with_(
                replication_factor=self.replication, producer_acks=self.acks or "all"
            )
        return settings


def start_broker(kind: str, workdir: Path, jit: str = DEFAULT_JIT) -> BrokerRun:
    """Start the run's own broker: ``tansu`` (embedded), a one-node Apache Kafka or a
    three-node one (``kafka-cluster``, its JVMs' compilers ``jit``) in ``workdir``;
    ``KafkaUnavailable`` without java/mvn."""
    if kind in ("kafka", CLUSTER):
        from baton_kafka.streams.bench.stats import filesystem_of
        from baton_kafka.streams.kafka.apache import ApacheKafka

        # The settings `baton broker --engine kafka` uses: the worker tells it from the
        # embedded broker by its cluster id and applies no workaround.
        nodes = CLUSTER_NODES if kind == CLUSTER else 1
        data_dir = workdir / "kafka"
        kafka = ApacheKafka(nodes=nodes, data_dir=data_dir, jit=jit).start()
        return BrokerRun(
            "kafka",
            kafka.url,
            kafka.version,
            started=True,
            pids=kafka.pids,
            stop=kafka.stop,
            nodes=nodes,
            replication=nodes,
            acks="all",
            jit=jit,
            storage=filesystem_of(data_dir),
        )
    if kind != "tansu":
        raise ValueError(f"unknown broker {kind!r}; known: {', '.join(BROKER_CHOICES)}")
    from baton_kafka.streams.kafka.embedded import EmbeddedBroker

    tansu = EmbeddedBroker(log=workdir / "broker.log").start()

    def pids() -> list[int]:
        process = tansu.process
        return [process.pid] if process is not None and process.poll() is None else []

    return BrokerRun("tansu", tansu.url, started=True, pids=pids, stop=tansu.stop)


def given_broker(settings: Settings) -> BrokerRun:
    """The broker ``BATON_BROKER`` names, told apart by its cluster id (version unknown)."""
    from baton_kafka.streams.kafka.connect import TANSU_CLUSTER_ID, probe_broker

    cluster = asyncio.run(probe_broker(settings))
    embedded = settings.embedded_broker or cluster == TANSU_CLUSTER_ID
    return BrokerRun("tansu" if embedded else "kafka", settings.broker_shown)


class BenchFailed(RuntimeError):
    """The run could not finish; ``details`` holds the children's last log lines, if any."""

    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(message)
        self.details = details


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    memory = None
    try:
        with open("/proc/meminfo") as fh:
            first = fh.readline().split()
        memory = round(int(first[1]) / 1024 / 1024, 1)
    except (OSError, IndexError, ValueError):
        pass
    return {
        "nproc": os.cpu_count(),
        "memory_gib": memory,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "load_before": [round(x, 2) for x in os.getloadavg()],
        "commit": _commit(),
    }


def _commit() -> str | None:
    """The git commit of the source tree, when it is a checkout (local changes not shown)."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, timeout=5
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.decode().strip() or None


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _shape(options: BenchOptions, workload: str) -> tuple[int, int]:
    """Sessions and tickets per session of ``workload``."""
    sessions = options.sessions or DEFAULT_SESSIONS[workload]
    if options.tickets is not None:
        sessions = min(sessions, options.tickets)
        return sessions, max(1, options.tickets // sessions)
    return sessions, DEFAULT_PER_SESSION


async def _run(options: BenchOptions, ctx: Any) -> dict[str, Any]:
    from baton_kafka.streams.bench import workloads as w
    from baton_kafka.streams.bench.stats import ratio

    chosen = DEFAULT_WORKLOADS if options.workload == "all" else (options.workload,)
    rows = []
    result: dict[str, Any] = {}
    latency_rate = None
    if "latency" in chosen:
        sessions, per = _shape(options, "latency")
        say(f"latency: {sessions * per} tickets, {sessions} sessions, model {options.latency} s")
        row = await w.pipeline(
            ctx, "latency", sessions=sessions, per_session=per, latency=options.latency
        )
        rows.append(row)
        latency_rate = row.rate
    if "cpu" in chosen:
        sessions, per = _shape(options, "cpu")
        say(f"cpu: {sessions * per} tickets, offline model, then the two reference chains")
        cpu = await w.pipeline(ctx, "cpu", sessions=sessions, per_session=per, latency=None)
        faust = await w.chain(ctx, "faust", sessions=sessions, per_session=per)
        plain = await w.chain(ctx, "aiokafka", sessions=sessions, per_session=per)
        rows += [cpu, faust, plain]
        result["cpu_ratio"] = {
            "pipeline_vs_bare_faust": _round(ratio(cpu.cpu_ms_per_ticket, faust.cpu_ms_per_ticket)),
            "pipeline_vs_plain_aiokafka": _round(
                ratio(cpu.cpu_ms_per_ticket, plain.cpu_ms_per_ticket)
            ),
            "bare_faust_vs_plain_aiokafka": _round(
                ratio(faust.cpu_ms_per_ticket, plain.cpu_ms_per_ticket)
            ),
        }
        split = cpu.extra.get("cpu_split_ms_per_ticket")
        if split and cpu.cpu_ms_per_ticket is not None:
            own = cpu.cpu_ms_per_ticket - split["model"]
            result["cpu_ratio"]["pipeline_without_model_vs_bare_faust"] = _round(
                ratio(own, faust.cpu_ms_per_ticket)
            )
    if "tokens" in chosen:
        sessions, per = _shape(options, "tokens")
        say(f"tokens: {sessions * per} tickets, {sessions} sessions, instant stand-in")
        rows.append(
            await w.pipeline(ctx, "tokens", sessions=sessions, per_session=per, latency=0.001)
        )
    if "soak" in chosen:
        sessions, per = _shape(options, "soak")
        rate = options.rate or (latency_rate / 2 if latency_rate else DEFAULT_SOAK_RATE)
        say(f"soak: {options.soak_minutes:g} min at {rate:.0f} tickets/s over {sessions} sessions")
        rows.append(
            await w.pipeline(
                ctx,
                "soak",
                sessions=sessions,
                per_session=per,
                latency=options.latency,
                soak_s=options.soak_minutes * 60,
                rate=rate,
            )
        )
    if "overhead" in chosen:
        sessions, _ = _shape(options, "overhead")
        say(f"overhead: {sessions} tickets one at a time ({OVERHEAD_RATE:g}/s), instant model")
        rows.append(
            _named(
                await w.pipeline(
                    ctx,
                    "overhead",
                    sessions=sessions,
                    per_session=1,
                    latency=0.001,
                    rate=OVERHEAD_RATE,
                ),
                "overhead: one at a time",
            )
        )
        # ``--sessions`` sizes the burst too (a smoke test's few tickets).
        burst = options.sessions or BURST_SESSIONS
        n = options.bursts
        say(f"overhead: {n} burst(s) of {burst} tickets, each over {burst} new sessions")
        rows.append(
            _named(
                await w.pipeline(
                    ctx,
                    "burst",
                    sessions=burst * n,
                    per_session=1,
                    latency=0.001,
                    split_client=True,
                    burst=burst,
                ),
                f"overhead: burst of {burst}",
            )
        )
    if "scale" in chosen:
        sessions, per = _shape(options, "scale")
        partitions = options.partitions or SCALE_PARTITIONS
        scaled = []
        for n in SCALE_WORKERS:
            say(f"scale: {sessions * per} tickets, {partitions} partitions, {n} worker(s)")
            one = replace(ctx, settings=ctx.settings.with_(partitions=partitions), workers=n)
            row = _named(
                await w.pipeline(
                    one, f"scale{n}", sessions=sessions, per_session=per, latency=options.latency
                ),
                f"scale: {n} worker(s)",
            )
            rows.append(row)
            scaled.append((n, row.steady_rate or row.rate))
        result["scale_out"] = {
            "partitions": partitions,
            "tickets_per_s": {str(n): _round(r) for n, r in scaled},
            "vs_one_worker": {str(n): _round(ratio(r, scaled[0][1])) for n, r in scaled},
        }
    result["rows"] = [r.as_dict() for r in rows]
    result["table"] = rows
    return result


def _named(row: Row, label: str) -> Row:
    """``row`` under the table's label (the workload's own name is a topic-safe word)."""
    row.workload = label
    return row


def _round(value: float | None) -> float | None:
    return round(value, 2) if value is not None else None


def say(message: str) -> None:
    print(f"baton bench: {message}", file=sys.stderr, flush=True)


def measure(settings: Settings, options: BenchOptions) -> tuple[dict[str, Any], list[Row]]:
    """Run the chosen workloads; the JSON result and the table's rows. ``BenchFailed`` when
    the run cannot finish (its logs are kept then)."""
    from aiokafka.errors import KafkaError

    from baton_kafka.streams.bench.procs import BenchError
    from baton_kafka.streams.bench.workloads import Context
    from baton_kafka.streams.kafka.jars import KafkaUnavailable

    if options.partitions:
        settings = settings.with_(partitions=options.partitions)
    if options.model_concurrency:
        settings = settings.with_(model_concurrency=options.model_concurrency)
    workdir = Path(tempfile.mkdtemp(prefix="baton-bench-"))
    broker: BrokerRun | None = None
    info = machine()
    ok = False
    try:
        if settings.broker_given:
            broker = given_broker(settings)
            say(f"using the broker at {settings.broker_shown} (namespace prefix 'bench')")
        else:
            if options.broker == "kafka":
                say("starting Apache Kafka (one node) in the run's folder")
            elif options.broker == CLUSTER:
                say(f"starting Apache Kafka ({CLUSTER_NODES} nodes) in the run's folder")
            try:
                broker = start_broker(options.broker, workdir, options.broker_jit)
            except KafkaUnavailable:
                # Nothing was started or written: no folder to keep.
                shutil.rmtree(workdir, ignore_errors=True)
                raise
            settings = broker.configure(settings)
            say(f"{broker_line(broker.describe())} on {broker.url}")
            if broker.kind == "kafka" and options.warm_broker_s > 0:
                broker.warmed = _warm(settings, options.warm_broker_s)
        ctx = Context(
            settings=settings,
            embedded=broker.embedded,
            workdir=workdir,
            workers=options.workers,
            broker_pids=broker.pids,
        )
        try:
            result = asyncio.run(_run(options, ctx))
        except BenchError as exc:
            first, _, details = str(exc).partition("\n")
            raise BenchFailed(f"bench failed: {first} (logs kept in {workdir})", details) from None
        except (KafkaError, OSError) as exc:
            raise BenchFailed(
                f"bench failed: {type(exc).__name__}: {exc} (logs in {workdir})"
            ) from None
        ok = True
    finally:
        # Also on Ctrl-C and failures: no broker (no JVM) outlives the run.
        if broker is not None:
            broker.stop()
        if ok:
            shutil.rmtree(workdir, ignore_errors=True)
    rows: list[Row] = result.pop("table")
    result = {
        "run_id": uuid.uuid4().hex[:8],
        "machine": info,
        "settings": {
            "workers": options.workers,
            "partitions": settings.partitions,
            "model_concurrency": settings.model_concurrency,
            "max_in_flight": settings.max_in_flight,
            "max_buffered": settings.max_buffered,
            "model_latency_s": options.latency,
            "broker": "embedded" if broker.started and broker.embedded else settings.broker_shown,
            "replication_factor": settings.replication_factor,
            "producer_acks": settings.producer_acks,
        },
        "broker": broker.describe(),
        **result,
    }
    return result, rows


def notes(result: dict[str, Any]) -> list[str]:
    """The figures the table has no column for, one line each."""
    from baton_kafka.streams.bench.breakdown import describe_breakdown, describe_costs
    from baton_kafka.streams.bench.bursts import describe as describe_bursts
    from baton_kafka.streams.bench.report import describe_split

    lines = ["", f"broker: {broker_line(result.get('broker'))}"]
    if "cpu_ratio" in result:
        ratios = ", ".join(f"{k.replace('_', ' ')} {v}x" for k, v in result["cpu_ratio"].items())
        lines.append(f"CPU per ticket: {ratios}")
    if scale := result.get("scale_out"):
        rates = ", ".join(
            f"{n} worker(s) {r}/s ({scale['vs_one_worker'][n]}x)"
            for n, r in scale["tickets_per_s"].items()
        )
        lines.append(f"scale-out over {scale['partitions']} partitions: {rates}")
    for row in result["rows"]:
        name = row["workload"]
        if (checks := row.get("audit_and_policy_ms_per_draft")) is not None:
            line = f"{name}: reply audit + policy check {checks} ms CPU per draft"
            if spread := row.get("audit_and_policy_us_per_draft"):
                line += (
                    f" (p50 {spread['p50']} us, p99 {spread.get('p99')} us, "
                    f"max {spread.get('max')} us, mean {spread['mean']} us)"
                )
            lines.append(line)
        if (promises := row.get("promise_checks_ms_per_reply")) is not None:
            lines.append(f"{name}: promise checks {promises} ms CPU per reply")
        if cost := row.get("cost_per_ticket"):
            lines.append(f"{name}: {describe_costs(cost)}")
        if parts := row.get("overhead_ms"):
            lines.append(f"{name}: where a ticket's time goes (ms):")
            lines.extend(describe_breakdown(parts))
        if split := row.get("cpu_split_ms_per_ticket"):
            lines.append(describe_split(name, row.get("cpu_ms_per_ticket"), split))
            if new := split.get("every_text_new"):
                lines.append(
                    f"{name}: with every text new (no reading kept from an earlier ticket): "
                    f"model {new['model']} + stage code {new['stages_without_model']}"
                )
        if bursts := row.get("bursts"):
            lines.append(describe_bursts(name, bursts))
        if (broker_ms := row.get("other_cpu_ms_per_ticket", {}).get("broker")) is not None:
            lines.append(f"{name}: broker CPU {broker_ms} ms/ticket")
        if prompt := row.get("prompt"):
            lines.append(
                f"{name}: prompt tokens {prompt['ratio']}x the minimal prompts "
                f"(per-ticket part {prompt['context_ratio']}x; minimal prompts "
                f"{prompt.get('tokens', 'estimated')}); "
                f"cache reads {100 * prompt['cache_read_share']:.0f}% of input"
            )
        if drift := row.get("rss_drift"):
            lines.append(
                f"{name}: RSS {drift['start_mib']} -> {drift['end_mib']} MiB after warm-up "
                f"({100 * drift['change']:+.1f}%, flat within 10%: {drift['flat_within_10pct']})"
            )
        if backlog := row.get("backlog_tickets"):
            lines.append(
                f"{name}: tickets published and not yet answered {backlog['start']} -> "
                f"{backlog['end']} (first and last tenth after warm-up)"
            )
        if sizes := row.get("baton_bytes"):
            lines.append(
                f"{name}: baton {sizes['mean']} bytes mean, {sizes['max']} max, "
                f"{sizes['tickets_per_session']} tickets per session"
            )
        if growth := row.get("baton_bytes_by_session_length"):
            sizes_ = ", ".join(f"{n} tickets {b}" for n, b in growth.items())
            lines.append(f"{name}: bytes of one session's baton by session length: {sizes_}")
        if steady := row.get("steady_rate"):
            lines.append(f"{name}: {steady:.1f} tickets/s between 10% and 90% answered")
    return lines


def _warm(settings: Settings, seconds: float) -> dict[str, float | int]:
    """Warm the Apache Kafka the run started (``warm_broker``); what it did, for the result."""
    from baton_kafka.streams.bench.warm_broker import warm_broker

    say(f"warming Apache Kafka for {seconds:g} s before measuring")
    done = asyncio.run(warm_broker(settings, seconds, "bench-warm-broker"))
    return {"seconds": done.seconds, "records_written": done.written, "records_read": done.read}


def broker_line(broker: dict[str, Any] | None) -> str:
    """A result's broker for people: ``Apache Kafka 4.3.1 (one node, started by the bench)``."""
    if not broker:
        return "unknown"
    name = "Apache Kafka" if broker["kind"] == "kafka" else "Tansu (embedded)"
    if broker.get("version"):
        name = f"{name} {broker['version']}"
    if broker.get("started_by_bench"):
        size = ""
        if broker["kind"] == "kafka":
            nodes = broker.get("nodes", 1)
            size = (
                "one node, "
                if nodes == 1
                else f"{nodes} nodes, replication {broker.get('replication')}, "
                f"acks={broker.get('acks')}, "
            )
        warmed = broker.get("warmed")
        warm = f", warmed {warmed['seconds']:g} s" if warmed else ""
        jit = f", JIT {broker['jit']}" if broker.get("jit") else ""
        storage = f", data on {broker['storage']}" if broker.get("storage") else ""
        return f"{name} ({size}started by the bench{warm}{jit}{storage})"
    return f"{name} (BATON_BROKER)"

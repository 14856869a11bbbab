"""``baton bench``: throughput, latency, CPU, memory and prompt size of one worker, measured."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from baton_kafka.streams.bench.run import (
    BROKER_CHOICES,
    BROKERS,
    BURSTS,
    WARM_BROKER_S,
    WORKLOADS,
)
from baton_kafka.streams.cli.errors import Fail, UsageError
from baton_kafka.streams.jit import DEFAULT_JIT, JIT_FLAGS
from baton_kafka.streams.settings import Settings


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "bench", help="measure throughput, latency, CPU, memory and prompt size"
    )
    p.add_argument("--workload", choices=(*WORKLOADS, "all"), default="all")
    p.add_argument("--tickets", type=int, default=None, help="per workload (default 5/session)")
    p.add_argument("--sessions", type=int, default=None, help="default 600 (tokens: 200)")
    p.add_argument("--latency", type=float, default=1.0, help="stand-in seconds per model call")
    p.add_argument("--workers", type=int, default=1, help="worker processes")
    p.add_argument("--partitions", type=int, default=None, help="default BATON_PARTITIONS")
    p.add_argument("--model-concurrency", type=int, default=None, help="model calls per worker")
    p.add_argument("--soak-minutes", type=float, default=2.0)
    p.add_argument("--rate", type=float, default=None, help="soak tickets/s (default: half)")
    p.add_argument(
        "--bursts",
        type=int,
        default=BURSTS,
        help=f"overhead: bursts measured, one after another (default {BURSTS})",
    )
    p.add_argument(
        "--broker",
        choices=(*BROKER_CHOICES, "both"),
        default=None,
        help="the broker the run starts for itself: tansu (embedded, default), kafka "
        "(one-node Apache Kafka; needs java and mvn), kafka-cluster (three Apache Kafka "
        "nodes, replication 3, acks=all) or both (tansu then kafka); not with BATON_BROKER",
    )
    p.add_argument(
        "--warm-broker",
        type=float,
        default=WARM_BROKER_S,
        metavar="SECONDS",
        help="an Apache Kafka the run starts: seconds of traffic before measuring, so its JVM "
        f"runs compiled as a long-running broker's does (default {WARM_BROKER_S:g}; 0: none)",
    )
    p.add_argument(
        "--broker-jit",
        choices=tuple(JIT_FLAGS),
        default=DEFAULT_JIT,
        help="an Apache Kafka the run starts: its JVM's compilers, as `baton broker --jit` "
        f"(default {DEFAULT_JIT})",
    )
    p.add_argument("--json", action="store_true", help="print the results as one JSON object")
    return p


def _validate(args: argparse.Namespace, settings: Settings) -> None:
    names = ("tickets", "sessions", "workers", "partitions", "model_concurrency", "bursts")
    for name in (*names, "latency", "soak_minutes", "rate"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            raise UsageError(f"baton bench: --{name.replace('_', '-')} must be positive")
    if not 0 <= args.warm_broker < math.inf:
        raise UsageError("baton bench: --warm-broker must be a number of seconds, 0 or more")
    if args.tickets is not None and args.sessions is not None and args.tickets < args.sessions:
        raise UsageError("baton bench: --tickets must be at least --sessions")
    if args.broker is not None and settings.broker_given:
        raise UsageError(
            "baton bench: --broker starts a broker of its own; unset BATON_BROKER or drop --broker"
        )


def run(args: argparse.Namespace, settings: Settings) -> int:
    import orjson

    from baton_kafka.streams.bench.run import notes
    from baton_kafka.streams.bench.stats import table

    _validate(args, settings)
    brokers = BROKERS if args.broker == "both" else (args.broker or "tansu",)
    results = {}
    for broker in brokers:
        results[broker] = _measure(args, settings, broker)
    if args.json:
        out: Any = (
            results[brokers[0]][0] if len(brokers) == 1 else {b: r for b, (r, _) in results.items()}
        )
        sys.stdout.write(orjson.dumps(out, option=orjson.OPT_NON_STR_KEYS).decode() + "\n")
        return 0
    for broker, (result, rows) in results.items():
        if len(brokers) > 1:
            print(f"\n## {broker}\n")
        print(table(rows))
        for line in notes(result):
            print(line)
    return 0


def _measure(args: argparse.Namespace, settings: Settings, broker: str) -> tuple[Any, Any]:
    """One run of the chosen workloads on ``broker``."""
    from baton_kafka.streams.bench.run import BenchFailed, BenchOptions, measure

    options = BenchOptions(
        workload=args.workload,
        tickets=args.tickets,
        sessions=args.sessions,
        latency=args.latency,
        workers=args.workers,
        partitions=args.partitions,
        model_concurrency=args.model_concurrency,
        soak_minutes=args.soak_minutes,
        rate=args.rate,
        broker=broker,
        bursts=args.bursts,
        warm_broker_s=args.warm_broker,
        broker_jit=args.broker_jit,
    )
    try:
        return measure(settings, options)
    except BenchFailed as exc:
        if exc.details:
            print(exc.details, file=sys.stderr)
        raise Fail(f"baton: {exc}") from None

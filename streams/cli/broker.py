"""``baton broker``: a local broker in the foreground, the embedded one or Apache Kafka."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from baton_kafka.streams.cli.errors import UsageError
from baton_kafka.streams.jit import DEFAULT_JIT, JIT_FLAGS
from baton_kafka.streams.settings import Settings


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "broker", help="run a local Kafka broker in the foreground (embedded, or Apache Kafka)"
    )
    p.add_argument(
        "--engine",
        choices=("tansu", "kafka"),
        default="tansu",
        help="tansu: the embedded broker, memory only (default); kafka: Apache Kafka (KRaft) "
        "from Maven jars, needs java 17+ and mvn",
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=9092, help="the first broker's port")
    p.add_argument("--nodes", type=int, choices=(1, 3), default=1, help="Apache Kafka cluster size")
    p.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where Apache Kafka keeps its data (default: BATON_DATA_DIR/kafka); kept between runs",
    )
    p.add_argument(
        "--jit",
        choices=tuple(JIT_FLAGS),
        default=DEFAULT_JIT,
        help="Apache Kafka's JVM compilers: tiered, the JVM's default (fastest under sustained "
        "load); c1, the quick compiler alone (about a third of the CPU for a broker that mostly "
        "waits, as in development and tests)",
    )
    return p


def run(args: argparse.Namespace, settings: Settings) -> int:
    if not 0 < args.port < 65536 - 2 * args.nodes:
        raise UsageError("baton broker: --port must be between 1 and 65535")
    if args.engine == "tansu" and args.nodes != 1:
        raise UsageError("baton broker: --nodes applies to --engine kafka only")
    if args.engine == "tansu" and args.jit != DEFAULT_JIT:
        raise UsageError("baton broker: --jit applies to --engine kafka only")
    if args.engine == "kafka":
        return _apache_kafka(args, settings)
    return _embedded(args)


def _embedded(args: argparse.Namespace) -> int:
    from baton_kafka.streams.kafka.embedded import EmbeddedBroker

    broker = EmbeddedBroker(args.host, args.port)
    broker.start()
    print(f"baton: embedded broker listening on {broker.url} (memory only; Ctrl-C stops it)")
    print(f"baton: export BATON_BROKER={broker.url}", flush=True)
    try:
        assert broker.process is not None
        broker.process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        broker.stop()
    return 0


def _apache_kafka(args: argparse.Namespace, settings: Settings) -> int:
    from baton_kafka.streams.kafka.apache import ApacheKafka

    data_dir = args.data_dir or settings.data_dir / "kafka"
    cluster = ApacheKafka(args.host, args.port, nodes=args.nodes, data_dir=data_dir, jit=args.jit)
    try:
        cluster.start()
        size = "one node" if args.nodes == 1 else f"{args.nodes} nodes, RF 3, min ISR 2"
        print(
            f"baton: Apache Kafka {cluster.version} ({size}) listening on {cluster.bootstrap}; "
            f"data in {data_dir} (Ctrl-C stops it)"
        )
        print(f"baton: export BATON_BROKER={cluster.url}", flush=args.nodes == 1)
        if args.nodes == 3:
            print("baton: export BATON_REPLICATION_FACTOR=3", flush=True)
        cluster.wait()
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()
    return 0

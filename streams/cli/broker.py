"""``baton broker``: the embedded Kafka-protocol broker in the foreground."""

from __future__ import annotations

import argparse
import signal
from typing import Any

from streams.cli.errors import UsageError
from streams.settings import Settings


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "broker", help="run the embedded Kafka-protocol broker in the foreground"
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=9092)
    return p


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace, settings: Settings) -> int:
    from streams.kafka.embedded import EmbeddedBroker

    if not 0 < args.port < 65536:
        raise UsageError("baton broker: --port must be between 1 and 65535")
    broker = EmbeddedBroker(args.host, args.port)
    # The broker runs in its own process group: stop it on SIGTERM too, not only on Ctrl-C.
    signal.signal(signal.SIGTERM, _interrupt)
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

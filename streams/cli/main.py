"""The ``baton`` command line: every error is one line on stderr and a non-zero exit."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import logging
import signal
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from schemas.codec import dumps
from schemas.records import Order, Ticket
from streams import jsonl
from streams.settings import Settings, SettingsError, load


class UsageError(Exception):
    """A wrong argument: reported as one line, exit code 2."""


class Fail(Exception):
    """A runtime failure: reported as one line, exit code 1."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


# Commands that live in their own modules. Each module defines
# ``add_parser(sub) -> None`` (calling ``set_defaults(run=...)`` with a
# ``run(args, settings) -> int``) and imports its heavy dependencies inside ``run``.
COMMAND_MODULES: tuple[str, ...] = (
    "streams.debug.trace",
    "streams.debug.replay",
    "streams.debug.dlq",
    "streams.bench.run",
    "streams.eval.run",
)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="baton", description="Chains of LLM agents over Kafka with explicit context.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    b = sub.add_parser("broker", help="run the embedded Kafka-protocol broker in the foreground")
    b.add_argument("--host", default="127.0.0.1")
    b.add_argument("--port", type=int, default=9092)

    w = sub.add_parser("worker", help="run one worker with all agents")
    w.add_argument(
        "--log-format",
        choices=("json", "text"),
        default=None,
        help="JSON lines (default, BATON_LOG_FORMAT) or human-readable text",
    )

    o = sub.add_parser("orders", help="manage the order store")
    osub = o.add_subparsers(dest="orders_command", required=True, parser_class=_Parser)
    imp = osub.add_parser("import", help="import orders from JSON Lines (FILE or -)")
    imp.add_argument("file")
    imp.add_argument("--skip-invalid", action="store_true")

    pub = sub.add_parser("publish", help="publish tickets from JSON Lines (FILE or -)")
    pub.add_argument("file")
    pub.add_argument("--skip-invalid", action="store_true")
    pub.add_argument("--topic", default=None, help="default: support.tickets")

    t = sub.add_parser("tail", help="print a topic's records as JSON Lines")
    t.add_argument("topic")
    t.add_argument("--from-beginning", action="store_true")
    t.add_argument("--limit", type=int, default=None)
    t.add_argument("--idle-timeout", type=float, default=None, help="stop after N s of silence")
    t.add_argument("--meta", action="store_true", help="wrap each value with key/partition/offset")

    d = sub.add_parser("demo", help="run the pipeline end to end on an embedded broker")
    d.add_argument("--timeout", type=float, default=180.0)
    for module in COMMAND_MODULES:
        importlib.import_module(module).add_parser(sub)
    return p


def _positive(value: int | None, name: str) -> None:
    if value is not None and value <= 0:
        raise UsageError(f"baton: {name} must be positive")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def cmd_broker(args: argparse.Namespace) -> int:
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


def _report_invalid(errors: list[tuple[int, str]], source: str, skip: bool) -> None:
    for line, reason in errors[:20]:
        print(f"baton: {source}:{line}: {reason}", file=sys.stderr)
    if len(errors) > 20:
        print(f"baton: … and {len(errors) - 20} more invalid lines", file=sys.stderr)
    if errors and not skip:
        raise Fail(
            f"{len(errors)} invalid line(s); nothing was sent (use --skip-invalid to send the rest)"
        )


def _load(model: type[Ticket] | type[Order], source: str, skip: bool) -> list[Any]:
    try:
        loaded = jsonl.load(model, source)
    except FileNotFoundError as exc:
        raise Fail(str(exc)) from None
    _report_invalid(loaded.errors, source, skip)
    return loaded.records


def cmd_orders_import(args: argparse.Namespace, settings: Settings) -> int:
    from agents.orders import StoreUnavailable
    from streams.runtime.worker import build_store

    orders = _load(Order, args.file, args.skip_invalid)
    progress = jsonl.Progress(len(orders), "importing")

    async def run() -> int:
        store = build_store(settings)
        try:
            count = 0
            for start in range(0, len(orders), 500):
                chunk = orders[start : start + 500]
                count += await store.upsert(chunk)
                progress.advance(len(chunk))
            return count
        finally:
            await store.close()

    try:
        count = asyncio.run(run())
    except StoreUnavailable as exc:
        raise Fail(f"order store unavailable: {exc}") from None
    print(f"baton: imported {count} order(s) into {settings.orders_url}")
    return 0


def cmd_publish(args: argparse.Namespace, settings: Settings) -> int:
    from streams.kafka.client import publish
    from streams.kafka.topics import TICKETS

    tickets: list[Ticket] = _load(Ticket, args.file, args.skip_invalid)
    topic = args.topic or settings.topic(TICKETS)
    progress = jsonl.Progress(len(tickets), "publishing")
    sent = asyncio.run(
        publish(settings, topic, ((t.session_id, dumps(t)) for t in tickets), progress.advance)
    )
    print(f"baton: published {sent} ticket(s) to {topic}", file=sys.stderr)
    return 0


def cmd_tail(args: argparse.Namespace, settings: Settings) -> int:
    import orjson

    from streams.kafka.client import read

    _positive(args.limit, "--limit")

    async def run() -> None:
        async for m in read(
            settings,
            args.topic,
            from_beginning=args.from_beginning,
            idle_timeout=args.idle_timeout,
            limit=args.limit,
        ):
            text = (m.value or b"").decode("utf-8", "backslashreplace")
            if args.meta:
                line = orjson.dumps(
                    {
                        "topic": m.topic,
                        "partition": m.partition,
                        "offset": m.offset,
                        "timestamp": m.timestamp,
                        "key": m.key.decode("utf-8", "backslashreplace") if m.key else None,
                        "headers": {k: v.decode("utf-8", "backslashreplace") for k, v in m.headers},
                        "value": text,
                    }
                ).decode()
            else:
                line = text
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())
    return 0


def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    from streams.demo import run_demo

    return run_demo(settings, timeout=args.timeout)


def dispatch(argv: Sequence[str]) -> int:
    """Parse ``argv`` and run the command; raises ``UsageError``/``Fail`` for one-line errors."""
    args = _parser().parse_args(argv)
    if args.command == "broker":
        return cmd_broker(args)
    try:
        settings = load()
    except SettingsError as exc:
        raise UsageError(f"baton: {exc}") from None
    if hasattr(args, "run"):
        return int(args.run(args, settings))
    if args.command == "worker":
        from streams.observe.web import UnsafeBind, check_bind
        from streams.runtime.worker import run

        if args.log_format:
            settings = settings.with_(log_format=args.log_format)
        try:
            check_bind(settings)
        except UnsafeBind as exc:
            raise UsageError(f"baton worker: {exc}") from None
        run(settings)
        return 0
    if args.command == "orders":
        return cmd_orders_import(args, settings)
    commands = {"publish": cmd_publish, "tail": cmd_tail, "demo": cmd_demo}
    return commands[args.command](args, settings)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``baton`` command."""
    from streams.kafka.connect import BrokerUnreachable
    from streams.kafka.embedded import BrokerError
    from streams.kafka.topics import TopicMismatch

    # Client commands report failures themselves, in one line; the Kafka client's own
    # connection errors would otherwise print through logging's last-resort handler.
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    try:
        return dispatch(list(sys.argv[1:] if argv is None else argv))
    except UsageError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except (Fail, BrokerUnreachable, BrokerError, TopicMismatch) as exc:
        print(f"baton: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("baton: interrupted", file=sys.stderr)
        return 130

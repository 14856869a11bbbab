"""The ``baton`` command: one module per command, each with ``add_parser`` and ``run``."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn, Protocol

from baton_kafka.streams.cli import (
    bench,
    broker,
    check,
    demo,
    dlq,
    forget,
    handoffs,
    init,
    orders,
    people,
    publish,
    replay,
    tail,
    trace,
    worker,
)
from baton_kafka.streams.cli import eval as evaluate
from baton_kafka.streams.cli.errors import UsageError, reported
from baton_kafka.streams.settings import Settings, load


class Command(Protocol):
    """A command module: registers its parser, then runs with the parsed arguments."""

    def add_parser(self, sub: Any) -> argparse.ArgumentParser: ...

    def run(self, args: argparse.Namespace, settings: Settings) -> int: ...


COMMANDS: tuple[Command, ...] = (
    init,
    check,
    broker,
    worker,
    orders,
    publish,
    tail,
    demo,
    trace,
    replay,
    dlq,
    handoffs,
    *people.COMMANDS,
    forget,
    bench,
    evaluate,
)


class CommandParser(argparse.ArgumentParser):
    """A parser whose errors are ``UsageError``s (one line, exit code 2)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("baton-kafka")
    except PackageNotFoundError:
        return "unknown (not installed)"


def parser() -> argparse.ArgumentParser:
    """The parser of every command; the parsed ``run`` is the command's ``run``."""
    p = CommandParser(
        prog="baton", description="Chains of LLM agents over Kafka with explicit context."
    )
    p.add_argument("--version", action="version", version=f"baton {_version()}")
    p.add_argument(
        "--config",
        metavar="FILE",
        type=Path,
        help="the settings file (default: baton.toml in the working directory, or BATON_CONFIG)",
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=CommandParser)
    for command in COMMANDS:
        command.add_parser(sub).set_defaults(run=command.run)
    return p


def dispatch(argv: Sequence[str]) -> int:
    """Parse ``argv``, build the settings and run the command."""
    args = parser().parse_args(argv)
    if getattr(args, "loads_settings", False):
        # It reads (or writes) the settings itself: a bad one is what it reports.
        return int(args.run(args, None))
    return int(args.run(args, load(config=args.config)))


def _terminated(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``baton`` command."""
    # SIGTERM (what a supervisor sends) stops a command as Ctrl-C does, so the brokers, workers
    # and stand-ins it started are stopped too. A worker's Faust installs its own handler.
    signal.signal(signal.SIGTERM, _terminated)
    # Client commands report failures themselves, in one line; the Kafka client's own
    # connection errors would otherwise print through logging's last-resort handler.
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    return reported(lambda: dispatch(list(sys.argv[1:] if argv is None else argv)))

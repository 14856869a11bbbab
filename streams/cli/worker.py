"""``baton worker``: one worker with every agent, in the foreground."""

from __future__ import annotations

import argparse
from typing import Any

from baton_kafka.streams.cli.errors import UsageError
from baton_kafka.streams.settings import Settings


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser("worker", help="run one worker with all agents")
    p.add_argument(
        "--log-format",
        choices=("json", "text"),
        default=None,
        help="JSON lines (default, BATON_LOG_FORMAT) or human-readable text",
    )
    return p


def run(args: argparse.Namespace, settings: Settings) -> int:
    from baton_kafka.streams.observe.guard import UnsafeBind, check_bind
    from baton_kafka.streams.runtime import worker

    if args.log_format:
        settings = settings.with_(log_format=args.log_format)
    try:
        check_bind(settings)
    except UnsafeBind as exc:
        raise UsageError(f"baton worker: {exc}") from None
    worker.run(settings)
    return 0

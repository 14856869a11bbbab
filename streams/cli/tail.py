"""``baton tail TOPIC``: a topic's records as JSON Lines on stdout."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from typing import Any

from baton_kafka.streams.cli.errors import UsageError
from baton_kafka.streams.settings import Settings


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "tail", help="print a topic's records as JSON Lines"
    )
    p.add_argument("topic")
    p.add_argument("--from-beginning", action="store_true")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--idle-timeout", type=float, default=None, help="stop after N s of silence")
    p.add_argument("--meta", action="store_true", help="wrap each value with key/partition/offset")
    return p


def run(args: argparse.Namespace, settings: Settings) -> int:
    import orjson

    from baton_kafka.schemas.topics import topic_problem
    from baton_kafka.streams.kafka.client import read

    if args.limit is not None and args.limit <= 0:
        raise UsageError("baton: --limit must be positive")
    problem = topic_problem(args.topic)
    if problem:
        raise UsageError(f"baton: the topic name {problem}")

    async def follow() -> None:
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
        asyncio.run(follow())
    return 0

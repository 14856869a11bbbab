"""``baton trace SESSION``: everything the topics recorded about one session."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from baton_kafka.streams.settings import Settings


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "trace", help="show everything that happened to one session"
    )
    p.add_argument("session_id")
    p.add_argument("--json", action="store_true", help="one JSON document instead of a timeline")
    return p


def run(args: argparse.Namespace, settings: Settings) -> int:
    from baton_kafka.schemas.codec import dumps
    from baton_kafka.streams.cli.errors import checked_id
    from baton_kafka.streams.debug.trace import collect, render

    checked_id(args.session_id, "baton trace: invalid session id")
    doc = asyncio.run(collect(settings, args.session_id))
    if args.json:
        sys.stdout.write(dumps(doc).decode() + "\n")
    else:
        for line in render(doc):
            sys.stdout.write(line + "\n")
    return 0

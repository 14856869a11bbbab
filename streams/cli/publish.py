"""``baton publish``: validated tickets from JSON Lines into the tickets topic."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.records import Ticket
from baton_kafka.streams.cli.errors import UsageError
from baton_kafka.streams.cli.records import load_records
from baton_kafka.streams.progress import Progress
from baton_kafka.streams.settings import Settings


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "publish", help="publish tickets from JSON Lines (FILE or -)"
    )
    p.add_argument("file")
    p.add_argument("--skip-invalid", action="store_true")
    p.add_argument("--topic", default=None, help="default: the tickets topic (BATON_TOPIC_TICKETS)")
    return p


def run(args: argparse.Namespace, settings: Settings) -> int:
    from baton_kafka.schemas.topics import topic_problem
    from baton_kafka.streams.kafka.client import publish
    from baton_kafka.streams.kafka.topics import TICKETS

    problem = args.topic is not None and topic_problem(args.topic)
    if problem:
        raise UsageError(f"baton: --topic {problem}")
    tickets: list[Ticket] = load_records(Ticket, args.file, args.skip_invalid)
    topic = args.topic or settings.topic(TICKETS)
    progress = Progress(len(tickets), "publishing")
    sent = asyncio.run(
        publish(settings, topic, ((t.session_id, dumps(t)) for t in tickets), progress.advance)
    )
    print(f"baton: published {sent} ticket(s) to {topic}", file=sys.stderr)
    return 0

"""``baton forget CUSTOMER_ID``: erase a customer's batons and index entry, say what remains."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from baton_kafka.streams.cli.errors import Fail, UsageError, checked_id
from baton_kafka.streams.settings import Settings


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "forget", help="erase a customer's sessions and index entry (a running worker applies it)"
    )
    p.add_argument("customer_id")
    p.add_argument("--json", action="store_true", help="one JSON document")
    p.add_argument(
        "--timeout", type=float, default=60.0, help="seconds to wait for the workers (default 60)"
    )
    return p


def run(args: argparse.Namespace, settings: Settings) -> int:
    from baton_kafka.schemas.codec import dumps
    from baton_kafka.streams.admin.forget import forget, retention

    checked_id(args.customer_id, "baton forget: invalid customer id")
    if args.timeout <= 0:
        raise UsageError("baton forget: --timeout must be positive")
    done = asyncio.run(forget(settings, args.customer_id, args.timeout))
    held = retention(settings)
    if args.json:
        doc = {
            "customer_id": done.customer_id,
            "request_id": done.request_id,
            "sessions": done.sessions,
            "erased_sessions": done.erased_sessions,
            "index_sessions": done.index_sessions,
            "index_erased": done.index_erased,
            "confirmed": done.confirmed,
            "retention_days": held,
        }
        sys.stdout.write(dumps(doc).decode() + "\n")
    else:
        for line in _lines(done, held):
            sys.stdout.write(line + "\n")
    if not done.confirmed:
        raise Fail(
            f"baton forget: not confirmed within {args.timeout:g} s (is a worker running?); "
            "the requests stay in the topics and are applied when a worker reads them"
        )
    return 0


def _lines(done: Any, held: dict[str, float]) -> list[str]:
    from baton_kafka.streams.observe.shown import shown

    if not done.sessions and not done.index_sessions:
        return [f"no session or index entry held for customer {shown(done.customer_id)}"]
    lines = [f"customer {shown(done.customer_id)} (request {done.request_id}):"]
    for s in done.sessions:
        state = "erased" if s in done.erased_sessions else "NOT confirmed"
        lines.append(f"  session {shown(s)}: {state}")
    if done.index_sessions:
        state = "erased" if done.index_erased else "NOT confirmed"
        lines.append(f"  index entry ({len(done.index_sessions)} sessions): {state}")
    lines.append("records still in topics until their retention ends (days):")
    lines.extend(f"  {topic}: {days:g}" for topic, days in held.items())
    return lines

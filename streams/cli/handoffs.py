"""``baton handoffs list|show``: the tickets handed to a person, from the handoffs topic."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from baton_kafka.streams.cli.errors import Fail
from baton_kafka.streams.settings import Settings


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "handoffs", help="list and show the tickets handed to a person"
    )
    hsub = p.add_subparsers(dest="handoffs_command", required=True, parser_class=type(p))
    lst = hsub.add_parser("list", help="one line per hand-off, oldest first")
    lst.add_argument("--reason", action="append", help="only this reason (repeatable)")
    lst.add_argument("--json", action="store_true", help="JSON Lines, one packet per line")
    show = hsub.add_parser("show", help="the hand-off packet of one session")
    show.add_argument("session_id")
    show.add_argument("--all", action="store_true", help="every packet of the session")
    return p


def run(args: argparse.Namespace, settings: Settings) -> int:
    commands = {"list": _list, "show": _show}
    return commands[args.handoffs_command](args, settings)


def _list(args: argparse.Namespace, settings: Settings) -> int:
    from baton_kafka.schemas.codec import dumps
    from baton_kafka.streams.debug.handoffs import line, read_packets
    from baton_kafka.streams.kafka.topics import TopicNames

    found = asyncio.run(read_packets(settings))
    if args.reason:
        found = [p for p in found if p.reason in args.reason]
    for packet in found:
        sys.stdout.write((dumps(packet).decode() if args.json else line(packet)) + "\n")
    topic = TopicNames.of(settings).handoffs
    print(f"baton: {len(found)} hand-off(s) in {topic}", file=sys.stderr)
    return 0


def _show(args: argparse.Namespace, settings: Settings) -> int:
    import orjson

    from baton_kafka.streams.debug.handoffs import read_packets
    from baton_kafka.streams.kafka.topics import TopicNames

    found = [p for p in asyncio.run(read_packets(settings)) if p.session_id == args.session_id]
    if not found:
        topic = TopicNames.of(settings).handoffs
        raise Fail(f"baton handoffs: no hand-off of session {args.session_id} in {topic}")
    for packet in found if args.all else found[-1:]:
        doc = packet.model_dump(mode="json")
        sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
    return 0

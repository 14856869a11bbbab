"""``baton dlq list|show|requeue``: read the dead letters and re-drive their tickets."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING, Any

from baton_kafka.streams.cli.errors import Fail, UsageError
from baton_kafka.streams.settings import Settings

if TYPE_CHECKING:
    from baton_kafka.streams.debug.dlq import Filters


def _add_filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reason", action="append", help="only this reason (repeatable)")
    p.add_argument("--stage", action="append", help="only this stage (repeatable)")
    p.add_argument("--since", help="only dead letters written at or after this RFC 3339 time")


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser("dlq", help="list, show and requeue dead letters")
    dsub = p.add_subparsers(dest="dlq_command", required=True, parser_class=type(p))
    lst = dsub.add_parser("list", help="list dead letters")
    _add_filters(lst)
    lst.add_argument("--json", action="store_true", help="JSON Lines, one dead letter per line")
    show = dsub.add_parser("show", help="show one dead letter with its headers")
    show.add_argument("id")
    req = dsub.add_parser("requeue", help="re-drive dead-lettered tickets into the tickets topic")
    _add_filters(req)
    req.add_argument("--id", action="append", help="this dead letter (repeatable)")
    req.add_argument("--all", action="store_true", help="every dead letter (no filter)")
    req.add_argument("--again", action="store_true", help="also those requeued before")
    req.add_argument("--dry-run", action="store_true", help="only say what would be requeued")
    return p


def run(args: argparse.Namespace, settings: Settings) -> int:
    commands = {"list": _list, "show": _show, "requeue": _requeue}
    return commands[args.dlq_command](args, settings)


def _filters(args: argparse.Namespace) -> Filters:
    from baton_kafka.streams.debug.dlq import Filters, parse_time

    since = None
    if args.since:
        try:
            since = parse_time(args.since)
        except ValueError:
            raise UsageError(
                f"baton dlq: --since is not an RFC 3339 time: {args.since!r}"
            ) from None
    return Filters(
        reasons=frozenset(args.reason or ()),
        stages=frozenset(args.stage or ()),
        since=since,
        ids=frozenset(getattr(args, "id", None) or ()),
    )


def _list(args: argparse.Namespace, settings: Settings) -> int:
    import orjson

    from baton_kafka.streams.debug.dlq import as_json, dead_letters, line
    from baton_kafka.streams.kafka.topics import TopicNames

    found = asyncio.run(dead_letters(settings, _filters(args)))
    found.sort(key=lambda x: x.dl.failed_at)
    for x in found:
        if args.json:
            sys.stdout.write(orjson.dumps(as_json(x)).decode() + "\n")
        else:
            sys.stdout.write(line(x) + "\n")
    topic = TopicNames.of(settings).dead_letters
    print(f"baton: {len(found)} dead letter(s) in {topic}", file=sys.stderr)
    return 0


def _show(args: argparse.Namespace, settings: Settings) -> int:
    import orjson

    from baton_kafka.streams.debug.dlq import Filters, dead_letters, described
    from baton_kafka.streams.kafka.topics import TopicNames

    found = asyncio.run(dead_letters(settings, Filters(ids=frozenset([args.id]))))
    if not found:
        topic = TopicNames.of(settings).dead_letters
        raise Fail(f"baton dlq: no dead letter with id {args.id} in {topic}")
    for x in found:
        sys.stdout.write(orjson.dumps(described(x), option=orjson.OPT_INDENT_2).decode() + "\n")
    return 0


def _requeue(args: argparse.Namespace, settings: Settings) -> int:
    from baton_kafka.streams.debug.dlq import requeue, requeue_plan
    from baton_kafka.streams.kafka.topics import TopicNames
    from baton_kafka.streams.observe.shown import shown

    filters = _filters(args)
    if filters.empty and not args.all:
        raise UsageError("baton dlq requeue: give --id, --reason, --stage or --since (or --all)")
    todo, skipped = asyncio.run(requeue_plan(settings, filters, args.again))
    for x, why in skipped:
        print(f"baton: skipped {x.dl.id}: {why}", file=sys.stderr)
    verb = "would requeue" if args.dry_run else "requeued"
    if not args.dry_run and todo:
        asyncio.run(requeue(settings, todo))
    tickets = TopicNames.of(settings).tickets
    for x, _, _, attempts in todo:
        what = f"ticket {shown(x.dl.ticket_id)}" if x.dl.ticket_id else "the rejected record"
        sys.stdout.write(f"{verb} {x.dl.id}: {what} -> {tickets} (attempt {attempts})\n")
    print(f"baton: {verb} {len(todo)}, skipped {len(skipped)}", file=sys.stderr)
    return 0

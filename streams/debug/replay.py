"""``baton replay``: re-run recorded tickets in a namespace of their own and diff the replies."""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, NoReturn

import orjson

from schemas.codec import dumps
from schemas.records import Reply, Ticket
from streams.cli.errors import usage_error
from streams.debug.replay_plan import (
    Selection,
    diff,
    diff_line,
    first_replies,
    parse_offsets,
    select,
    summary,
)
from streams.kafka.topics import TopicNames
from streams.runtime.spawn import Worker, read_replies, spawn_worker, stop_worker
from streams.settings import Settings

_NAMESPACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")


class Bar:
    """A one-line progress bar on stderr, redrawn whenever the count changes."""

    def __init__(self, total: int, label: str, stream: IO[str] | None = None) -> None:
        self.total, self.label, self.stream, self.done = total, label, stream or sys.stderr, -1

    def show(self, done: int) -> None:
        if done == self.done or self.total == 0:
            return
        self.done = done
        filled = int(30 * done / self.total)
        end = "\n" if done >= self.total else ""
        bar = "#" * filled + "-" * (30 - filled)
        self.stream.write(f"\r{self.label} [{bar}] {done}/{self.total}{end}")
        self.stream.flush()

    def close(self) -> None:
        if 0 <= self.done < self.total:
            self.stream.write("\n")
            self.stream.flush()


def _usage(message: str) -> NoReturn:
    usage_error(f"baton replay: {message}")


def _ms(value: str, name: str) -> int:
    from streams.debug.dlq import parse_time

    try:
        return int(parse_time(value).timestamp() * 1000)
    except ValueError:
        _usage(f"{name} is not an RFC 3339 time: {value!r}")


async def _selection(args: argparse.Namespace, settings: Settings) -> Selection:
    from streams.debug.dlq import letters
    from streams.kafka.reader import offsets_at, read_topics

    names = TopicNames.of(settings)
    try:
        from_offsets = parse_offsets(args.from_offset)
        to_offsets = parse_offsets(args.to_offset)
    except ValueError as exc:
        _usage(f"--from-offset/--to-offset: {exc}")
    since = (
        await offsets_at(settings, names.tickets, _ms(args.since, "--since"))
        if args.since
        else None
    )
    until = (
        await offsets_at(settings, names.tickets, _ms(args.until, "--until"))
        if args.until
        else None
    )
    dead = None
    if args.from_dead_letters:
        read = await read_topics(settings, [names.dead_letters])
        dead = frozenset(
            x.dl.ticket_id for x in letters(read[names.dead_letters]) if x.dl.ticket_id
        )
    return Selection(
        from_offsets=from_offsets,
        to_offsets=to_offsets,
        since=since,
        until=until,
        sessions=frozenset(args.session or ()),
        tickets=frozenset(args.ticket or ()),
        dead_lettered=dead,
    )


def start_worker(settings: Settings, namespace: str) -> tuple[Worker | None, Path | None]:
    """``python -m streams worker`` for ``namespace`` with its own web port."""
    from streams.kafka.embedded import free_port

    log = settings.data_dir / "replay" / f"{namespace}-worker.log"
    env = {**os.environ, "BATON_NAMESPACE": namespace, "BATON_WEB_PORT": str(free_port())}
    return spawn_worker(env, log), log


async def wait_for_replies(
    target: Settings, wanted: set[str], timeout: float, proc: Worker | None, bar: Bar
) -> dict[str, Reply]:
    """Read the namespace's replies until every wanted ticket has one, the timeout passes or
    the worker exits; returns what arrived."""
    bar.show(0)
    try:
        replies = TopicNames.of(target).replies
        return await read_replies(target, replies, wanted, timeout, proc, bar.show)
    finally:
        bar.close()


def _say(message: str) -> None:
    print(f"baton replay: {message}", file=sys.stderr, flush=True)


def _dry_run(
    args: argparse.Namespace, namespace: str, tickets: list[Ticket], done: set[str]
) -> int:
    if args.json:
        doc = {
            "namespace": namespace,
            "dry_run": True,
            "selected": len(tickets),
            "tickets": [
                {
                    "ticket_id": t.ticket_id,
                    "session_id": t.session_id,
                    "replied": t.ticket_id in done,
                }
                for t in tickets
            ],
        }
        sys.stdout.write(orjson.dumps(doc).decode() + "\n")
        return 0
    for t in tickets:
        mark = " (already replied in the namespace)" if t.ticket_id in done else ""
        text = " ".join(t.text.split())[:60]
        sys.stdout.write(f"{t.ticket_id} ({t.session_id}){mark}: {text!r}\n")
    _say(f"would replay {len(tickets)} ticket(s) in namespace {namespace}")
    return 0


def _namespace(args: argparse.Namespace, settings: Settings) -> str:
    namespace = args.namespace or "replay-" + datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    if not _NAMESPACE.match(namespace):
        _usage(f"--namespace must be letters, digits, '-' or '_', got {namespace!r}")
    if namespace == settings.namespace:
        _usage("--namespace must differ from the namespace being replayed")
    if args.timeout <= 0:
        _usage("--timeout must be positive")
    return namespace


def _replay(
    args: argparse.Namespace, target: Settings, tickets: list[Ticket], there: dict[str, Any]
) -> tuple[dict[str, Reply], int]:
    """Publish what the namespace lacks, run its worker, collect its replies (and how many
    tickets were published)."""
    from streams.kafka.client import publish
    from streams.kafka.connect import bootstrap_servers
    from streams.kafka.topics import ensure_topics

    into = TopicNames.of(target)
    replies = first_replies(there[into.replies])
    published = {t.ticket_id for t in select(there[into.tickets], Selection()).tickets}
    todo = [t for t in tickets if t.ticket_id not in published | replies.keys()]
    _say(
        f"namespace {target.namespace}: {len(tickets)} ticket(s) selected, {len(todo)} to "
        f"publish, {len(tickets) - len(todo)} already there "
        f"(re-run with --namespace {target.namespace} to resume)"
    )
    wanted = {t.ticket_id for t in tickets}
    if wanted <= replies.keys():
        return replies, 0
    asyncio.run(ensure_topics(target, bootstrap_servers(target)))
    asyncio.run(publish(target, into.tickets, ((t.session_id, dumps(t)) for t in todo)))
    proc, log = start_worker(target, target.namespace) if not args.no_worker else (None, None)
    try:
        bar = Bar(len(wanted), "replaying")
        replies = asyncio.run(wait_for_replies(target, wanted, args.timeout, proc, bar))
        if proc is not None and proc.poll() is not None:
            _say(f"the worker exited with code {proc.returncode}; its log: {log}")
    finally:
        if proc is not None:
            stop_worker(proc, 30.0)
    return replies, len(todo)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from streams.kafka.reader import read_topics

    namespace = _namespace(args, settings)
    source, target = TopicNames.of(settings), settings.with_(namespace=namespace)
    into = TopicNames.of(target)
    selection = asyncio.run(_selection(args, settings))
    read = asyncio.run(read_topics(settings, [source.tickets, source.replies]))
    picked = select(read[source.tickets], selection)
    originals = first_replies(read[source.replies])
    there = asyncio.run(read_topics(target, [into.tickets, into.replies]))
    if args.dry_run:
        return _dry_run(args, namespace, picked.tickets, set(first_replies(there[into.replies])))

    replies, published = _replay(args, target, picked.tickets, there)
    entries = [
        diff(t, originals.get(t.ticket_id), replies.get(t.ticket_id)) for t in picked.tickets
    ]
    doc = summary(
        namespace,
        entries,
        published=published,
        skipped_invalid=picked.invalid,
        skipped_duplicates=picked.duplicates,
    )
    if args.json:
        sys.stdout.write(orjson.dumps(doc).decode() + "\n")
    else:
        for entry in entries:
            sys.stdout.write(diff_line(entry) + "\n")
        sys.stdout.write(
            f"namespace {namespace}: replayed {doc['replayed']}, same {doc['same']}, "
            f"changed {doc['changed']}, new {doc['new']}, failed {doc['failed']}\n"
        )
    if doc["failed"]:
        _say(f"{doc['failed']} ticket(s) got no reply; re-run with --namespace {namespace}")
        return 1
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser("replay", help="re-run recorded tickets in an isolated namespace and diff")
    p.add_argument("--namespace", help="replay namespace (default replay-<time>); reuse to resume")
    p.add_argument("--from-offset", action="append", help="N or PARTITION:N, inclusive")
    p.add_argument("--to-offset", action="append", help="N or PARTITION:N, inclusive")
    p.add_argument("--since", help="tickets published at or after this RFC 3339 time")
    p.add_argument("--until", help="tickets published before this RFC 3339 time")
    p.add_argument("--session", action="append", help="this session (repeatable)")
    p.add_argument("--ticket", action="append", help="this ticket (repeatable)")
    p.add_argument(
        "--from-dead-letters", action="store_true", help="only tickets that have dead letters"
    )
    p.add_argument("--dry-run", action="store_true", help="list what would be replayed")
    p.add_argument("--no-worker", action="store_true", help="a worker for the namespace runs")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for replies")
    p.add_argument("--json", action="store_true", help="one JSON document with the results")
    p.set_defaults(run=run)

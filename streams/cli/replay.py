"""``baton replay``: re-run recorded tickets in a namespace of their own and diff the replies."""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from baton_kafka.streams.cli.batch_options import (
    add_batch_options,
    batches_served,
    check_batch_options,
)
from baton_kafka.streams.cli.errors import Fail, UsageError
from baton_kafka.streams.settings import Settings

if TYPE_CHECKING:
    from baton_kafka.schemas.records import Ticket

_NAMESPACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "replay", help="re-run recorded tickets in an isolated namespace and diff"
    )
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
    add_batch_options(p, "<data dir>/replay/<namespace>-batch.json")
    return p


def _usage(message: str) -> UsageError:
    return UsageError(f"baton replay: {message}")


def _say(message: str) -> None:
    print(f"baton replay: {message}", file=sys.stderr, flush=True)


def _ms(value: str | None, name: str) -> int | None:
    from baton_kafka.streams.debug.dlq import parse_time

    if not value:
        return None
    try:
        return int(parse_time(value).timestamp() * 1000)
    except ValueError:
        raise _usage(f"{name} is not an RFC 3339 time: {value!r}") from None


def _namespace(args: argparse.Namespace, settings: Settings) -> str:
    namespace = args.namespace or "replay-" + datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    if not _NAMESPACE.match(namespace):
        raise _usage(f"--namespace must be letters, digits, '-' or '_', got {namespace!r}")
    if namespace == settings.namespace:
        raise _usage("--namespace must differ from the namespace being replayed")
    if args.timeout <= 0:
        raise _usage("--timeout must be positive")
    return namespace


def _dry_run(
    args: argparse.Namespace, namespace: str, tickets: list[Ticket], done: set[str]
) -> int:
    import orjson

    from baton_kafka.streams.observe.shown import shown

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
        sys.stdout.write(f"{shown(t.ticket_id)} ({shown(t.session_id)}){mark}: {text!r}\n")
    _say(f"would replay {len(tickets)} ticket(s) in namespace {namespace}")
    return 0


def run(args: argparse.Namespace, settings: Settings) -> int:
    import orjson

    from baton_kafka.streams.debug.replay import replay, resolve
    from baton_kafka.streams.debug.replay_plan import (
        Selection,
        diff,
        diff_line,
        first_replies,
        parse_offsets,
        select,
        summary,
    )
    from baton_kafka.streams.kafka.reader import read_topics
    from baton_kafka.streams.kafka.topics import TopicNames

    namespace = _namespace(args, settings)
    batch = check_batch_options(args, "baton replay")
    if batch is not None and args.no_worker:
        raise _usage("--batch answers the tickets itself: it cannot be used with --no-worker")
    if batch is not None and not batches_served(settings.llm):
        raise _usage(f"--batch: BATON_LLM={settings.llm} serves no Message Batches API")
    if batch is not None and (settings.llm != "anthropic" or not settings.anthropic_api_key):
        raise _usage("--batch needs ANTHROPIC_API_KEY and BATON_LLM=anthropic (rules call no API)")
    from baton_kafka.streams.settings import check_topics

    source, target = TopicNames.of(settings), check_topics(settings.with_(namespace=namespace))
    into = TopicNames.of(target)
    try:
        asked = Selection(
            from_offsets=parse_offsets(args.from_offset),
            to_offsets=parse_offsets(args.to_offset),
            sessions=frozenset(args.session or ()),
            tickets=frozenset(args.ticket or ()),
        )
    except ValueError as exc:
        raise _usage(f"--from-offset/--to-offset: {exc}") from None
    since_ms, until_ms = _ms(args.since, "--since"), _ms(args.until, "--until")
    selection = asyncio.run(
        resolve(
            settings,
            asked,
            since_ms=since_ms,
            until_ms=until_ms,
            from_dead_letters=args.from_dead_letters,
        )
    )
    read = asyncio.run(read_topics(settings, [source.tickets, source.replies]))
    picked = select(read[source.tickets], selection)
    originals = first_replies(read[source.replies])
    there = asyncio.run(read_topics(target, [into.tickets, into.replies]))
    if args.dry_run:
        return _dry_run(args, namespace, picked.tickets, set(first_replies(there[into.replies])))

    tally = None
    if batch is not None:
        from baton_kafka.agents.models.batch_journal import BatchFailed
        from baton_kafka.streams.batched import cost_line
        from baton_kafka.streams.debug.replay import replay_in_batches

        try:
            replies, published, tally = replay_in_batches(
                target, picked.tickets, there, batch, say=_say
            )
        except BatchFailed as exc:
            raise Fail(f"baton: replay: {exc}") from None
        if tally is not None:
            _say(cost_line(tally.as_dict()))
    else:
        replies, published = replay(
            target,
            picked.tickets,
            there,
            timeout=args.timeout,
            worker=not args.no_worker,
            say=_say,
        )
    entries = [
        diff(t, originals.get(t.ticket_id), replies.get(t.ticket_id)) for t in picked.tickets
    ]
    doc = summary(
        namespace,
        entries,
        published=published,
        skipped_invalid=picked.invalid,
        skipped_duplicates=picked.duplicates,
        skipped_erased=picked.erased,
        **({"batch": tally.as_dict()} if tally is not None else {}),
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

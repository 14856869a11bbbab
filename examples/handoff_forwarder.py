"""Forward baton's ``handoff`` replies to a human queue: a JSON Lines file or another topic.

A downstream consumer needs only ``schemas`` (and a Kafka client): no Faust, no Anthropic.

    python examples/handoff_forwarder.py --bootstrap 127.0.0.1:9092 --out handoffs.jsonl
    python examples/handoff_forwarder.py --bootstrap 127.0.0.1:9092 --to-topic humans.queue

With ``--group`` offsets are committed after each batch is written, so a restart continues
where it stopped (a crash between writing and committing forwards that batch again:
at-least-once, keyed by ``ticket_id`` for the receiver to drop repeats).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from pydantic import ValidationError

from baton_kafka.schemas import SCHEMA_VERSION, Reply


def handoff_line(value: bytes) -> tuple[str, bytes] | None:
    """The queue entry for a ``handoff`` reply as ``(ticket_id, JSON)``; None for others."""
    try:
        reply = Reply.model_validate_json(value)
    except ValidationError as exc:
        print(
            f"forwarder: skipped an unreadable reply: {exc.error_count()} error(s)", file=sys.stderr
        )
        return None
    if reply.schema_version > SCHEMA_VERSION:
        # Newer layouts only add fields; the ones read here keep their meaning.
        print(
            f"forwarder: reply {reply.ticket_id} has schema_version {reply.schema_version}",
            file=sys.stderr,
        )
    if reply.status != "handoff":
        return None
    entry = {
        "ticket_id": reply.ticket_id,
        "session_id": reply.session_id,
        "customer_id": reply.customer_id,
        "order_id": reply.order_id,
        "language": reply.language,
        "draft_reply": reply.reply,
        "internal_note": reply.internal_note,
        "replied_at": reply.replied_at.isoformat(),
    }
    return reply.ticket_id, json.dumps(entry, ensure_ascii=False).encode()


def append(path: Path, lines: list[bytes]) -> None:
    """Append JSON Lines and flush them to disk before the offsets are committed."""
    with path.open("ab") as out:
        out.writelines(line + b"\n" for line in lines)
        out.flush()
        os.fsync(out.fileno())


async def forward(args: argparse.Namespace) -> int:
    consumer = AIOKafkaConsumer(
        args.topic,
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        enable_auto_commit=False,
        auto_offset_reset="earliest" if args.from_beginning else "latest",
    )
    producer = (
        AIOKafkaProducer(bootstrap_servers=args.bootstrap, acks="all") if args.to_topic else None
    )
    await consumer.start()
    if producer is not None:
        await producer.start()
    forwarded = 0
    try:
        while True:
            batch = await consumer.getmany(timeout_ms=int(args.idle_timeout * 1000))
            if not batch:
                if not args.follow:
                    break
                continue
            entries = [
                e for records in batch.values() for r in records if (e := handoff_line(r.value))
            ]
            if producer is not None:
                for ticket_id, line in entries:
                    await producer.send_and_wait(args.to_topic, line, key=ticket_id.encode())
            elif entries:
                append(Path(args.out), [line for _, line in entries])
            forwarded += len(entries)
            if args.group:
                await consumer.commit()
    finally:
        await consumer.stop()
        if producer is not None:
            await producer.stop()
    print(f"forwarder: forwarded {forwarded} handoff reply(ies)", file=sys.stderr)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap", default="127.0.0.1:9092", help="host:port[,host:port]")
    p.add_argument("--topic", default="support.replies", help="the replies topic")
    p.add_argument("--group", default=None, help="consumer group (commits progress)")
    p.add_argument("--from-beginning", action="store_true", help="without committed offsets")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", help="append JSON Lines to this file")
    where.add_argument("--to-topic", help="send to this topic, keyed by ticket_id")
    p.add_argument("--idle-timeout", type=float, default=5.0, help="stop after N s of silence")
    p.add_argument("--follow", action="store_true", help="never stop on silence")
    return asyncio.run(forward(p.parse_args()))


if __name__ == "__main__":
    sys.exit(main())

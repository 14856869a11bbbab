"""``baton demo``: embedded broker, sample orders, one worker, sample tickets, printed replies."""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from baton_kafka.schemas.codec import dumps, parse
from baton_kafka.schemas.records import Order, Reply, Ticket
from baton_kafka.streams.kafka.embedded import EmbeddedBroker
from baton_kafka.streams.kafka.topics import REPLIES
from baton_kafka.streams.runtime.faust_app.spawn import (
    WorkerProcess,
    read_replies,
    spawn_worker,
    stop_worker,
)
from baton_kafka.streams.settings import Settings


def demo_file(name: str) -> Path:
    """Path of a sample file shipped with the package."""
    return Path(str(resources.files("baton_kafka.streams").joinpath("demo_data", name)))


def read_jsonl(path: Path, model: type[Ticket] | type[Order]) -> list[Any]:
    return [parse(model, line) for line in path.read_bytes().splitlines() if line.strip()]


def import_orders(settings: Settings, orders: Sequence[Order]) -> None:
    """Upsert ``orders`` into the settings' order store."""
    from baton_kafka.streams.runtime.faust_app.orders import build_store

    async def run() -> None:
        store = build_store(settings)
        try:
            await store.upsert(orders)
        finally:
            await store.close()

    asyncio.run(run())


async def collect_replies(
    settings: Settings, ticket_ids: set[str], timeout: float, proc: WorkerProcess | None
) -> dict[str, Reply]:
    """Read ``support.replies`` from the beginning until every ticket has its reply.

    Raises ``RuntimeError`` if the worker exits first, ``TimeoutError`` after ``timeout``.
    """
    replies = await read_replies(settings, settings.topic(REPLIES), ticket_ids, timeout, proc)
    missing = sorted(ticket_ids - replies.keys())
    if missing and proc is not None and proc.poll() is not None:
        raise RuntimeError(f"the worker exited with code {proc.returncode}")
    if missing:
        raise TimeoutError(f"no reply after {timeout:.0f}s for {', '.join(missing)}")
    return replies


def run_demo(settings: Settings, timeout: float = 180.0) -> int:
    """Run the demo; human lines go to stderr, the replies to stdout as JSON Lines."""
    from baton_kafka.streams.kafka.client import publish_tickets

    say = lambda msg: print(f"baton demo: {msg}", file=sys.stderr, flush=True)  # noqa: E731
    with tempfile.TemporaryDirectory(prefix="baton-demo-") as tmp:
        # The sample orders, never a shop's own source. The sample conversations stand for
        # turns written minutes apart, though published at once: no coalescing window.
        settings = settings.with_(
            data_dir=Path(tmp),
            embedded_broker=True,
            orders_source="",
            orders_map="",
            coalesce_window_s=0.0,
        )
        orders = read_jsonl(demo_file("orders.jsonl"), Order)
        tickets = read_jsonl(demo_file("tickets.jsonl"), Ticket)
        if settings.llm == "offline":
            say("model: the OFFLINE rule model (set ANTHROPIC_API_KEY to use Claude)")
        else:
            say(f"model: Claude ({settings.model}) through the Anthropic API")

        import_orders(settings, orders)
        say(f"imported {len(orders)} sample orders")
        with EmbeddedBroker(log=Path(tmp) / "broker.log") as broker:
            settings = settings.with_(broker=broker.url)
            say(f"embedded broker on {broker.url}")
            proc = spawn_worker(settings, Path(tmp) / "worker.log")
            try:
                started = time.monotonic()
                asyncio.run(publish_tickets(settings, tickets))
                say(f"published {len(tickets)} tickets; waiting for replies")
                try:
                    replies = asyncio.run(
                        collect_replies(settings, {t.ticket_id for t in tickets}, timeout, proc)
                    )
                except (TimeoutError, RuntimeError) as exc:
                    log = (Path(tmp) / "worker.log").read_text(errors="replace")[-3000:]
                    print(log, file=sys.stderr)
                    say(f"failed: {exc}")
                    return 1
                say(f"{len(replies)} replies in {time.monotonic() - started:.1f}s")
                for t in tickets:
                    r = replies[t.ticket_id]
                    say(f"[{t.session_id}] {t.text[:60]!r} -> {r.status}, order {r.order_id}")
                for t in tickets:
                    sys.stdout.write(dumps(replies[t.ticket_id]).decode() + "\n")
                sys.stdout.flush()
            finally:
                stop_worker(proc)
    return 0

"""Fault-test helpers: sample conversations, and counting what a run delivered (lost,
duplicated, reordered replies; re-read records; which worker did what)."""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from schemas.baton import Baton
from schemas.records import Reply
from tests.conftest import ARTIFACTS
from tests.integration.harness import Deployment, Worker

KETTLE = "Midea Electric Kettle 1.7L"
HEADPHONES = "Sony WH-1000XM5 Headphones"
OPENING = {
    KETTLE: "My kettle is leaking, I want a refund.",
    HEADPHONES: "My headphones stopped working, I want a refund.",
}
FOLLOW_UPS = ["Actually, can I send it back for repair instead?", "How long will that take?"]


def orders_of(customer: str) -> list[dict[str, Any]]:
    """Two delivered orders, so only the session's baton tells which one a follow-up means."""
    return [
        {
            "order_id": f"{customer}-K",
            "customer_id": customer,
            "product_name": KETTLE,
            "status": "delivered",
            "amount": 39.9,
            "currency": "USD",
            "ordered_at": "2026-10-02T10:00:00Z",
            "delivered_at": "2026-10-05T10:00:00Z",
        },
        {
            "order_id": f"{customer}-H",
            "customer_id": customer,
            "product_name": HEADPHONES,
            "status": "delivered",
            "amount": 349.0,
            "currency": "USD",
            "ordered_at": "2026-09-12T10:00:00Z",
            "delivered_at": "2026-09-15T10:00:00Z",
        },
    ]


def ticket(tid: str, session: str, customer: str | None, text: str) -> dict[str, Any]:
    return {"ticket_id": tid, "session_id": session, "customer_id": customer, "text": text}


def conversations(prefix: str, n_sessions: int) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Three tickets per session (interleaved across sessions) and each session's order id."""
    tickets: list[dict[str, Any]] = []
    expected: dict[str, str] = {}
    for turn, texts in enumerate([None, *FOLLOW_UPS]):
        for i in range(n_sessions):
            customer, session = f"{prefix}c{i}", f"{prefix}s{i}"
            product = KETTLE if i % 2 == 0 else HEADPHONES
            expected[session] = f"{customer}-{'K' if product == KETTLE else 'H'}"
            text = texts or OPENING[product]
            tickets.append(ticket(f"{prefix}t{i}-{turn}", session, customer, text))
    return tickets, expected


@dataclass(frozen=True)
class Read:
    """One record as read back: where it sits and what it holds."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes


async def drain(
    deployment: Deployment,
    topic: str,
    *,
    at_least: int = 0,
    quiet: float = 3.0,
    timeout: float = 150.0,
    namespaced: bool = True,
) -> list[Read]:
    """Every record of ``topic`` once ``at_least`` arrived and nothing new came for ``quiet`` s.

    Reading on after the count is reached is what lets a late duplicate show up.
    ``namespaced=False`` reads a topic by its full name (e.g. a table's changelog).
    """
    consumer = AIOKafkaConsumer(
        deployment.topic(topic) if namespaced else topic,
        bootstrap_servers=deployment.broker.bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        metadata_max_age_ms=500,
    )
    await consumer.start()
    records: list[Read] = []
    deadline = time.monotonic() + timeout
    last_new = time.monotonic()
    try:
        while len(records) < at_least or time.monotonic() - last_new < quiet:
            if time.monotonic() > deadline:
                logs = "\n".join(w.tail_log(2500) for w in deployment.workers)
                raise AssertionError(
                    f"timed out draining {topic}: {len(records)} of {at_least} records\n{logs}"
                )
            for w in deployment.workers:
                assert w.stopped or w.proc.poll() is None, f"worker exited:\n{w.tail_log()}"
            batch = await consumer.getmany(timeout_ms=300)
            for rs in batch.values():
                if rs:
                    last_new = time.monotonic()
                records.extend(Read(r.partition, r.offset, r.key, r.value) for r in rs)
    finally:
        await consumer.stop()
    return records


async def replies(
    deployment: Deployment, at_least: int, quiet: float = 3.0, timeout: float = 150.0
) -> list[Reply]:
    """All replies, in partition order, once ``at_least`` arrived and the topic went quiet."""
    records = await drain(
        deployment, "support.replies", at_least=at_least, quiet=quiet, timeout=timeout
    )
    records.sort(key=lambda r: (r.partition, r.offset))
    return [Reply.model_validate_json(r.value) for r in records]


@dataclass
class Tally:
    """What the replies say about the guarantees for the tickets that were published."""

    published: dict[str, list[str]]
    replies: list[Reply]

    @property
    def expected(self) -> set[str]:
        return {t for tickets in self.published.values() for t in tickets}

    @property
    def counts(self) -> Counter[str]:
        return Counter(r.ticket_id for r in self.replies)

    @property
    def lost(self) -> list[str]:
        return sorted(self.expected - set(self.counts))

    @property
    def duplicates(self) -> dict[str, int]:
        return {t: n for t, n in self.counts.items() if n > 1}

    @property
    def unexpected(self) -> list[str]:
        return sorted(set(self.counts) - self.expected)

    def out_of_order(self) -> dict[str, list[str]]:
        """Sessions whose replies (first copy of each) are not in publication order."""
        seen: dict[str, list[str]] = defaultdict(list)
        for r in self.replies:
            if r.ticket_id not in seen[r.session_id]:
                seen[r.session_id].append(r.ticket_id)
        return {
            s: seen[s]
            for s, tickets in self.published.items()
            if [t for t in seen[s] if t in tickets] != [t for t in tickets if t in seen[s]]
        }

    def assert_exactly_once_in_order(self, allowed_duplicates: Iterable[str] = ()) -> None:
        """One reply per ticket, in session order; ``allowed_duplicates`` may have two."""
        assert not self.lost, f"lost: {self.lost}"
        extra = {t: n for t, n in self.duplicates.items() if t not in set(allowed_duplicates)}
        assert not extra, f"duplicate replies: {extra}"
        assert all(n <= 2 for n in self.duplicates.values()), self.duplicates
        assert not self.unexpected, f"replies to tickets never published: {self.unexpected}"
        assert not self.out_of_order(), f"reordered sessions: {self.out_of_order()}"


def sessions(tickets: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """Ticket ids by session, in publication order."""
    out: dict[str, list[str]] = defaultdict(list)
    for t in tickets:
        out[str(t["session_id"])].append(str(t["ticket_id"]))
    return dict(out)


def calls_by_ticket_stage(stats: dict[str, Any], prefix: str = "") -> Counter[tuple[str, str]]:
    """Model calls per (ticket, stage) in a stand-in's ``stats()``, for tickets with ``prefix``."""
    return Counter(
        (r["ticket_id"], r["stage"])
        for r in stats["requests"]
        if r["ticket_id"] and str(r["ticket_id"]).startswith(prefix)
    )


def unanswered_calls(stats: dict[str, Any]) -> set[tuple[str, str]]:
    """(ticket, stage) of calls the stand-in had not answered yet (no usage noted)."""
    return {
        (r["ticket_id"], r["stage"])
        for r in stats["requests"]
        if r["status"] in (200, 499) and "input_tokens" not in r
    }


async def committed_offsets(
    deployment: Deployment, topics: Iterable[str], partitions: int
) -> dict[tuple[str, int], int]:
    """The worker group's committed offsets (0 when nothing was committed yet)."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=deployment.broker.bootstrap,
        group_id=f"baton-{deployment.namespace}",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        out = {}
        for topic in topics:
            for p in range(partitions):
                tp = TopicPartition(deployment.topic(topic), p)
                committed = await consumer.committed(tp)
                out[(topic, p)] = committed or 0
        return out
    finally:
        await consumer.stop()


async def wait_for(predicate: Any, timeout: float, what: str, step: float = 0.2) -> None:
    """Poll ``predicate()`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(step)


def figures(name: str, **values: object) -> None:
    """Print a test's measured figures (shown with ``pytest -s``; kept for the docs)."""
    line = " ".join(f"{k}={v}" for k, v in values.items())
    print(f"\n[figures] {name}: {line}")
    with (ARTIFACTS / "figures.log").open("a") as out:
        out.write(f"{name}: {line}\n")


def synced_generation(log: Path) -> int | None:
    """The consumer-group generation a worker last synced with, from its log."""
    found = re.findall(r"Successfully synced group \S+ with generation (\d+)", log.read_text())
    return int(found[-1]) if found else None


async def settled(workers: list[Worker], timeout: float = 90.0) -> None:
    """Wait until every worker has synced with the group, all in the same generation."""

    def same() -> bool:
        generations = {synced_generation(w.log) for w in workers}
        return len(generations) == 1 and None not in generations

    await wait_for(same, timeout, "the workers to settle on one group generation")


async def recorded_in_flight(deployment: Deployment) -> set[tuple[str, str]]:
    """(ticket, stage) of every entry in flight that reached the batons' changelog."""
    topic = f"baton-{deployment.namespace}-batons-changelog"
    records = await drain(deployment, topic, quiet=1.5, namespaced=False)
    out: set[tuple[str, str]] = set()
    for r in records:
        if r.key is not None and r.value is not None:
            entry = Baton.model_validate_json(r.value).in_flight
            if entry is not None:
                out.add((entry.ticket_id, entry.stage))
    return out

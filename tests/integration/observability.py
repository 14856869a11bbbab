"""Helpers of the web tests: HTTP against a worker, /metrics parsing, one known run."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from agents.testing.standin import StandIn
from schemas.records import DeadLetter, Reply
from tests.integration.harness import KETTLE_ORDER, Deployment, Worker

Samples = dict[str, list[tuple[dict[str, str], float]]]

ORDERS = [
    KETTLE_ORDER,
    {
        "order_id": "O-1002",
        "customer_id": "c-ana",
        "product_name": "Sony WH-1000XM5 Headphones",
        "status": "shipped",
        "amount": 349.0,
        "currency": "USD",
        "ordered_at": "2026-10-12T10:00:00Z",
        "delivered_at": None,
        "carrier": "UPS",
        "tracking_no": "1Z998",
    },
    {
        "order_id": "O-2001",
        "customer_id": "c-li",
        "product_name": "美的电热水壶 1.7L",
        "status": "delivered",
        "amount": 199.0,
        "currency": "CNY",
        "ordered_at": "2026-10-20T10:00:00Z",
        "delivered_at": "2026-10-23T10:00:00Z",
        "carrier": "顺丰",
        "tracking_no": "SF100",
    },
]


async def get(
    worker: Worker, path: str, token: str | None = None, timeout: float = 10.0
) -> tuple[int, str, bytes]:
    """GET ``path`` on the worker's web port: status, content type, body."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    url = f"http://127.0.0.1:{worker.web_port}{path}"
    client_timeout = aiohttp.ClientTimeout(total=timeout)
    async with (
        aiohttp.ClientSession(timeout=client_timeout) as http,
        http.get(url, headers=headers) as r,
    ):
        return r.status, r.headers.get("Content-Type", ""), await r.read()


async def health_until_ready(
    worker: Worker, token: str | None = None, timeout: float = 90.0
) -> list[tuple[int, bytes]]:
    """Poll /health from the moment the port answers until it says ready; every answer seen."""
    seen: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + timeout
    while not seen or seen[-1][0] != 200:
        assert time.monotonic() < deadline, f"never ready: {seen[-3:]}\n{worker.tail_log()}"
        assert worker.proc.poll() is None, f"worker exited:\n{worker.tail_log()}"
        try:
            status, _, body = await get(worker, "/health", token, timeout=5)
            seen.append((status, body))
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.05)
    return seen


def parse_metrics(text: str) -> Samples:
    """Prometheus text as ``{sample name: [(labels, value), ...]}``."""
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((dict(s.labels), s.value))
    return out


def total(samples: Samples, name: str, **match: str) -> float:
    """Sum of the samples of ``name`` whose labels include ``match``."""
    return sum(
        v
        for labels, v in samples.get(name, [])
        if all(labels.get(k) == x for k, x in match.items())
    )


def by_label(samples: Samples, name: str, label: str) -> dict[str, float]:
    out: Counter[str] = Counter()
    for labels, v in samples.get(name, []):
        out[labels[label]] += v
    return {k: v for k, v in out.items() if v}


async def scrape(worker: Worker, token: str | None = None) -> Samples:
    status, content_type, body = await get(worker, "/metrics", token)
    assert status == 200, body
    assert content_type.startswith("text/plain; version=0.0.4")
    return parse_metrics(body.decode())


@dataclass
class KnownRun:
    """What a known run produced, read back from the topics and the stand-in."""

    tickets: list[str]
    replies: list[Reply]
    dead_letters: list[DeadLetter]
    model_calls: int


def tickets_of(prefix: str) -> list[dict[str, Any]]:
    """Five valid tickets: one whose understand call fails for good, one retried once."""

    def t(n: int, session: str, customer: str | None, text: str) -> dict[str, Any]:
        return {
            "ticket_id": f"{prefix}-{n}",
            "session_id": f"{prefix}-{session}",
            "customer_id": customer,
            "text": text,
        }

    return [
        t(1, "s1", "c-ana", "My kettle stopped working after a week, I want a refund."),
        t(2, "s1", "c-ana", "Also, where are my headphones? They have not arrived yet."),
        t(3, "s2", "c-li", "我的电热水壶坏了，可以换一个吗？ [[fault:500:understand:3]]"),
        t(4, "s3", "c-ana", "How do I descale the kettle? [[fault:429:strategy:1]]"),
        t(5, "s4", None, "Do you ship to Canada?"),
    ]


async def known_run(deployment: Deployment, standin: StandIn, prefix: str) -> KnownRun:
    """Publish the five tickets and one invalid record; wait for every reply and dead letter."""
    tickets = tickets_of(prefix)
    await deployment.publish_tickets(tickets[:2])
    await deployment.publish([(None, b'{"ticket_id": "broken" ')])
    await deployment.publish_tickets(tickets[2:])
    replies = await deployment.replies(len(tickets), timeout=120)
    letters = await deployment.dead_letters(2, timeout=60)
    ids = {t["ticket_id"] for t in tickets}
    calls = sum(
        1 for r in standin.stats()["requests"] if r["ticket_id"] in ids and r["status"] == 200
    )
    return KnownRun(
        tickets=sorted(ids),
        replies=replies,
        dead_letters=[dl for dl, _ in letters],
        model_calls=calls,
    )

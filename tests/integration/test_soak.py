"""Soak: a few hundred tickets with a seeded random mix of model faults on the real broker.

Nothing may be lost or answered twice, sessions stay in order, every reply that is not
``answered`` has its dead letter (and no answered one has any), and a fault the pipeline can
recover from (one retry, one re-ask) still ends ``answered``. The run's figures are printed
and written to tests/artifacts/soak.json.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from baton_kafka.agents.testing.standin import StandIn, run_in_thread
from baton_kafka.schemas import DeadLetter, Reply
from tests.fixtures import delivery
from tests.fixtures.brokers import Broker
from tests.fixtures.data import ticket_record
from tests.fixtures.deployments import open_deployment
from tests.fixtures.paths import ARTIFACTS

pytestmark = pytest.mark.integration

SEED = 20261130
SESSIONS, PER_SESSION = 60, 5
FAULT_RATE = 0.3
# (fault, stage, count) -> whether the pipeline recovers (one retry or one re-ask is enough).
FAULT_MIX: dict[tuple[str, str, int], bool] = {
    ("invalid_json", "understand", 1): True,
    ("invalid_json", "understand", 9): False,
    ("schema", "strategy", 9): False,
    ("rule", "understand", 9): False,
    ("rule", "strategy", 1): True,
    ("429", "any", 1): True,
    ("529", "strategy", 1): True,
    ("529", "understand", 9): False,
    ("500", "any", 1): True,
    ("hang", "understand", 1): True,
    ("hang", "strategy", 9): False,
    ("max_tokens", "strategy", 1): True,
    ("max_tokens", "understand", 9): False,
    ("refusal", "strategy", 1): False,
    ("spend_limit", "any", 9): False,
    ("drift", "strategy", 1): True,
    ("drift", "strategy", 2): False,
}
PRODUCTS = [
    ("Midea Electric Kettle 1.7L", "kettle", 39.9),
    ("Sony WH-1000XM5 Headphones", "headphones", 349.0),
    ("DualSense Wireless Controller", "controller", 69.0),
    ("Philips Air Fryer XL", "air fryer", 129.0),
    ("Dyson V12 Vacuum Cleaner", "vacuum", 499.0),
]
OPENINGS = [
    "My {p} is leaking, I want a refund.",
    "My {p} stopped working, can you repair it?",
    "The {p} arrived damaged, I would like an exchange.",
    "Where is my {p}? It has not arrived yet.",
    "I was charged twice for the {p}.",
]
FOLLOW_UPS = [
    "Actually, can I send it back for repair instead?",
    "How long will that take?",
    "Can I get a replacement instead?",
    "Thanks. Will I get an email?",
]


def orders() -> list[dict[str, Any]]:
    """Ten customers with three orders each, of three different products."""
    out = []
    for c in range(10):
        for k in range(3):
            name, _, amount = PRODUCTS[(c + k) % len(PRODUCTS)]
            out.append(
                {
                    "order_id": f"O-{c}{k}",
                    "customer_id": f"c-{c}",
                    "product_name": name,
                    "status": "delivered",
                    "amount": amount,
                    "currency": "USD",
                    "ordered_at": f"2026-{9 + k:02d}-0{c % 9 + 1}T10:00:00Z",
                }
            )
    return out


def tickets(prefix: str, rng: random.Random) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The sessions' tickets and, per ticket id, the fault directive it carries (or None)."""
    out, faults = [], {}
    kinds = list(FAULT_MIX)
    for s in range(SESSIONS):
        customer = s % 10
        _, word, _ = PRODUCTS[(customer + rng.randrange(3)) % len(PRODUCTS)]
        texts = [rng.choice(OPENINGS).format(p=word)]
        texts += [rng.choice(FOLLOW_UPS) for _ in range(PER_SESSION - 1)]
        for i, text in enumerate(texts):
            tid = f"{prefix}-s{s}-t{i}"
            fault = rng.choice(kinds) if rng.random() < FAULT_RATE else None
            if fault:
                text = f"{text} [[fault:{fault[0]}:{fault[1]}:{fault[2]}]]"
            faults[tid] = fault
            out.append(ticket_record(tid, f"{prefix}-s{s}", f"c-{customer}", text))
    return out, faults


@pytest.fixture
def soak_standin() -> Iterator[StandIn]:
    """A stand-in of this test's own (stats of its own), caching at each model's real minimum."""
    with run_in_thread(
        latency=0.02, jitter=0.02, retry_after=0.2, seed=SEED, min_cache_tokens=None
    ) as s:
        yield s


@pytest.mark.timeout(900)
async def test_soak_with_a_random_fault_mix(
    broker: Broker, namespace: str, soak_standin: StandIn, tmp_path: Path
) -> None:
    published, faults = tickets(namespace, random.Random(SEED))
    with open_deployment(
        broker,
        soak_standin.base_url,
        tmp_path,
        namespace,
        BATON_MODEL_TIMEOUT="1.5",
        BATON_TICKET_MODEL_BUDGET="8",
        BATON_MODEL_CONCURRENCY="16",
    ) as deployment:
        deployment.import_orders(orders())
        deployment.start_worker()
        started = time.monotonic()
        await deployment.publish_tickets(published)
        replies = await delivery.replies(deployment, len(published), quiet=4.0, timeout=780)
        elapsed = time.monotonic() - started
        records = await delivery.drain(deployment, "support.dead-letters", quiet=2.0)
    letters = [DeadLetter.model_validate_json(r.value) for r in records]
    report = figures(published, faults, replies, letters, soak_standin.stats(), elapsed)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "soak.json").write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    print("\nsoak:", orjson.dumps(report).decode())

    tally = delivery.Tally(delivery.sessions(published), replies)
    tally.assert_exactly_once_in_order()
    lettered = Counter(d.ticket_id for d in letters)
    assert not set(lettered) - set(faults), "dead letters for unknown tickets"
    for reply in replies:
        fault = faults[reply.ticket_id]
        has_letter = reply.ticket_id in lettered
        assert (reply.status != "answered") == has_letter, (reply.ticket_id, fault, reply.status)
        recoverable = fault is None or FAULT_MIX[fault]
        assert (reply.status == "answered") == recoverable, (reply.ticket_id, fault, reply)
    assert report["faulty_requests_by_kind"], "the mix injected nothing"
    assert report["cache_read_share"] > 0.5


def figures(
    published: list[dict[str, Any]],
    faults: dict[str, Any],
    replies: list[Reply],
    letters: list[DeadLetter],
    stats: dict[str, Any],
    elapsed: float,
) -> dict[str, Any]:
    """What the run did, for the report."""
    n = len(published)
    answered = [r for r in stats["requests"] if "input_tokens" in r]
    tokens = Counter[str]()
    for r in answered:
        for kind in ("input_tokens", "output_tokens", "cache_read_input_tokens"):
            tokens[kind] += r[kind]
        tokens["cache_creation_input_tokens"] += r["cache_creation_input_tokens"]
    prompt_tokens = (
        tokens["input_tokens"]
        + tokens["cache_read_input_tokens"]
        + tokens["cache_creation_input_tokens"]
    )
    cost = sum(r.usage.cost_usd for r in replies)
    return {
        "tickets": n,
        "sessions": len({t["session_id"] for t in published}),
        "seconds": round(elapsed, 1),
        "tickets_with_a_fault": sum(1 for f in faults.values() if f),
        "tickets_by_fault": dict(
            sorted(Counter(":".join(map(str, f)) for f in faults.values() if f).items())
        ),
        "faulty_requests_by_kind": dict(sorted(stats["by_fault"].items())),
        "replies": len(replies),
        "lost": n - len({r.ticket_id for r in replies}),
        "duplicates": len(replies) - len({r.ticket_id for r in replies}),
        "status": dict(Counter(r.status for r in replies)),
        "dead_letters": dict(Counter(f"{d.stage}:{d.reason}" for d in letters)),
        "http_requests_per_ticket": round(stats["calls"] / n, 2),
        "model_calls_per_ticket": round(sum(r.usage.calls for r in replies) / n, 2),
        "tokens_per_ticket": round(sum(tokens.values()) / n, 1),
        "cache_read_share": round(tokens["cache_read_input_tokens"] / prompt_tokens, 3),
        "cost_usd_per_ticket": round(cost / n, 6),
        "max_in_flight": stats["max_in_flight"],
    }

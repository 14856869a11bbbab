"""No poison decision: malformed and extreme decisions and tickets, signed as a desk signs them,
on every partition of a running worker; each decision is a dead letter, and every partition's
later decisions and tickets are still applied and answered, the parked approval included."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from baton_kafka.schemas import DeadLetter
from baton_kafka.streams.runtime.records.placement import session_partition
from baton_kafka.streams.runtime.records.signing import Signer
from tests.fixtures import delivery
from tests.fixtures.data import ticket_record
from tests.fixtures.deployments import Deployment
from tests.integration.test_decisions import ALPINE, JACKET, KEYS

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

PARTITIONS = 4
SIGNER = Signer((tuple(KEYS.split(":", 1)),))  # type: ignore[arg-type]


async def end_offsets(d: Deployment, topics: list[str]) -> dict[tuple[str, int], int]:
    """Each partition's end offset, keyed like ``delivery.committed_offsets``."""
    consumer = AIOKafkaConsumer(bootstrap_servers=d.broker.bootstrap)
    await consumer.start()
    try:
        tps = {TopicPartition(d.topic(t), p): (t, p) for t in topics for p in range(PARTITIONS)}
        ends = await consumer.end_offsets(list(tps))
        return {tps[tp]: offset for tp, offset in ends.items()}
    finally:
        await consumer.stop()


def one_session_per_partition() -> list[str]:
    found: dict[int, str] = {}
    for i in itertools.count():
        sid = f"s-fuzz-{i}"
        found.setdefault(session_partition(sid, PARTITIONS), sid)
        if len(found) == PARTITIONS:
            return [found[p] for p in range(PARTITIONS)]
    raise AssertionError("unreachable")


def poison(session: str) -> list[bytes]:
    """Decisions no worker may apply, and none may stop a partition."""

    def rec(did: str, **fields: Any) -> bytes:
        return orjson.dumps({"decision_id": f"{session}-{did}", "session_id": session, **fields})

    raw = f'{{"decision_id":"{session}-r%d","session_id":"{session}",%s}}'
    return [
        b"",
        b"\xff\xfe\x00 not json",
        b"[]",
        b"null",
        b"1e308",
        (raw % (1, '"action":"approve","item":"t","amount":1e308')).encode(),
        (raw % (2, '"action":"approve","item":"t","amount":1e400')).encode(),
        (raw % (3, '"action":"approve","item":"t","amount":' + "9" * 40)).encode(),
        (raw % (4, '"action":"approve","item":"t","amount":NaN')).encode(),
        (raw % (5, '"action":"takeover","schema_version":' + "1" * 30)).encode(),
        (raw % (6, '"action":"takeover","decided_at":1e20')).encode(),
        rec("a", action="takeover", decided_at="9999-12-31T23:59:59Z"),
        rec("b", action="takeover", decided_at="0001-01-01T00:00:00"),
        rec(
            "c",
            action="answer",
            text="x",
            offer=[{"kind": "refund", "order_id": "", "amount": 1e300}],
        ),
        rec("d", action="answer", text="x", offer=[{"kind": "refund", "order_id": ""}] * 9),
        rec("e", action="answer", text="x" * 5_000),
        rec("f", action="approve", item="t" * 10_000),
        rec("g", action="refund-everything"),
        rec("h", action="takeover", decided_at="2000-01-01T00:00:00Z"),
        rec("i", action="handback"),
        rec("j", action="approve", item="nothing-pending", amount=-0.0),
        b'{"decision_id":' * 600 + b"1" + b"}" * 600,
    ]


def poison_tickets(session: str) -> list[bytes]:
    base = {"ticket_id": f"{session}-pt", "session_id": session, "customer_id": "c-ana"}
    return [
        b"\xff\xfe",
        b"1e308",
        orjson.dumps({**base, "text": "x", "created_at": "9999-12-31T23:59:59Z"}),
        orjson.dumps({**base, "text": "x", "created_at": 1e20}),
        orjson.dumps({**base, "text": "x"})[:-1] + b',"schema_version":' + b"9" * 30 + b"}",
        orjson.dumps({**base, "ticket_id": 1e308, "text": "refund 1e308 EUR"}),
        orjson.dumps({**base, "text": "x" * 30_000}),
    ]


async def test_no_decision_or_ticket_stops_a_partition(deployment: Deployment) -> None:
    d = deployment
    d.env_extra.update(BATON_POLICY=str(ALPINE), BATON_SIGNING_KEYS=KEYS)
    d.import_orders([JACKET])
    d.start_worker()
    sessions = one_session_per_partition()
    park = f"t-park-{d.namespace}"
    await d.publish_tickets(
        [ticket_record(park, "s-park", "c-ana", "Please cancel my jacket order.")]
        + [
            ticket_record(f"{s}-t1-{d.namespace}", s, "c-ana", "When does my jacket ship?")
            for s in sessions
        ]
    )
    first = await delivery.replies(d, 1 + PARTITIONS)
    [held] = [r for r in first if r.session_id == "s-park"]
    assert held.offer is not None and held.offer.state == "needs_approval"

    topic = d.topic("support.decisions")
    sent = 0
    for s in [*sessions, "s-park"]:
        for value in poison(s):
            await d.publish(
                [(s, value)], topic="support.decisions", headers=SIGNER.headers(topic, s, value)
            )
            sent += 1
        await d.publish([(s, v) for v in poison_tickets(s)])
    # The approval that stopped its partition: 1e308 on the parked offer itself.
    worst = (
        orjson.dumps(
            {"decision_id": "p-worst", "session_id": "s-park", "item": park, "action": "approve"}
        )[:-1]
        + b',"amount":1e308}'
    )
    await d.publish(
        [("s-park", worst)],
        topic="support.decisions",
        headers=SIGNER.headers(topic, "s-park", worst),
    )
    sent += 1

    # After the poison, on every partition: a person's answer, a ticket, and the approval.
    for s in sessions:
        ok = orjson.dumps(
            {
                "decision_id": f"{s}-ok",
                "session_id": s,
                "action": "answer",
                "text": "Hi, Ana here: we are on it.",
            }
        )
        await d.publish([(s, ok)], topic="support.decisions", headers=SIGNER.headers(topic, s, ok))
    await d.publish_tickets(
        [
            ticket_record(f"{s}-t2-{d.namespace}", s, "c-ana", "Any news about my jacket?")
            for s in sessions
        ]
    )
    approve = orjson.dumps(
        {"decision_id": "p-ok", "session_id": "s-park", "item": park, "action": "approve"}
    )
    await d.publish(
        [("s-park", approve)],
        topic="support.decisions",
        headers=SIGNER.headers(topic, "s-park", approve),
    )

    def answered(values: list[bytes]) -> bool:
        return (
            all(f'"decision_id":"{s}-ok"'.encode() in b"".join(values) for s in sessions)
            and (b'"decision_id":"p-ok"' in b"".join(values))
            and sum(f"-t2-{d.namespace}".encode() in v for v in values) >= PARTITIONS
        )

    records = await d.read("support.replies", answered, timeout=240)
    replies = [orjson.loads(v) for v, _ in records]
    confirmed = [r for r in replies if r.get("decision_id") == "p-ok"]
    assert len(confirmed) == 1 and confirmed[0]["offer"]["state"] == "approved"
    assert not [r for r in replies if r.get("decision_id") == "p-worst"]

    def decided(values: list[bytes]) -> int:
        return sum(b'"stage":"decide"' in v for v in values)

    letters = await d.read("support.dead-letters", lambda vs: decided(vs) >= sent, timeout=120)
    refused = [DeadLetter.model_validate_json(v) for v, _ in letters if b'"stage":"decide"' in v]
    assert len(refused) == sent
    reasons = {dl.reason for dl in refused}
    assert reasons <= {
        "invalid_input",
        "decision_expired",
        "decision_not_pending",
        "untrusted_record",
    }
    assert "decision_failed" not in reasons

    # Every partition moved on: the worker's group committed each to its end.
    ends = await end_offsets(d, ["support.decisions", "support.tickets"])
    deadline = asyncio.get_running_loop().time() + 90
    while (
        got := await delivery.committed_offsets(
            d, ["support.decisions", "support.tickets"], PARTITIONS
        )
    ) != ends:
        assert asyncio.get_running_loop().time() < deadline, f"stuck: {got} != {ends}"
        await asyncio.sleep(1)
    delivery.figures(
        f"poison decisions and tickets, {d.broker.kind}",
        partitions=PARTITIONS,
        poison_decisions=sent,
        dead_letters=len(refused),
        reasons=sorted(reasons),
    )

"""Downstream consumers: ``schemas`` alone, the hand-off forwarder against a real run, and a
Node.js consumer that knows only the JSON Schemas."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from baton_kafka.schemas import DeadLetter, Ticket, dumps
from baton_kafka.streams.kafka.connect import topic_partitions
from tests.fixtures.data import ORDERS, handoff_packet, reply, ticket_record
from tests.fixtures.deployments import Deployment, settings_of
from tests.fixtures.paths import ROOT

pytestmark = pytest.mark.integration

FORWARDER = ROOT / "examples" / "handoff_forwarder.py"


def test_schemas_imports_without_faust_or_anthropic() -> None:
    probe = (
        "import sys, baton_kafka.schemas\n"
        "from baton_kafka.schemas import Reply, DeadLetter, Ticket\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('faust', 'anthropic', 'aiokafka', 'mode') or m.split('.')[:2] in "
        "(['baton_kafka', 'streams'], ['baton_kafka', 'agents']))\n"
        "print(','.join(heavy))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, cwd=ROOT, timeout=60, check=True
    )
    assert done.stdout.decode().strip() == ""


def forwarder(d: Deployment, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [
            sys.executable,
            str(FORWARDER),
            "--bootstrap",
            d.broker.bootstrap,
            "--topic",
            d.topic("support.replies"),
            "--idle-timeout",
            "3",
            *args,
        ],
        capture_output=True,
        timeout=90,
        cwd=ROOT,
    )


async def test_forwarder_queues_exactly_the_handoff_replies(deployment: Deployment) -> None:
    ns = deployment.namespace
    deployment.import_orders(ORDERS)
    deployment.start_worker()
    await deployment.publish_tickets(
        [
            ticket_record(f"{ns}-ok", "s-ok", "c-ana", "My kettle is leaking, I want a refund."),
            ticket_record(f"{ns}-h", "s-h", "c-ana", "Kettle leaks. [[fault:schema:strategy:2]]"),
            ticket_record(f"{ns}-zh", "s-zh", "c-li", "我的水壶漏水了"),
        ]
    )
    replies = {r.ticket_id: r for r in await deployment.replies(3)}
    assert replies[f"{ns}-h"].status == "handoff"

    queue = deployment.data_dir / "handoffs.jsonl"
    group = f"{ns}-forwarder"
    done = forwarder(deployment, "--out", str(queue), "--group", group, "--from-beginning")
    assert done.returncode == 0, done.stderr.decode()
    entries = [json.loads(line) for line in queue.read_text().splitlines()]
    assert [e["ticket_id"] for e in entries] == [f"{ns}-h"]
    assert entries[0]["session_id"] == "s-h"
    assert entries[0]["draft_reply"] == replies[f"{ns}-h"].reply
    assert entries[0]["internal_note"] == replies[f"{ns}-h"].internal_note

    # The group committed what it read, so a restart continues after these replies.
    consumer = AIOKafkaConsumer(
        bootstrap_servers=deployment.broker.bootstrap, group_id=group, enable_auto_commit=False
    )
    await consumer.start()
    try:
        topic = deployment.topic("support.replies")
        partitions = (await topic_partitions(settings_of(deployment), [topic]))[topic]
        committed = [await consumer.committed(TopicPartition(topic, p)) for p in partitions]
    finally:
        await consumer.stop()
    assert sum(c or 0 for c in committed) == len(replies)


NODE_CONSUMER = ROOT / "examples" / "node-consumer"


@pytest.fixture(scope="module")
def node_consumer() -> Path:
    """The Node.js example with its locked dependencies installed."""
    done = subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund", "--silent"],
        cwd=NODE_CONSUMER,
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return NODE_CONSUMER / "validate.mjs"


def _validate(script: Path, record: str, lines: list[bytes]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["node", str(script), record],
        input=b"\n".join(lines) + b"\n",
        capture_output=True,
        timeout=60,
    )


def test_a_node_consumer_validates_records_with_the_json_schemas_alone(
    node_consumer: Path,
) -> None:
    good_reply = dumps(reply("t1", "s1", order_id="O-1001", reply="Your refund is on its way."))
    letter = DeadLetter(
        id="d1",
        ticket_id=None,
        session_id=None,
        stage="intake",
        reason="invalid_input",
        error="not JSON",
        payload="x",
    )
    ticket = dumps(Ticket(ticket_id="t1", session_id="s1", customer_id="c1", text="hi"))
    for record, value in (
        ("reply", good_reply),
        ("dead-letter", dumps(letter)),
        ("ticket", ticket),
        ("handoff-packet", dumps(handoff_packet())),
    ):
        done = _validate(node_consumer, record, [value])
        assert done.returncode == 0, (record, done.stdout.decode(), done.stderr.decode())
        assert b"1 valid, 0 invalid" in done.stderr

    wrong = json.loads(good_reply)
    wrong["status"] = "maybe"
    del wrong["ticket_id"]
    done = _validate(node_consumer, "reply", [good_reply, json.dumps(wrong).encode()])
    assert done.returncode == 1
    out = done.stdout.decode()
    assert out.startswith("line 2:") and "ticket_id" in out and "status" in out


def test_a_node_consumer_applies_the_same_id_rule_as_baton(node_consumer: Path) -> None:
    accepted = [
        "ana.silva+orders@example.org",
        "gid://shopify/Customer/1029384756",
        "ANA SILVA 01",
        1029384756,
        "t'$(id)`id`",
        "-rf",
        "票-1",
        "аna",
        "x" * 200,
    ]
    refused = ["a\nb", "a\u202eb", "a\u00a0b", " padded", "padded ", "x" * 201, 12.5, ""]
    lines = [
        json.dumps({"ticket_id": v, "session_id": "s1", "text": "hi"}).encode()
        for v in accepted + refused
    ]
    # What baton itself makes of each: the same split.
    for value in accepted:
        Ticket.model_validate({"ticket_id": value, "session_id": "s1", "text": "hi"})
    for value in refused:
        with pytest.raises(ValueError):
            Ticket.model_validate({"ticket_id": value, "session_id": "s1", "text": "hi"})
    done = _validate(node_consumer, "ticket", lines)
    assert done.returncode == 1
    assert f"{len(accepted)} valid, {len(refused)} invalid".encode() in done.stderr, done.stderr
    flagged = sorted(
        int(line.split(":")[0].removeprefix("line ")) for line in done.stdout.decode().splitlines()
    )
    assert flagged == list(range(len(accepted) + 1, len(accepted) + len(refused) + 1)), flagged

"""Other Kafka clients: publish a ticket with librdkafka (confluent-kafka) and kafka-python and
read its reply and the dead letters with their ``__connect.errors.*`` headers."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

from baton_kafka.agents.testing.standin import StandIn
from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.records import DeadLetter, Reply, Ticket
from tests.fixtures.brokers import Broker
from tests.fixtures.data import ORDERS
from tests.fixtures.deployments import Deployment, open_deployment

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

Record = tuple[str, bytes, dict[str, bytes]]


@pytest.fixture(scope="module")
def run(
    broker: Broker, standin: StandIn, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    with open_deployment(broker, standin.base_url, tmp_path_factory.mktemp("interop")) as d:
        d.import_orders(ORDERS)
        d.start_worker()
        # Wait until the worker answers, so the clients' tests time only their own records.
        ready = Ticket(ticket_id=f"{d.namespace}-ready", session_id="s-ready", text="Hello")
        asyncio.run(d.publish_tickets([ready]))
        asyncio.run(d.replies(1))
        yield d


def sample(d: Deployment, client: str) -> tuple[Ticket, bytes]:
    ticket = Ticket(
        ticket_id=f"{d.namespace}-{client}",
        session_id=f"s-{client}",
        customer_id="c-ana",
        text="My kettle is leaking, I want a refund.",
    )
    return ticket, f"not json from {client}".encode()


def check(d: Deployment, ticket: Ticket, bad: bytes, records: list[Record]) -> None:
    replies = [Reply.model_validate_json(v) for t, v, _ in records if t.endswith("replies")]
    mine = [r for r in replies if r.ticket_id == ticket.ticket_id]
    assert len(mine) == 1 and mine[0].status == "answered" and mine[0].order_id == "O-1001"
    letters = [
        (DeadLetter.model_validate_json(v), h)
        for t, v, h in records
        if t.endswith("dead-letters") and DeadLetter.model_validate_json(v).payload == bad.decode()
    ]
    assert len(letters) == 1
    dl, headers = letters[0]
    assert headers["__connect.errors.topic"] == d.topic("support.tickets").encode()
    assert headers["__connect.errors.partition"] == str(dl.source_partition).encode()
    assert headers["__connect.errors.offset"] == str(dl.source_offset).encode()
    assert headers["__connect.errors.stage"] == b"intake"
    assert headers["__connect.errors.exception.class.name"] == b"invalid_input"
    assert b"not valid JSON" in headers["__connect.errors.exception.message"]
    assert headers["baton.dead_letter_id"] == dl.id.encode()


def until_found(poll: Callable[[], list[Record]], ticket: Ticket, bad: bytes) -> list[Record]:
    records: list[Record] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        records.extend(poll())
        values = [v for _, v, _ in records]
        if any(ticket.ticket_id.encode() in v for v in values) and any(
            bad.decode() in v.decode() for v in values
        ):
            return records
    raise AssertionError(f"no reply and dead letter for {ticket.ticket_id} in {len(records)}")


def test_confluent_kafka_reads_reply_and_dead_letter_headers(run: Deployment) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    ticket, bad = sample(run, "librdkafka")
    producer = Producer({"bootstrap.servers": run.broker.bootstrap, "acks": "all"})
    tickets = run.topic("support.tickets")
    producer.produce(tickets, dumps(ticket), key=ticket.session_id, headers=[("origin", b"rd")])
    producer.produce(tickets, bad)
    assert producer.flush(30) == 0

    consumer = Consumer(
        {
            "bootstrap.servers": run.broker.bootstrap,
            "group.id": f"interop-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
        }
    )
    # Assigned partitions, not a group subscription: the read starts without a rebalance.
    consumer.assign(
        [
            TopicPartition(topic, p, OFFSET_BEGINNING)
            for topic in (run.topic("support.replies"), run.topic("support.dead-letters"))
            for p in consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ]
    )

    def poll() -> list[Record]:
        out = []
        for m in consumer.consume(num_messages=100, timeout=0.5):
            if m.error() is None:
                out.append((m.topic(), m.value(), dict(m.headers() or [])))
        return out

    try:
        records = until_found(poll, ticket, bad)
    finally:
        consumer.close()
    check(run, ticket, bad, records)


# kafka-python 3 loads its protocol schemas with a deprecated importlib.resources call.
@pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning")
def test_kafka_python_reads_reply_and_dead_letter_headers(run: Deployment) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    ticket, bad = sample(run, "kafka-python")
    producer = KafkaProducer(bootstrap_servers=run.broker.bootstrap, acks="all")
    tickets = run.topic("support.tickets")
    producer.send(
        tickets, dumps(ticket), key=ticket.session_id.encode(), headers=[("origin", b"kp")]
    ).get(30)
    producer.send(tickets, bad).get(30)
    producer.close()

    consumer = KafkaConsumer(
        bootstrap_servers=run.broker.bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    consumer.assign(
        [
            TopicPartition(topic, p)
            for topic in (run.topic("support.replies"), run.topic("support.dead-letters"))
            for p in consumer.partitions_for_topic(topic) or ()
        ]
    )

    def poll() -> list[Record]:
        out = []
        for batch in consumer.poll(timeout_ms=500).values():
            out.extend((m.topic, m.value, dict(m.headers)) for m in batch)
        return out

    try:
        records = until_found(poll, ticket, bad)
    finally:
        consumer.close()
    check(run, ticket, bad, records)

"""A worker with a Schema Registry, on the wire: tickets from Confluent's JSON Schema serializer
(framed and header forms) are answered, and replies and dead letters are read with Confluent's
JSONDeserializer against the registry. The registry is the suite's small Confluent-compatible
server (tests/fixtures/registry.py), reached by the worker process over HTTP."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from baton_kafka.agents.testing.standin import StandIn
from baton_kafka.schemas.contracts import json_schema
from baton_kafka.schemas.records import DeadLetter, Reply
from tests.fixtures.brokers import Broker
from tests.fixtures.data import ORDERS
from tests.fixtures.deployments import Deployment, open_deployment
from tests.fixtures.registry import RegistryServer, registry_server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

TEXT = "My kettle is leaking, I want a refund."


@pytest.fixture(scope="module")
def registry() -> Iterator[RegistryServer]:
    with registry_server() as server:
        yield server


@pytest.fixture(scope="module")
def run(
    broker: Broker,
    standin: StandIn,
    registry: RegistryServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Deployment]:
    with open_deployment(
        broker,
        standin.base_url,
        tmp_path_factory.mktemp("registry"),
        BATON_SCHEMA_REGISTRY_URL=registry.url,
    ) as d:
        d.import_orders(ORDERS)
        d.start_worker()
        # A plain JSON ticket first: once it is answered, the worker and its topics are up.
        ready = {"ticket_id": f"{d.namespace}-ready", "session_id": "s-ready", "text": "Hello"}
        asyncio.run(d.publish([("s-ready", orjson.dumps(ready))]))
        asyncio.run(d.read("support.replies", lambda vs: len(vs) >= 1))
        yield d


def produce(d: Deployment, registry: RegistryServer) -> list[str]:
    """Two tickets through Confluent's producer and JSONSerializer (framed, header form) and a
    framed record that is no ticket; the ticket ids."""
    from confluent_kafka import Producer
    from confluent_kafka.schema_registry import SchemaRegistryClient, header_schema_id_serializer
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = SchemaRegistryClient({"url": registry.url})
    schema = orjson.dumps(json_schema("ticket")).decode()
    framed = JSONSerializer(schema, client)
    in_header = JSONSerializer(
        schema, client, conf={"schema.id.serializer": header_schema_id_serializer}
    )
    producer = Producer({"bootstrap.servers": d.broker.bootstrap, "acks": "all"})
    topic = d.topic("support.tickets")
    ids = []
    for form, serializer in (("framed", framed), ("header", in_header)):
        tid = f"{d.namespace}-{form}"
        ticket = {"ticket_id": tid, "session_id": f"s-{form}", "customer_id": "c-ana", "text": TEXT}
        ctx = SerializationContext(topic, MessageField.VALUE, headers=[])
        value = serializer(ticket, ctx)
        producer.produce(topic, value, key=ticket["session_id"], headers=ctx.headers)
        ids.append(tid)
    producer.produce(topic, b"\x00\x00\x00\x00\x01" + b'{"ticket_id": 5}')
    assert producer.flush(30) == 0
    return ids


def consume(d: Deployment, registry: RegistryServer, want: int) -> list[tuple[str, Any]]:
    """(topic, value) of the replies and dead letters as Confluent's JSONDeserializer reads
    them, the schema looked up in the registry by the id each record carries."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    deserialize = JSONDeserializer(
        None, schema_registry_client=SchemaRegistryClient({"url": registry.url})
    )
    consumer = Consumer(
        {"bootstrap.servers": d.broker.bootstrap, "group.id": f"sr-{uuid.uuid4().hex[:8]}"}
    )
    consumer.assign(
        [
            TopicPartition(topic, p, OFFSET_BEGINNING)
            for topic in (d.topic("support.replies"), d.topic("support.dead-letters"))
            for p in consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ]
    )
    out: list[tuple[str, Any]] = []
    deadline = time.monotonic() + 120
    try:
        while len(out) < want and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=100, timeout=0.5):
                if m.error() is None:
                    ctx = SerializationContext(m.topic(), MessageField.VALUE, m.headers())
                    out.append((m.topic(), deserialize(m.value(), ctx)))
    finally:
        consumer.close()
    assert len(out) >= want, (out, "\n".join(w.tail_log() for w in d.workers))
    return out


def test_serialized_tickets_are_answered_and_outputs_read_by_the_registry_s_clients(
    run: Deployment, registry: RegistryServer
) -> None:
    ids = produce(run, registry)
    records = consume(run, registry, want=4)
    replies = [
        Reply.model_validate(v)
        for t, v in records
        if t.endswith("replies") and v["session_id"] != "s-ready"
    ]
    assert sorted(r.ticket_id for r in replies) == sorted(ids)
    assert all(r.status == "answered" and r.order_id == "O-1001" for r in replies)
    (letter,) = [DeadLetter.model_validate(v) for t, v in records if t.endswith("dead-letters")]
    assert letter.reason == "invalid_input" and letter.stage == "intake"
    for output in ("support.replies", "support.handoffs", "support.dead-letters"):
        assert registry.state.compatibility[f"{run.topic(output)}-value"] == "BACKWARD"

    # baton's own readers take the framed records as their JSON.
    listed = run.baton("dlq", "list", "--json")
    assert listed.returncode == 0, listed.stderr.decode()
    assert [orjson.loads(x)["reason"] for x in listed.stdout.splitlines()] == ["invalid_input"]
    replies_topic = run.topic("support.replies")
    tail = run.baton("tail", replies_topic, "--from-beginning", "--idle-timeout", "3")
    assert tail.returncode == 0, tail.stderr.decode()
    tailed = {orjson.loads(x)["ticket_id"] for x in tail.stdout.splitlines()}
    assert tailed == {*ids, f"{run.namespace}-ready"}


@pytest.mark.one_broker
def test_a_worker_whose_output_subject_is_incompatible_stops_with_one_line(
    broker: Broker, standin: StandIn, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with (
        registry_server() as server,
        open_deployment(
            broker,
            standin.base_url,
            tmp_path_factory.mktemp("registry-refused"),
            BATON_SCHEMA_REGISTRY_URL=server.url,
        ) as d,
    ):
        narrower = {"type": "object", "properties": {"ticket_id": {"type": "string"}, "x": {}}}
        asyncio.run(_register(server, f"{d.topic('support.replies')}-value", narrower))
        done = d.baton("worker", timeout=90)
    err = done.stderr.decode()
    assert done.returncode == 1, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("baton: the schema registry at http://127.0.0.1:")
    assert f"{d.topic('support.replies')}-value" in last and "409" in last
    assert "Traceback" not in err


async def _register(server: RegistryServer, subject: str, schema: dict[str, Any]) -> None:
    from baton_kafka.streams.kafka.registry import Registry

    await asyncio.to_thread(Registry(server.url).register, subject, orjson.dumps(schema).decode())

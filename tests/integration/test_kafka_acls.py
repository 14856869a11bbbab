"""The compose cluster's ACLs (deploy/kafka/acls.txt) on a real Apache Kafka that denies what
no ACL allows: the desk cannot read tickets, a consumer of replies cannot write decisions, and
each may do what its row allows."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import TopicPartition
from aiokafka.errors import KafkaError, TopicAuthorizationFailedError

from baton_kafka.schemas import dumps
from baton_kafka.schemas.decision import Decision
from baton_kafka.streams.kafka.connect import new_consumer, new_producer
from baton_kafka.streams.kafka.topics import TopicNames, ensure_topics
from tests.fixtures.data import ticket_record
from tests.fixtures.deployments import Deployment, counts, settings_of
from tests.fixtures.secure_kafka import AUTHORIZER, SecureKafka, grant, secure_kafka
from tests.unit.test_compose import acl_lines

pytestmark = pytest.mark.integration

LOGINS = {"desk": "desk-pw-3e8a1c05d7", "consumer": "consumer-pw-91b4f2e6a0"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureKafka]:
    """A secured Kafka node enforcing ACLs, with the desk's and a consumer's logins."""
    folder = tmp_path_factory.mktemp("acl-kafka")
    with secure_kafka(folder, users=LOGINS, extra_config=AUTHORIZER) as kafka:
        yield kafka


def operation(name: str) -> str:
    """``DescribeConfigs`` as the Java AdminClient names it: ``DESCRIBE_CONFIGS``."""
    return "".join(f"_{c}" if c.isupper() and i else c for i, c in enumerate(name)).upper()


async def refused(attempt: asyncio.Future[object] | object) -> KafkaError:
    with pytest.raises(KafkaError) as failed:
        await asyncio.wait_for(attempt, 30)  # type: ignore[arg-type]
    return failed.value


async def test_the_desk_cannot_read_tickets_and_a_consumer_cannot_write_decisions(
    cluster: SecureKafka, tmp_path: Path, namespace: str
) -> None:
    d = Deployment(broker=cluster.broker, namespace=namespace, data_dir=tmp_path)
    admin = settings_of(d)
    await ensure_topics(admin)
    names = TopicNames.of(admin)
    prefix = names.tickets.removesuffix("support.tickets")
    # The desk's and the consumers' rows of deploy/kafka/acls.txt, in this test's namespace.
    for principal, resource, pattern, name, operations in acl_lines():
        if principal in LOGINS and resource == "topic":
            assert pattern == "literal", (principal, name)
            ops = [operation(o) for o in sorted(operations)]
            grant(cluster, tmp_path, f"User:{principal}", prefix + name, *ops)
    # Something to read on every topic, written by the super user.
    producer = new_producer(admin, acks="all")
    await producer.start()
    try:
        for topic in (names.tickets, names.handoffs, names.replies):
            await producer.send_and_wait(
                topic, dumps(ticket_record("t1", "s1", "c", "hi")), partition=0
            )
    finally:
        await producer.stop()

    def login(principal: str):  # type: ignore[no-untyped-def]
        return settings_of(
            d, BATON_KAFKA_USERNAME=principal, BATON_KAFKA_PASSWORD=LOGINS[principal]
        )

    async def read(principal: str | None, topic: str) -> int:
        """Records of the topic's partition 0 a reader without a group gets (``None``: the
        super user); a topic the principal may not read gives none (aiokafka logs the refusal)."""
        who = admin if principal is None else login(principal)
        consumer = new_consumer(
            who, group_id=None, auto_offset_reset="earliest", request_timeout_ms=10_000
        )
        await consumer.start()
        try:
            consumer.assign([TopicPartition(topic, 0)])
            batch = await asyncio.wait_for(consumer.getmany(timeout_ms=5000), 30)
            return sum(len(records) for records in batch.values())
        finally:
            await consumer.stop()

    async def write(principal: str, topic: str) -> None:
        producer = new_producer(login(principal), acks="all", request_timeout_ms=10_000)
        await producer.start()
        try:
            decision = Decision(decision_id="d1", session_id="s1", action="close")
            await asyncio.wait_for(producer.send_and_wait(topic, dumps(decision), key=b"s1"), 30)
        finally:
            await producer.stop()

    # The desk: writes decisions, reads hand-off packets; never a ticket, never a reply.
    await write("desk", names.decisions)
    assert await read("desk", names.handoffs) == 1
    for topic in (names.tickets, names.replies):
        # The same read as the super user gets the record; the desk gets nothing.
        assert (await read(None, topic), await read("desk", topic)) == (1, 0), topic
    # A consumer of replies: reads them; writes no decision, no ticket, reads no ticket.
    assert await read("consumer", names.replies) == 1
    for topic in (names.decisions, names.tickets):
        error = await refused(write("consumer", topic))
        assert isinstance(error, TopicAuthorizationFailedError), (topic, error)
    assert await read("consumer", names.tickets) == 0
    # Only the desk's decision reached the decisions topic; no ticket was added.
    found = await counts(admin, [names.decisions, names.tickets])
    assert found == {names.decisions: 1, names.tickets: 1}

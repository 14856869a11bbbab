"""The compose cluster's ACLs (deploy/kafka/acls.txt) on a real Apache Kafka that denies what
no ACL allows: the desk cannot read tickets, a consumer of replies cannot write decisions, and
each may do what its row allows."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import TopicPartition
from aiokafka.errors import KafkaError, TopicAuthorizationFailedError

from baton_kafka.schemas import dumps
from baton_kafka.schemas.decision import Decision
from baton_kafka.schemas.records import Reply
from baton_kafka.streams.kafka.connect import new_consumer, new_producer, topic_partitions
from baton_kafka.streams.kafka.jars import resolve_jars
from baton_kafka.streams.kafka.jvm import find_java
from baton_kafka.streams.kafka.topics import TopicNames, ensure_topics
from tests.fixtures.data import ORDERS, ticket_record
from tests.fixtures.deployments import Deployment, counts, settings_of
from tests.fixtures.paths import ROOT
from tests.fixtures.secure_kafka import (
    AUTHORIZER,
    PASSWORD,
    USER,
    SecureKafka,
    grant,
    secure_kafka,
)
from tests.unit.test_compose import acl_lines

pytestmark = pytest.mark.integration

LOGINS = {
    "desk": "desk-pw-3e8a1c05d7",
    "consumer": "consumer-pw-91b4f2e6a0",
    "worker": "worker-pw-5d20c7b9e1",
    "publisher": "publisher-pw-0a6f3d8c42",
}
ACL_FILE = ROOT / "deploy/kafka/acls.txt"
GRANT_FILE = Path(__file__).parents[1] / "fixtures/java/GrantAclFile.java"


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
        if principal in ("desk", "consumer") and resource == "topic":
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


def grant_file(secured: SecureKafka, folder: Path) -> None:
    """Every line of deploy/kafka/acls.txt, as the compose cluster's kafka-acls service grants
    them (the default namespace, the app id ``baton``)."""
    properties = folder / "admin.properties"
    properties.write_text(
        f"bootstrap.servers={secured.broker.bootstrap}\n"
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{USER}" password="{PASSWORD}";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={secured.ca_file}\n",
        encoding="utf-8",
    )
    java = find_java(None)
    libs = resolve_jars(secured.kafka.version, secured.kafka.libs)
    done = subprocess.run(
        [java.path, "-cp", f"{libs}/*", str(GRANT_FILE), str(properties), str(ACL_FILE)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.timeout(300)
async def test_a_worker_answers_with_nothing_but_the_compose_acls(
    cluster: SecureKafka, tmp_path: Path
) -> None:
    # The default namespace and app id, as in the compose stack: this node is the module's own.
    d = Deployment(
        broker=cluster.broker, namespace="", data_dir=tmp_path, env_extra={"BATON_LLM": "offline"}
    )
    grant_file(cluster, tmp_path)
    d.import_orders(ORDERS)

    def login(principal: str) -> dict[str, str]:
        return {"BATON_KAFKA_USERNAME": principal, "BATON_KAFKA_PASSWORD": LOGINS[principal]}

    worker = d.start_worker(**login("worker"))
    admin = settings_of(d)
    names = TopicNames.of(admin)
    # The worker creates its topics at start with its own Create grants.
    deadline = time.monotonic() + 120
    while not await topic_partitions(admin, [names.replies, names.tickets]):
        assert worker.proc.poll() is None, worker.tail_log()
        assert time.monotonic() < deadline, worker.tail_log()
        await asyncio.sleep(1)
    publisher = new_producer(settings_of(d, **login("publisher")), acks="all")
    await publisher.start()
    try:
        ticket = ticket_record("t1", "s-acl", "c-ana", "My kettle is leaking, I want a refund.")
        await publisher.send_and_wait(names.tickets, dumps(ticket), key=b"s-acl")
    finally:
        await publisher.stop()
    # A consumer of replies reads the answer, without a group.
    consumer = new_consumer(
        settings_of(d, **login("consumer")), group_id=None, auto_offset_reset="earliest"
    )
    await consumer.start()
    replies: list[Reply] = []
    try:
        parts = await topic_partitions(admin, [names.replies])
        consumer.assign([TopicPartition(names.replies, p) for p in parts[names.replies]])
        deadline = time.monotonic() + 120
        while not replies:
            assert worker.proc.poll() is None, worker.tail_log()
            assert time.monotonic() < deadline, worker.tail_log()
            batch = await consumer.getmany(timeout_ms=1000)
            replies += [Reply.model_validate_json(r.value) for rs in batch.values() for r in rs]
    finally:
        await consumer.stop()
        d.stop()
    [reply] = replies
    assert (reply.ticket_id, reply.status, reply.order_id) == ("t1", "answered", "O-1001")
    # The worker ran on its grants alone: it logged no authorization failure.
    assert "AuthorizationFailed" not in worker.log.read_text()

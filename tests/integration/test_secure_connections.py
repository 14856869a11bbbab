"""Baton over SASL_SSL (SCRAM-SHA-256) to a real Apache Kafka: the worker, publish and tail work;
a wrong password or an untrusted certificate is one clear line, fast, with no secret shown."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from aiokafka.errors import KafkaError, TopicAuthorizationFailedError

from baton_kafka.schemas import dumps
from baton_kafka.schemas.records import Reply
from baton_kafka.streams.kafka.connect import new_producer
from baton_kafka.streams.kafka.topics import TopicNames, changelog_topic, ensure_topics
from tests.fixtures.data import ORDERS, ticket_record
from tests.fixtures.deployments import Deployment, counts, settings_of
from tests.fixtures.secure_kafka import (
    AUTHORIZER,
    PASSWORD,
    SecureKafka,
    grant,
    make_ca,
    secure_kafka,
)

pytestmark = pytest.mark.integration

WRONG_PASSWORD = "not-the-password-93b1"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureKafka]:
    """One secured Kafka node for the module (a JVM start costs seconds)."""
    with secure_kafka(tmp_path_factory.mktemp("secure-kafka")) as kafka:
        yield kafka


def deployment_on(secured: SecureKafka, data_dir: Path, namespace: str) -> Deployment:
    """A namespace on the secured broker with the offline model: no model server needed."""
    return Deployment(
        broker=secured.broker,
        namespace=namespace,
        data_dir=data_dir,
        env_extra={"BATON_LLM": "offline"},
    )


def assert_one_line_failure(
    done: subprocess.CompletedProcess[bytes], elapsed: float, *expected: str
) -> str:
    """The command failed with exit code 1 and one line naming ``expected``, in time."""
    stderr = done.stderr.decode()
    assert done.returncode == 1, stderr
    assert elapsed < 15, f"took {elapsed:.1f}s"
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert "Traceback" not in stderr
    for text in expected:
        assert text in stderr, stderr
    for secret in (PASSWORD, WRONG_PASSWORD):
        assert secret not in stderr and secret not in done.stdout.decode()
    return stderr


def test_a_worker_answers_over_sasl_ssl_and_publish_and_tail_work(
    secured: SecureKafka, tmp_path: Path, namespace: str
) -> None:
    d = deployment_on(secured, tmp_path, namespace)
    try:
        d.import_orders(ORDERS)
        worker = d.start_worker()
        tickets = tmp_path / "tickets.jsonl"
        ticket = ticket_record("sec-1", "s-sec", "c-ana", "My kettle is leaking, I want a refund.")
        tickets.write_bytes(orjson.dumps(ticket) + b"\n")
        published = d.baton("publish", str(tickets))
        assert published.returncode == 0, published.stderr.decode()
        assert "published 1 ticket(s)" in published.stderr.decode()
        tailed = d.baton(
            "tail", d.topic("support.replies"), "--from-beginning", "--limit", "1", timeout=120
        )
        assert tailed.returncode == 0, tailed.stderr.decode() + worker.tail_log()
        reply = Reply.model_validate_json(tailed.stdout.decode().strip())
        assert reply.ticket_id == "sec-1" and reply.session_id == "s-sec"
        assert reply.status == "answered" and reply.order_id == "O-1001"
    finally:
        d.stop()
    log = worker.log.read_text(errors="replace")
    assert "sec-1" in log or "s-sec" in log, log[-2000:]
    assert PASSWORD not in log


def test_a_wrong_password_is_one_line_naming_the_login(
    secured: SecureKafka, tmp_path: Path, namespace: str
) -> None:
    d = deployment_on(secured, tmp_path, namespace)
    started = time.monotonic()
    done = d.baton("tail", "anything", "--limit", "1", BATON_KAFKA_PASSWORD=WRONG_PASSWORD)
    line = assert_one_line_failure(
        done, time.monotonic() - started, "cannot authenticate", "SCRAM-SHA-256", "'baton'"
    )
    assert "authentication failed" in line


def test_a_worker_with_a_wrong_password_stops_with_one_line(
    secured: SecureKafka, tmp_path: Path, namespace: str
) -> None:
    d = deployment_on(secured, tmp_path, namespace)
    worker = d.start_worker(BATON_KAFKA_PASSWORD=WRONG_PASSWORD)
    try:
        worker.proc.wait(15)
    finally:
        d.stop()
    log = worker.log.read_text(errors="replace")
    assert worker.proc.returncode == 1, log
    assert "cannot authenticate" in log and "Traceback" not in log
    assert WRONG_PASSWORD not in log and PASSWORD not in log


def test_a_ca_that_did_not_sign_the_broker_is_one_tls_line(
    secured: SecureKafka, tmp_path: Path, namespace: str
) -> None:
    other_ca, _ = make_ca(tmp_path / "other", "some-other-ca")
    d = deployment_on(secured, tmp_path, namespace)
    started = time.monotonic()
    ticket = orjson.dumps(ticket_record("ca-1", "s-ca", "c-ana", "Where is my kettle?"))
    done = d.baton("publish", "-", input=ticket + b"\n", BATON_KAFKA_CA_FILE=str(other_ca))
    assert_one_line_failure(
        done, time.monotonic() - started, "TLS certificate not trusted", "BATON_KAFKA_CA_FILE"
    )


SHOP, SHOP_PASSWORD = "shop", "shop-pw-7c1d0e9a44"


@pytest.fixture(scope="module")
def with_acls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureKafka]:
    """A secured Kafka node that enforces ACLs, with a publisher's login besides the test user."""
    folder = tmp_path_factory.mktemp("acl-kafka")
    with secure_kafka(folder, users={SHOP: SHOP_PASSWORD}, extra_config=AUTHORIZER) as kafka:
        yield kafka


async def test_with_the_documented_acls_a_publisher_cannot_write_an_internal_topic(
    with_acls: SecureKafka, tmp_path: Path, namespace: str
) -> None:
    d = deployment_on(with_acls, tmp_path, namespace)
    admin = settings_of(d)
    await ensure_topics(admin)
    names = TopicNames.of(admin)
    # The publishers' row of docs/production.md: write and describe the tickets topic, no more.
    grant(with_acls, tmp_path, f"User:{SHOP}", names.tickets, "WRITE", "DESCRIBE")
    shop = settings_of(d, BATON_KAFKA_USERNAME=SHOP, BATON_KAFKA_PASSWORD=SHOP_PASSWORD)
    ticket = dumps(ticket_record("t1", "s1", "c-ana", "My kettle leaks."))
    internal = [names.sessions, names.understood, names.matched, names.memory_index]
    internal.append(changelog_topic(admin))
    producer = new_producer(shop, acks="all", request_timeout_ms=10_000)
    await producer.start()
    try:
        await producer.send_and_wait(names.tickets, ticket, key=b"s1")
        for topic in internal:
            with pytest.raises(KafkaError) as refused:
                await asyncio.wait_for(producer.send_and_wait(topic, ticket, key=b"s1"), 30)
            assert isinstance(refused.value, TopicAuthorizationFailedError), (topic, refused.value)
    finally:
        await producer.stop()
    # Read as the super user: the ticket is there, and no internal topic holds a record.
    found = await counts(admin, [names.tickets, *internal])
    assert found == {names.tickets: 1, **{t: 0 for t in internal}}

"""What baton needs of any broker it runs on: the same suite on the embedded one and on Kafka."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from baton_kafka.streams.kafka.topics import (
    TopicMismatch,
    TopicNames,
    TopicRefused,
    changelog_topic,
    ensure_topics,
)
from baton_kafka.streams.settings import Settings
from tests.fixtures.brokers import Broker
from tests.fixtures.deployments import Deployment

pytestmark = pytest.mark.integration


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def test_baton_creates_its_topics_and_finds_them_on_a_second_start(broker: Broker) -> None:
    settings = Settings(broker=broker.url, namespace=unique("ns"), partitions=4)
    first = await ensure_topics(settings)
    again = await ensure_topics(settings)
    names = TopicNames.of(settings)
    assert first == again
    assert first[names.memory_index] == 1
    assert all(first[t] == 4 for t in names.all() if t != names.memory_index)


async def test_an_existing_changelog_with_another_partition_count_is_named(
    broker: Broker,
) -> None:
    settings = Settings(broker=broker.url, namespace=unique("ns"), partitions=4)
    await _create(broker, changelog_topic(settings), 2)
    with pytest.raises(TopicMismatch) as caught:
        await ensure_topics(settings)
    assert str(caught.value).startswith(
        f"topic {changelog_topic(settings)} has 2 partitions but BATON_PARTITIONS is 4"
    )


@pytest.mark.kafka_only
async def test_a_topic_the_cluster_refuses_is_named_with_its_reason(broker: Broker) -> None:
    # One broker cannot hold three replicas: Kafka answers each topic with an error code.
    settings = Settings(
        broker=broker.url, namespace=unique("ns"), partitions=2, replication_factor=3
    )
    with pytest.raises(TopicRefused) as caught:
        await ensure_topics(settings)
    message = str(caught.value)
    assert f"refused to create topic {TopicNames.of(settings).tickets}: " in message
    assert "INVALID_REPLICATION_FACTOR: Unable to replicate the partition 3 time(s)" in message


@pytest.mark.kafka_only
def test_a_worker_on_a_cluster_that_refuses_its_topics_stops_with_one_line(
    broker: Broker, tmp_path: Path
) -> None:
    d = Deployment(broker=broker, namespace=unique("ns"), data_dir=tmp_path)
    done = d.baton("worker", timeout=60, BATON_REPLICATION_FACTOR="3")
    lines = done.stderr.decode().strip().splitlines()
    assert done.returncode == 1
    assert lines[-1].startswith(f"baton: the cluster refused to create topic {d.namespace}.")
    assert "INVALID_REPLICATION_FACTOR" in lines[-1]
    assert "Traceback" not in done.stderr.decode()


async def _create(broker: Broker, topic: str, partitions: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        await admin.close()


async def test_data_topics_have_retention_and_changelogs_are_compacted(broker: Broker) -> None:
    settings = Settings(
        broker=broker.url, namespace=unique("ns"), retention_days=2, dead_letter_retention_days=9
    )
    await ensure_topics(settings)
    names = TopicNames.of(settings)
    admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
    await admin.start()
    try:
        configs = await _configs(
            admin, [names.replies, names.dead_letters, changelog_topic(settings)]
        )
    finally:
        await admin.close()
    assert configs[names.replies]["retention.ms"] == str(2 * 86_400_000)
    assert configs[names.dead_letters]["retention.ms"] == str(9 * 86_400_000)
    assert configs[names.replies]["cleanup.policy"] == "delete"
    assert configs[changelog_topic(settings)]["cleanup.policy"] == "compact"


async def _configs(admin: AIOKafkaAdminClient, topics: list[str]) -> dict[str, dict[str, str]]:
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    answers = await admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, t) for t in topics]
    )
    found: dict[str, dict[str, str]] = {}
    for answer in answers:
        for resource in answer.resources:
            name, entries = resource[3], resource[4]
            found[name] = {e[0]: e[1] for e in entries}
    return found


async def test_produce_then_consume_in_a_group_with_commits(broker: Broker) -> None:
    topic, group = unique("records"), unique("group")
    admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, 2, 1)])
    finally:
        await admin.close()
    await _produce(broker, topic, [(f"k{i % 3}", f"v{i}") for i in range(10)])

    first = await _consume(broker, topic, group, expected=10)
    assert sorted(first) == sorted(f"v{i}".encode() for i in range(10))

    # A new member of the group resumes from the committed offsets, not from the start.
    await _produce(broker, topic, [("k0", "late")])
    assert await _consume(broker, topic, group, expected=1) == [b"late"]


async def _produce(broker: Broker, topic: str, records: list[tuple[str, str]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
    await producer.start()
    try:
        for key, value in records:
            await producer.send_and_wait(topic, value.encode(), key=key.encode())
    finally:
        await producer.stop()


async def _consume(broker: Broker, topic: str, group: str, expected: int) -> list[bytes]:
    """Read ``expected`` records as a member of ``group``, commit, and check the commit."""
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=broker.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    values: list[bytes] = []
    try:
        while len(values) < expected:
            batch = await consumer.getmany(timeout_ms=10_000)
            assert batch, f"no records after {len(values)} of {expected}"
            values += [r.value for rs in batch.values() for r in rs if r.value is not None]
        await consumer.commit()
        for tp in consumer.assignment():
            assert await consumer.committed(tp) == await consumer.position(tp)
        assert set(consumer.assignment()) == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
    finally:
        await consumer.stop()
    return values

"""baton_consumer_lag on a real broker: a group's committed offsets against the high-water marks."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka import TopicPartition
from aiokafka.admin import NewTopic
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from baton_kafka.streams.kafka.connect import new_admin, new_consumer, new_producer
from baton_kafka.streams.observe.lag import LagSampler
from baton_kafka.streams.observe.metrics import PrometheusObserver
from baton_kafka.streams.settings import Settings
from tests.fixtures.brokers import Broker
from tests.fixtures.data import ticket_record
from tests.fixtures.deployments import Deployment
from tests.fixtures.observability import health_until_ready, scrape

pytestmark = pytest.mark.integration

PUBLISHED = {0: 23, 1: 11}
CONSUMED = 9


def gauge(m: PrometheusObserver) -> dict[tuple[str, str], float]:
    text = generate_latest(m.registry).decode()
    return {
        (s.labels["topic"], s.labels["partition"]): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "baton_consumer_lag"
    }


async def test_the_gauge_is_published_minus_committed(broker: Broker, namespace: str) -> None:
    settings = Settings(broker=broker.url, namespace=namespace)
    topic, group = settings.topic("lag.input"), f"{settings.app_id}-lag-test"
    tps = [TopicPartition(topic, p) for p in PUBLISHED]
    admin = new_admin(settings)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, len(PUBLISHED), 1)])
    finally:
        await admin.close()

    producer = new_producer(settings, acks="all")
    await producer.start()
    try:
        for partition, n in PUBLISHED.items():
            for i in range(n):
                await producer.send_and_wait(topic, b"x%d" % i, partition=partition)
    finally:
        await producer.stop()

    # A group reads CONSUMED records of partition 0 and commits them; partition 1 it never
    # touches, so the group has no offset there and would start from the first record.
    consumer = new_consumer(settings, group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign([tps[0]])
        await consumer.seek_to_beginning(tps[0])
        read: list[int] = []
        while len(read) < CONSUMED:
            batch = await consumer.getmany(
                tps[0], timeout_ms=1000, max_records=CONSUMED - len(read)
            )
            read += [r.offset for r in batch.get(tps[0], [])]
        assert read == list(range(CONSUMED))
        await consumer.commit({tps[0]: CONSUMED})
    finally:
        await consumer.stop()

    metrics = PrometheusObserver()
    sampler = LagSampler(settings, group, lambda: tps)
    metrics.watch_lag(sampler)
    try:
        assert await sampler.sample() == {
            tps[0]: PUBLISHED[0] - CONSUMED,
            tps[1]: PUBLISHED[1],
        }
        assert gauge(metrics) == {
            (topic, "0"): PUBLISHED[0] - CONSUMED,
            (topic, "1"): PUBLISHED[1],
        }
    finally:
        await sampler.close()


@pytest.mark.timeout(240)
async def test_a_worker_exports_the_lag_of_its_partitions_and_its_process(
    deployment: Deployment, namespace: str
) -> None:
    worker = deployment.start_worker(BATON_LAG_INTERVAL="0.5")
    await health_until_ready(worker)
    tickets = [
        ticket_record(f"{namespace}-T{i}", f"{namespace}-S{i}", "C1", "Where is my order?")
        for i in range(3)
    ]
    await deployment.publish_tickets(tickets)
    assert len(await deployment.replies(len(tickets))) == len(tickets)

    # One worker owns every partition: once its commits caught up, every input partition of
    # the chain is reported, each at 0.
    inputs = {deployment.topic(t) for t in ("support.tickets", "support.tickets-by-session")}
    inputs |= {deployment.topic(t) for t in ("support.understood", "support.order-matched")}
    deadline = time.monotonic() + 60
    while True:
        samples = await scrape(worker)
        lag = {
            (labels["topic"], labels["partition"]): v
            for labels, v in samples.get("baton_consumer_lag", [])
        }
        topics = {topic for topic, _ in lag}
        if inputs <= topics and not any(lag.values()):
            break
        assert time.monotonic() < deadline, f"{lag}\n{worker.tail_log()}"
        await asyncio.sleep(0.5)
    assert len([k for k in lag if k[0] == deployment.topic("support.tickets")]) == 4
    assert samples["process_resident_memory_bytes"][0][1] > 0
    assert samples["process_cpu_seconds_total"][0][1] > 0
    assert "consumer lag not sampled" not in worker.log.read_text()

"""Connect-format dead letters on the broker: the failed record as it was read, re-driven by a
consumer that knows only Kafka Connect's format, and read by ``baton dlq``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import orjson
import pytest
from aiokafka import AIOKafkaProducer

from baton_kafka.agents.testing.standin import StandIn
from baton_kafka.streams.kafka.client import Message
from baton_kafka.streams.kafka.reader import read_topics
from tests.fixtures.brokers import Broker
from tests.fixtures.data import ORDERS, ticket_record
from tests.fixtures.deployments import Deployment, open_deployment, settings_of

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

ERRORS = "__connect.errors."
ORIGIN = [("x-origin", b"shop"), ("x-trace-me", b"\x00\xff")]
BAD = b'{"ticket_id": "bad-1", "text": '


@pytest.fixture(scope="module")
def run(
    broker: Broker, standin: StandIn, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    """One worker writing Connect-format dead letters: a fallback and a record never valid."""
    with open_deployment(
        broker,
        standin.base_url,
        tmp_path_factory.mktemp("connect-dlq"),
        BATON_DEAD_LETTER_FORMAT="connect",
    ) as d:
        d.import_orders(ORDERS)
        d.start_worker()

        async def setup() -> None:
            text = "Kettle leaks. [[fault:schema:strategy:2]]"
            await d.publish_tickets([ticket_record("h1-" + d.namespace, "s-h", "c-ana", text)])
            await d.publish([("k-bad", BAD)], headers=ORIGIN)
            await d.replies(1)
            await d.read("support.dead-letters", lambda vs: len(vs) >= 2)

        asyncio.run(setup())
        yield d


async def _records(d: Deployment, topic: str) -> list[Message]:
    """Every record of a topic of ``d``'s namespace, read to its end."""
    read = await read_topics(settings_of(d), [d.topic(topic)])
    return read[d.topic(topic)]


async def _original(d: Deployment, topic: str, partition: int, offset: int) -> Message:
    """The record at ``offset`` of ``topic``'s ``partition`` (a full topic name)."""
    read = await read_topics(settings_of(d), [topic])
    (found,) = [m for m in read[topic] if (m.partition, m.offset) == (partition, offset)]
    return found


async def test_each_dead_letter_is_the_record_read_with_connect_s_headers(run: Deployment) -> None:
    letters = await _records(run, "support.dead-letters")
    assert len(letters) == 2
    for dl in letters:
        h = {k: v for k, v in dl.headers}
        for name in (
            "topic",
            "partition",
            "offset",
            "connector.name",
            "task.id",
            "stage",
            "class.name",
            "exception.class.name",
            "exception.message",
            "exception.stacktrace",
        ):
            assert ERRORS + name in h, name
        original = await _original(
            run,
            h[ERRORS + "topic"].decode(),
            int(h[ERRORS + "partition"]),
            int(h[ERRORS + "offset"]),
        )
        assert (dl.key, dl.value) == (original.key, original.value)
        assert list(dl.headers)[: len(original.headers)] == list(original.headers)
    by_reason = {dict(dl.headers)["baton.reason"]: dl for dl in letters}
    bad = by_reason[b"invalid_input"]
    assert (bad.key, bad.value) == (b"k-bad", BAD)
    assert list(bad.headers)[:2] == ORIGIN
    fallback = by_reason[b"validation_failed"]
    assert dict(fallback.headers)[ERRORS + "topic"] == run.topic("support.order-matched").encode()


async def test_a_plain_consumer_that_knows_only_connect_re_drives_them(run: Deployment) -> None:
    """Re-drive as Connect tooling does: value, key and the record's own headers, to the
    topic ``__connect.errors.topic`` names. The rejected record comes back rejected again,
    from its new offset; the answered ticket is not answered twice."""
    letters = await _records(run, "support.dead-letters")
    producer = AIOKafkaProducer(bootstrap_servers=run.broker.bootstrap, acks="all")
    await producer.start()
    sent = {}
    try:
        for dl in letters:
            h = dict(dl.headers)
            topic = h[ERRORS + "topic"].decode()
            kept = [(k, v) for k, v in dl.headers if not k.startswith(ERRORS)]
            meta = await producer.send_and_wait(topic, dl.value, key=dl.key, headers=kept)
            sent[topic] = meta
    finally:
        await producer.stop()

    tickets = run.topic("support.tickets")

    def again(values: list[bytes]) -> bool:
        return sum(1 for v in values if v == BAD) >= 2

    await run.read("support.dead-letters", again)
    letters = await _records(run, "support.dead-letters")
    rejected = [dl for dl in letters if dl.value == BAD]
    offsets = {dict(dl.headers)[ERRORS + "offset"] for dl in rejected}
    assert str(sent[tickets].offset).encode() in offsets
    assert all(list(dl.headers)[:2] == ORIGIN for dl in rejected)
    await asyncio.sleep(3)
    replies = await run.replies(1)
    assert [r.ticket_id for r in replies] == ["h1-" + run.namespace]


def test_baton_dlq_lists_shows_and_requeues_connect_letters(run: Deployment) -> None:
    listed = run.baton("dlq", "list", "--json")
    assert listed.returncode == 0, listed.stderr.decode()
    found = [orjson.loads(line) for line in listed.stdout.splitlines()]
    reasons = {(x["stage"], x["reason"]) for x in found}
    assert {("intake", "invalid_input"), ("strategy", "validation_failed")} <= reasons
    fallback = next(x for x in found if x["reason"] == "validation_failed")
    assert fallback["ticket_id"] == "h1-" + run.namespace
    assert fallback["source_topic"] == run.topic("support.order-matched")

    shown = run.baton("dlq", "show", fallback["id"])
    assert shown.returncode == 0, shown.stderr.decode()
    doc = orjson.loads(shown.stdout)
    assert doc["format"] == "connect" and doc["dead_letter"]["id"] == fallback["id"]

    traced = run.baton("trace", "s-h", "--json")
    assert traced.returncode == 0, traced.stderr.decode()
    assert fallback["id"] in [dl["id"] for dl in orjson.loads(traced.stdout)["dead_letters"]]

    dry = run.baton("dlq", "requeue", "--id", fallback["id"], "--dry-run")
    assert dry.returncode == 0, dry.stderr.decode()
    assert f"would requeue {fallback['id']}: ticket h1-{run.namespace}" in dry.stdout.decode()

"""Trust boundaries through a real worker: session ownership and signed stage records."""

from __future__ import annotations

import asyncio

import orjson
import pytest
from aiokafka import AIOKafkaProducer

from baton_kafka.schemas import StageRecord, Ticket, dumps
from baton_kafka.schemas.stages import OrderMatch
from baton_kafka.streams.kafka.topics import changelog_topic
from baton_kafka.streams.runtime.records.placement import session_partition
from tests.fixtures.data import ORDERS, ticket_record
from tests.fixtures.deployments import Deployment, settings_of

pytestmark = pytest.mark.integration

KEYS = "k1:a-signing-secret-of-32-chars!!"


async def test_intruders_and_forged_records_are_dead_lettered_and_never_answered(
    deployment: Deployment,
) -> None:
    deployment.import_orders(ORDERS)
    deployment.start_worker(BATON_SIGNING_KEYS=KEYS)
    await deployment.publish_tickets(
        [ticket_record("a1", "s-own", "c-ana", "My kettle is leaking, I want a refund.")]
    )
    [owner] = await deployment.replies(1)
    assert owner.order_id == "O-1001"

    await deployment.publish_tickets(
        [ticket_record("b1", "s-own", "c-li", "Which order did I ask about? Refund it.")]
    )
    kettle = next(o for o in ORDERS if o["order_id"] == "O-1001")
    forged = StageRecord(
        ticket=Ticket(ticket_id="f1", session_id="s-forge", customer_id="c-ana", text="Refund?"),
        match=OrderMatch(
            order_id="O-1001",
            order={**kettle, "amount": 9999.0},
            method="deterministic",
            confidence=1.0,
            reason="forged",
        ),
    )
    await deployment.publish([("s-forge", dumps(forged))], topic="support.order-matched")
    await deployment.publish_tickets(
        [ticket_record("a2", "s-own", "c-ana", "How long will the refund take?")]
    )

    letters = await deployment.dead_letters(2)
    reasons = {dl.ticket_id: (dl.reason, dl.stage) for dl, _ in letters}
    assert reasons == {
        "b1": ("session_conflict", "understand"),
        "f1": ("untrusted_record", "strategy"),
    }
    replies = await deployment.replies(2)
    # One session, so one partition: its replies come in order.
    assert [r.ticket_id for r in replies] == ["a1", "a2"]
    assert replies[1].order_id == "O-1001" and "9999" not in replies[1].reply


async def test_a_signed_record_re_produced_under_another_key_or_partition_writes_nothing(
    deployment: Deployment,
) -> None:
    deployment.import_orders(ORDERS)
    deployment.start_worker(BATON_SIGNING_KEYS=KEYS)
    await deployment.publish_tickets(
        [ticket_record("a1", "s-own", "c-ana", "My kettle is leaking, I want a refund.")]
    )
    [answered] = await deployment.replies(1)
    # The intake's signed record of a1, as anyone who can read the topic sees it.
    [(value, headers)] = await deployment.read("support.tickets-by-session", lambda vs: bool(vs))
    settings = settings_of(deployment)
    partitions = settings.partitions
    own = session_partition("s-own", partitions)
    victim = next(
        s for s in ("s-victim", "s-v2", "s-v3") if session_partition(s, partitions) != own
    )
    await deployment.publish([(victim, value)], "support.tickets-by-session", headers)
    await deployment.publish(
        [("s-own", value)], "support.tickets-by-session", headers, partition=(own + 1) % partitions
    )
    letters = await deployment.dead_letters(2)
    assert [(dl.reason, dl.stage, dl.ticket_id) for dl, _ in letters] == [
        ("untrusted_record", "understand", "a1")
    ] * 2
    assert {dl.source_partition for dl, _ in letters} == {
        session_partition(victim, partitions),
        (own + 1) % partitions,
    }
    # Nothing was written: no second reply, and every baton record of the session is on the
    # session's own changelog partition, none under the other key.
    await deployment.publish_tickets(
        [ticket_record("a2", "s-own", "c-ana", "How long will the refund take?")]
    )
    replies = await deployment.replies(2)
    assert [r.ticket_id for r in replies] == [answered.ticket_id, "a2"]
    reader = deployment.reader(changelog_topic(settings))
    await reader.start()
    try:
        placed: set[tuple[str, int]] = set()
        while batch := await reader.getmany(timeout_ms=3000):
            # The table's keys are JSON strings.
            placed |= {(orjson.loads(r.key), tp.partition) for tp, rs in batch.items() for r in rs}
    finally:
        await reader.stop()
    assert placed == {("s-own", own)}


async def test_forget_erases_a_customers_sessions_and_index(deployment: Deployment) -> None:
    deployment.import_orders(ORDERS)
    deployment.start_worker()
    await deployment.publish_tickets(
        [
            ticket_record("a1", "s-a1", "c-ana", "My kettle is leaking, I want a refund."),
            ticket_record("a2", "s-a2", "c-ana", "My headphones crackle."),
            ticket_record("l1", "s-l1", "c-li", "我的水壶漏水了"),
        ]
    )
    await deployment.replies(3)
    done = deployment.baton("forget", "c-ana", "--json")
    assert done.returncode == 0, done.stderr.decode()
    doc = orjson.loads(done.stdout)
    assert doc["sessions"] == ["s-a1", "s-a2"] and doc["erased_sessions"] == ["s-a1", "s-a2"]
    assert sorted(doc["index_sessions"]) == ["s-a1", "s-a2"] and doc["index_erased"] is True
    assert doc["confirmed"] is True
    assert doc["retention_days"][deployment.topic("support.dead-letters")] == 30

    again = deployment.baton("forget", "c-ana")
    assert again.returncode == 0 and b"no session or index entry held" in again.stdout
    # The other customer's data is untouched, and the first customer starts from nothing.
    other = deployment.baton("forget", "c-nobody", "--json")
    assert orjson.loads(other.stdout)["sessions"] == []
    await deployment.publish_tickets(
        [ticket_record("a3", "s-a3", "c-ana", "What happened with the order I asked about?")]
    )
    replies = {r.ticket_id: r for r in await deployment.replies(4)}
    assert replies["a3"].order_id is None


def test_forget_refuses_a_bad_customer_id(deployment: Deployment) -> None:
    done = deployment.baton("forget", "")
    assert done.returncode == 2
    assert done.stderr.decode().strip().startswith("baton forget: invalid customer id")


@pytest.mark.kafka_only
def test_a_worker_on_apache_kafka_refuses_to_start_unsigned(deployment: Deployment) -> None:
    worker = deployment.start_worker(BATON_ALLOW_UNSIGNED="0")
    assert worker.proc.wait(timeout=90) == 2
    said = worker.log.read_text()
    assert "BATON_SIGNING_KEYS is not set" in said and "BATON_ALLOW_UNSIGNED=1" in said
    assert "Traceback" not in said
    worker.stop()  # it has exited: the readers below need not watch it
    signed = deployment.start_worker(BATON_ALLOW_UNSIGNED="0", BATON_SIGNING_KEYS=KEYS)
    deployment.import_orders(ORDERS)
    asyncio.run(
        deployment.publish_tickets([ticket_record("a1", "s-1", "c-ana", "My kettle leaks.")])
    )
    assert len(asyncio.run(deployment.replies(1))) == 1 and signed.proc.poll() is None


async def test_after_forget_a_topic_read_again_or_a_requeue_brings_nothing_back(
    deployment: Deployment,
) -> None:
    deployment.import_orders(ORDERS)
    deployment.start_worker()
    faulty = "My kettle is leaking, I live at 5 Elm Road. [[fault:invalid_json:understand:9]]"
    await deployment.publish_tickets([ticket_record("a1", "s-a1", "c-ana", faulty)])
    [first] = await deployment.replies(1)
    [(letter, _)] = await deployment.dead_letters(1)
    assert first.status == "degraded" and letter.ticket and letter.ticket.customer_id == "c-ana"
    # The ticket as the tickets topic holds it, with the time it was written.
    reader = deployment.reader(deployment.topic("support.tickets"))
    await reader.start()
    try:
        [original] = [r for rs in (await reader.getmany(timeout_ms=5000)).values() for r in rs]
    finally:
        await reader.stop()

    done = deployment.baton("forget", "c-ana", "--json")
    assert done.returncode == 0 and orjson.loads(done.stdout)["confirmed"] is True

    # An offset reset reads the same record again; a requeue would re-drive its dead letter.
    producer = AIOKafkaProducer(bootstrap_servers=deployment.broker.bootstrap, acks="all")
    await producer.start()
    try:
        await producer.send_and_wait(
            deployment.topic("support.tickets"),
            original.value,
            key=original.key,
            timestamp_ms=original.timestamp,
        )
    finally:
        await producer.stop()
    requeued = deployment.baton("dlq", "requeue", "--all")
    assert requeued.returncode == 0, requeued.stderr.decode()
    assert b"its customer was erased after it" in requeued.stderr
    assert b"requeued 0, skipped 1" in requeued.stderr
    # A replay leaves the erased customer's tickets out (both copies of a1 are from before).
    replayed = deployment.baton("replay", "--dry-run", "--json")
    assert replayed.returncode == 0, replayed.stderr.decode()
    assert orjson.loads(replayed.stdout)["selected"] == 0

    # The customer's next ticket, behind the re-read one in the session's partition, is the
    # only one answered, in a session that starts from nothing.
    await deployment.publish_tickets([ticket_record("a2", "s-a1", "c-ana", "Hello again.")])
    replies = await deployment.replies(2)
    assert [r.ticket_id for r in replies] == ["a1", "a2"]
    assert "Elm" not in replies[1].reply + replies[1].internal_note
    assert len(await deployment.dead_letters(1)) == 1
    again = deployment.baton("forget", "c-ana", "--json")
    assert orjson.loads(again.stdout)["sessions"] == ["s-a1"]
    trace = deployment.baton("trace", "s-a1", "--json")
    batons = orjson.loads(trace.stdout)["batons"]
    assert batons and all("Elm" not in orjson.dumps(b).decode() for b in batons[-1:])


async def test_a_second_guest_cannot_use_the_first_guests_session(deployment: Deployment) -> None:
    deployment.import_orders(ORDERS)
    deployment.start_worker()

    def guest(tid: str, text: str, guest_id: str) -> dict[str, str]:
        return {"ticket_id": tid, "session_id": "s-visit", "text": text, "guest_id": guest_id}

    await deployment.publish_tickets(
        [guest("g1", "My kettle is leaking, I live at 5 Elm Road.", "visitor-a-7f3e9c21")]
    )
    await deployment.replies(1)
    await deployment.publish_tickets(
        [
            guest("g2", "What was my problem again? Where do I live?", "visitor-b-19c2d4e8"),
            guest("g3", "Can it be repaired instead?", "visitor-a-7f3e9c21"),
        ]
    )
    [(letter, _)] = await deployment.dead_letters(1)
    assert (letter.reason, letter.ticket_id, letter.session_id) == ("session_conflict", "g2", None)
    assert "anonymous" not in letter.error and "guest" not in letter.error
    replies = await deployment.replies(2)
    assert [r.ticket_id for r in replies] == ["g1", "g3"]
    assert all("Elm" not in r.reply for r in replies[1:])

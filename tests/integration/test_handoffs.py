"""Hand-off packets from a real worker on each broker: one per handed-off ticket, none for
answered ones, none twice when, after a kill -9, a new worker re-reads every stage's records;
read back with ``baton handoffs list|show``."""

from __future__ import annotations

import asyncio
from collections import Counter

import orjson
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.structs import OffsetAndMetadata

from baton_kafka.schemas import HandoffPacket
from tests.fixtures import delivery
from tests.fixtures.brokers import legs
from tests.fixtures.data import ORDERS, ticket_record
from tests.fixtures.deployments import Deployment

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

PARTITIONS = 4  # the deployments' BATON_PARTITIONS
STAGE_INPUTS = ("support.tickets-by-session", "support.understood", "support.order-matched")
TICKETS = [
    ("ok1", "s-ok1", "c-ana", "My kettle is leaking, I want a refund."),
    ("ok2", "s-ok2", "c-li", "我的水壶漏水了，想退款"),
    ("safe", "s-safe", "c-ana", "The kettle started smoking and nearly caught fire!"),
    ("legal", "s-legal", "c-ana", "My kettle is leaking and I will sue you, my lawyer is ready."),
    ("bad", "s-bad", "c-ana", "My kettle is leaking. [[fault:schema:strategy:2]]"),
    ("refused", "s-refused", "c-li", "我的水壶漏水了，怎么办？ [[fault:refusal:strategy]]"),
]
HANDED_OFF = {
    "safe": "safety",
    "legal": "legal",
    "bad": "validation_failed",
    "refused": "model_refused",
}


def tid(d: Deployment, short: str) -> str:
    return f"{short}-{d.namespace}"


async def packets(d: Deployment, at_least: int) -> list[tuple[bytes | None, HandoffPacket]]:
    records = await delivery.drain(d, "support.handoffs", at_least=at_least, quiet=3.0)
    return [(r.key, HandoffPacket.model_validate_json(r.value)) for r in records]


class AloneAssignor(RoundRobinPartitionAssignor):
    """Every partition to the one member there is, under the name of Faust's assignor."""

    name = "faust"


async def rewind(d: Deployment, topics: tuple[str, ...]) -> None:
    """Join the worker group alone and commit offset 0 on every partition of ``topics``.

    As a member (the embedded broker takes offsets only from one) speaking the workers'
    assignment protocol's name (a group keeps the protocol of its last members).
    """
    consumer = AIOKafkaConsumer(
        *(d.topic(t) for t in topics),
        bootstrap_servers=d.broker.bootstrap,
        group_id=f"baton-{d.namespace}",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        metadata_max_age_ms=500,
        partition_assignment_strategy=(AloneAssignor,),
    )
    await consumer.start()
    try:
        wanted = {TopicPartition(d.topic(t), p) for t in topics for p in range(PARTITIONS)}
        deadline = asyncio.get_running_loop().time() + 60
        while consumer.assignment() != wanted:
            assert asyncio.get_running_loop().time() < deadline, consumer.assignment()
            await consumer.getmany(timeout_ms=200, max_records=1)
        await consumer.commit({tp: OffsetAndMetadata(0, "") for tp in wanted})
    finally:
        await consumer.stop()


def desk_view(d: Deployment, by_ticket: dict[str, tuple[bytes | None, HandoffPacket]]) -> None:
    """The desk's view: one line per packet, oldest first; one session's packet in full."""
    listed = d.baton("handoffs", "list")
    assert listed.returncode == 0, listed.stderr.decode()
    lines = listed.stdout.decode().splitlines()
    assert len(lines) == len(HANDED_OFF)
    order = sorted(by_ticket.values(), key=lambda kp: kp[1].handed_off_at)
    # when (2 words), due (3), the clock (2), reason, urgency, session, ticket, problem
    assert [ln.split()[10] for ln in lines] == [p.ticket_id for _, p in order]
    assert [ln.split()[7] for ln in lines] == [p.reason for _, p in order]
    assert all(
        f"due {p.deadline:%Y-%m-%d %H:%M}" in ln for ln, (_, p) in zip(lines, order, strict=True)
    )
    shown = d.baton("handoffs", "show", "s-legal")
    assert shown.returncode == 0, shown.stderr.decode()
    assert orjson.loads(shown.stdout)["packet_id"] == f"handoff:{tid(d, 'legal')}"
    traced = d.baton("trace", "s-safe")
    assert traced.returncode == 0, traced.stderr.decode()
    assert "to a person: safety, high urgency, due " in traced.stdout.decode()
    missing = d.baton("handoffs", "show", "s-nobody")
    assert missing.returncode == 1 and b"no hand-off of session s-nobody" in missing.stderr


async def test_one_packet_per_hand_off_none_for_answers_none_twice_after_a_restart(
    deployment: Deployment,
) -> None:
    d = deployment
    d.import_orders(ORDERS)
    d.start_worker()
    await d.publish_tickets(
        ticket_record(tid(d, short), session, customer, text)
        for short, session, customer, text in TICKETS
    )
    replies = {r.ticket_id: r for r in await d.replies(len(TICKETS))}
    assert len(replies) == len(TICKETS)
    handed = {tid(d, s) for s in HANDED_OFF}
    assert {t for t, r in replies.items() if r.status == "handoff"} == handed
    assert all(r.status == "answered" for t, r in replies.items() if t not in handed)

    found = await packets(d, len(HANDED_OFF))
    assert Counter(p.ticket_id for _, p in found) == Counter(handed)
    by_ticket = {p.ticket_id: (key, p) for key, p in found}
    for short, reason in HANDED_OFF.items():
        key, packet = by_ticket[tid(d, short)]
        assert packet.reason == reason, packet
        assert key == packet.session_id.encode() == replies[packet.ticket_id].session_id.encode()
        assert packet.reply == replies[packet.ticket_id].reply
    safe = by_ticket[tid(d, "safe")][1]
    assert safe.order is not None and safe.order.order_id == "O-1001"  # as the store holds it
    assert safe.urgency == "high" and safe.deadline > safe.opened_at
    assert by_ticket[tid(d, "refused")][1].language == "zh"

    if d.broker.kind == legs()[0]:  # what the desk's commands print does not depend on the broker
        desk_view(d, by_ticket)

    # kill -9, then a worker that re-reads every stage's records from the start: each copy is
    # settled from the baton, and no ticket gets a second reply or packet.
    d.workers[0].kill()
    await rewind(d, STAGE_INPUTS)
    restarted = d.start_worker()
    reread = 3 * len(TICKETS)
    await delivery.wait_for(
        lambda: delivery.reused_copies(restarted) >= reread, 120, "the re-read copies settled"
    )
    later = tid(d, "later")
    await d.publish_tickets(
        [ticket_record(later, "s-ok1", "c-ana", "Now the kettle sparked and gave me a shock!")]
    )
    after = await delivery.replies(d, len(TICKETS) + 1)
    assert Counter(r.ticket_id for r in after) == Counter([*replies, later])
    found = await packets(d, len(HANDED_OFF) + 1)
    assert Counter(p.ticket_id for _, p in found) == Counter([*handed, later])
    last = next(p for _, p in found if p.ticket_id == later)
    assert last.reason == "safety" and len(last.conversation) == 1
    assert last.promised.offers and last.promised.offers[0].ticket_id == tid(d, "ok1")
    delivery.figures(
        f"hand-off packets, {d.broker.kind}",
        handed_off=len(HANDED_OFF) + 1,
        packets=len(found),
        copies_settled_after_restart=delivery.reused_copies(restarted),
    )

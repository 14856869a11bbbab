"""An offer nobody approves in time: escalated once (one reply that promises nothing, one
urgent packet), recorded in the baton so a restart never escalates it again, and a late
decision on it is a dead letter; a decided or taken-over session is not escalated."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from baton_kafka.agents import escalation
from baton_kafka.agents.fixed_texts import fixed
from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.schemas import Reply
from baton_kafka.schemas.decision import PendingOffer
from baton_kafka.schemas.handoff import HandoffPacket
from baton_kafka.schemas.records import Offer, OfferLine, utcnow
from baton_kafka.streams.runtime.people.escalations import EscalationGauges
from baton_kafka.streams.settings import Settings
from baton_kafka.streams.testing import MemorySink, TestPipeline
from tests.fixtures.data import C1_ORDERS, jacket, ticket
from tests.fixtures.paths import ROOT
from tests.fixtures.pipelines import in_memory
from tests.fixtures.stores import sqlite_store
from tests.unit.streams.runtime.people.test_decisions import decision, feed, losing

ALPINE = ROOT / "examples/shops/alpine/policy.toml"
HOUR = 3600.0


@pytest.fixture
async def shop(tmp_path: Path) -> AsyncIterator[SQLiteOrderStore]:
    async with sqlite_store(tmp_path / "shop.sqlite3", [*C1_ORDERS, jacket("C1")]) as s:
        yield s


def pipeline_on(store: SQLiteOrderStore, sink: MemorySink | None = None, **kw: Any) -> TestPipeline:
    return in_memory(store, sink=sink, **{"policy_file": ALPINE, "approval_timeout_s": HOUR, **kw})


def restarted(p: TestPipeline) -> TestPipeline:
    """A new worker on the same tables and topics (its clocks know no deadline)."""
    p.clocks.close()
    return TestPipeline(orders=p.store, settings=p.settings, sink=p.sink, state=p.state)


async def parked(p: TestPipeline) -> None:
    [reply] = await p.send(ticket("t1", "Please cancel my jacket order."))
    assert reply.offer is not None and reply.offer.state == "needs_approval"


def age(p: TestPipeline, hours: float = 5) -> None:
    """Park the session's pending offer ``hours`` earlier than it was."""
    baton = p.baton("S1")
    assert baton.pending is not None
    pending = baton.pending.model_copy(update={"at": baton.pending.at - timedelta(hours=hours)})
    p.state.batons.put(
        "S1", baton.model_copy(update={"pending": pending}).model_dump_json().encode()
    )


async def ring(p: TestPipeline) -> None:
    """Arm every owned session's deadline, as the sweep after a start does, and let those
    that are due ring."""
    await p.escalations.sweep(lambda session: True)
    await asyncio.gather(*p.clocks.alarms.values())


def replies(p: TestPipeline) -> list[Reply]:
    return [Reply.model_validate_json(v) for _, v in p.sink.sent[p.topics.replies]]


def packets(p: TestPipeline) -> list[HandoffPacket]:
    return [HandoffPacket.model_validate_json(v) for _, v in p.sink.sent[p.topics.handoffs]]


async def test_an_overdue_approval_is_escalated_once_and_a_restart_does_not_repeat_it(
    shop: SQLiteOrderStore,
) -> None:
    p = pipeline_on(shop)
    await parked(p)
    # Parking set the offer's deadline on the worker's clocks, an hour from now.
    assert list(p.clocks.alarms) == ["escalation:t1"]
    offer = p.baton("S1").pending.offer  # type: ignore[union-attr]
    age(p)
    p = restarted(p)
    await ring(p)
    parked_reply, escalated = replies(p)
    assert (escalated.ticket_id, escalated.status, escalated.llm) == ("t1", "handoff", "escalated")
    assert escalated.reply == fixed("approval_overdue", "en") and escalated.offer is None
    assert (
        escalated.decision_id is None and escalated.baton_version == parked_reply.baton_version + 1
    )
    [_, packet] = packets(p)
    assert (packet.packet_id, packet.ticket_id, packet.reason) == (
        "escalation:t1",
        "t1",
        "approval_timeout",
    )
    assert packet.reasons == ["approval_timeout", "needs_approval"] and packet.urgency == "high"
    assert packet.proposed_offer == offer and packet.reply == escalated.reply
    assert packet.deadline > packet.handed_off_at
    baton = p.baton("S1")
    assert baton.pending is None and baton.offered == {}
    [note] = baton.escalated
    assert (note.item, note.offer, note.reply, note.packet) == ("t1", offer, "", "")
    assert p.escalations.escalated == 1
    assert p.state.customers.get("C1") is not None  # the index knows the session after it

    # Swept again, and after another restart: nothing more.
    await ring(p)
    p = restarted(p)
    await ring(p)
    assert len(replies(p)) == 2 and len(packets(p)) == 2 and p.dead_letters == []
    metrics = {m.name: m.samples[0].value for m in EscalationGauges(p.escalations).collect()}
    assert metrics == {"baton_approval_deadlines": 0, "baton_approval_escalations": 0}


async def test_a_late_decision_on_an_escalated_offer_is_a_dead_letter(
    shop: SQLiteOrderStore,
) -> None:
    p = pipeline_on(shop)
    await parked(p)
    age(p)
    await ring(restarted(p))
    before = p.baton("S1")
    await feed(p, decision("d1", "approve"), 0)
    [dl] = p.dead_letters
    assert dl.reason == "decision_not_pending" and "escalated" in dl.error
    assert p.baton("S1") == before and len(replies(p)) == 2
    # A person may still answer the customer.
    await feed(p, decision("d2", "answer", text="Ana here: your jacket order is cancelled."), 1)
    assert replies(p)[-1].decision_id == "d2"


async def test_a_decided_offer_is_not_escalated(shop: SQLiteOrderStore) -> None:
    p = pipeline_on(shop)
    await parked(p)
    age(p)
    await feed(p, decision("d1", "approve"), 0)
    await ring(restarted(p))
    assert [r.decision_id for r in replies(p)] == [None, "d1"]
    assert p.baton("S1").escalated == [] and len(packets(p)) == 1


async def test_a_taken_over_session_is_escalated_only_once_handed_back(
    shop: SQLiteOrderStore,
) -> None:
    p = pipeline_on(shop)
    await parked(p)
    await feed(p, decision("d1", "takeover"), 0)
    age(p)
    p = restarted(p)
    await ring(p)
    assert len(replies(p)) == 1 and p.baton("S1").pending is not None
    await feed(p, decision("d2", "handback"), 1)
    await ring(p)
    assert [r.llm for r in replies(p)] == ["offline", "escalated"]


async def test_a_lost_escalation_is_sent_once_after_a_restart(shop: SQLiteOrderStore) -> None:
    p = pipeline_on(shop, sink=losing(b'"llm":"escalated"'))
    await parked(p)
    age(p)
    p = restarted(p)
    await ring(p)  # the reply's send fails: the baton has the escalation, nothing sent
    baton = p.baton("S1")
    assert baton.pending is None and escalation.unsent(baton)
    assert len(replies(p)) == 1 and len(packets(p)) == 1
    p = restarted(p)
    await ring(p)
    assert [r.llm for r in replies(p)] == ["offline", "escalated"]
    assert [k.reason for k in packets(p)] == ["needs_approval", "approval_timeout"]
    assert not escalation.unsent(p.baton("S1"))
    # Sent but not marked (a crash right after the sends): nothing is sent twice.
    p.state.batons.put("S1", baton.model_dump_json().encode())
    await ring(restarted(p))
    assert len(replies(p)) == 2 and len(packets(p)) == 2


async def test_no_deadline_is_set_when_the_timeout_is_off(shop: SQLiteOrderStore) -> None:
    p = pipeline_on(shop, approval_timeout_s=0.0)
    await parked(p)
    age(p, hours=1000)
    await ring(p)
    assert p.clocks.alarms == {} and len(replies(p)) == 1


def test_only_the_pending_item_past_its_due_time_is_overdue() -> None:
    from baton_kafka.agents.memory import new_baton

    now = utcnow()
    line = OfferLine(kind="refund", order_id="400918275", amount=150.0)
    offer = Offer(state="needs_approval", lines=[line], total=150.0, currency="EUR")
    pending = PendingOffer(item="t1", offer=offer, at=now - timedelta(seconds=HOUR + 1))
    baton = new_baton(ticket("t1", "x")).model_copy(update={"pending": pending})
    assert escalation.overdue(baton, "t1", HOUR, now)
    assert not escalation.overdue(baton, "t1", 2 * HOUR, now)
    assert not escalation.overdue(baton, "t2", HOUR, now)
    assert not escalation.overdue(baton.model_copy(update={"taken_over": True}), "t1", HOUR, now)
    assert not escalation.overdue(baton.model_copy(update={"pending": None}), "t1", HOUR, now)
    german = pending.model_copy(update={"language": "de"})
    told = escalation.reply_of(baton, german, "v1", "en")
    assert told.reply == fixed("approval_overdue", "de") != fixed("approval_overdue", "en")


def test_the_setting_is_declared_with_four_hours_by_default() -> None:
    assert Settings().approval_timeout_s == 4 * HOUR

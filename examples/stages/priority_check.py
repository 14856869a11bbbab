"""A shop's own test of its stage, in memory: no broker, the offline model, the whole chain.

Run it with pytest (``pytest examples/stages/priority_check.py``); baton's suite runs it too.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from baton_kafka.schemas import Order, Ticket
from baton_kafka.streams.testing import MemoryOrders, TestPipeline
from examples.stages.priority import PRIORITY

KETTLE = Order(
    order_id="K-1002",
    customer_id="C-7",
    product_name="Electric Kettle 1.7L",
    status="delivered",
    amount=59.0,
    currency="EUR",
    ordered_at=datetime.now(UTC) - timedelta(days=12),
    delivered_at=datetime.now(UTC) - timedelta(days=8),
)


TV = Order(
    order_id="T-2001",
    customer_id="C-7",
    product_name="OLED TV 55",
    status="delivered",
    amount=1299.0,
    currency="EUR",
    ordered_at=datetime.now(UTC) - timedelta(days=60),
    delivered_at=datetime.now(UTC) - timedelta(days=55),
)
REFUND = "My kettle K-1002 leaks. I want a refund."


async def test_a_vips_refund_goes_to_a_person_because_the_stage_says_so() -> None:
    ticket = Ticket(ticket_id="t1", session_id="s1", customer_id="C-7", text=REFUND)
    # The same refund, from a customer with one kettle and from one who also bought a TV.
    [usual] = await TestPipeline(orders=MemoryOrders(KETTLE), stages=[PRIORITY]).send(ticket)
    vip = TestPipeline(orders=MemoryOrders(KETTLE, TV), stages=[PRIORITY])
    [reply] = await vip.send(ticket)
    assert usual.status == "answered" and "needs_human" not in usual.stages["priority"]
    assert reply.stages["priority"]["needs_human"] is True
    assert reply.status == "handoff" and reply.order_id == "K-1002"
    [packet] = vip.handoffs
    assert "Stage priority asked for a person" in packet.internal_note
    await vip.aclose()


async def test_an_angry_refund_is_urgent_and_its_tag_reaches_the_reply() -> None:
    pipeline = TestPipeline(orders=MemoryOrders(KETTLE), stages=[PRIORITY])
    [reply] = await pipeline.send(
        Ticket(
            ticket_id="t1",
            session_id="s1",
            customer_id="C-7",
            text="My kettle K-1002 leaks. This is unacceptable!! I want a refund.",
        )
    )
    assert reply.stages["priority"]["level"] == "urgent"
    assert reply.stages["priority"]["sentiment"] == "angry"
    assert reply.order_id == "K-1002" and reply.status in ("answered", "handoff")
    assert pipeline.dead_letters == []
    await pipeline.aclose()


async def test_a_question_is_low_and_the_session_remembers_it() -> None:
    pipeline = TestPipeline(orders=MemoryOrders(KETTLE), stages=[PRIORITY])
    first, second = await pipeline.send(
        Ticket(ticket_id="t1", session_id="s1", customer_id="C-7", text="Where is my kettle?"),
        Ticket(ticket_id="t2", session_id="s1", customer_id="C-7", text="When will it arrive?"),
    )
    assert first.stages["priority"]["level"] == "low"
    assert second.stages["priority"]["level"] == "low"
    baton = pipeline.baton("s1")
    assert baton is not None and len(baton.core_problems) == 2
    await pipeline.aclose()


async def test_an_invalid_ticket_is_a_dead_letter_not_a_reply() -> None:
    pipeline = TestPipeline(orders=MemoryOrders(KETTLE), stages=[PRIORITY])
    assert await pipeline.send({"ticket_id": "t1", "text": "no session"}) == []
    [letter] = pipeline.dead_letters
    assert letter.reason == "invalid_input" and letter.stage == "intake"
    await pipeline.aclose()

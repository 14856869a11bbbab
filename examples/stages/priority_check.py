"""A shop's own test of its stage, in memory: no broker, the offline model, the whole chain.

Run it with pytest (``pytest examples/stages/priority_check.py``); baton's suite runs it too.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from baton_kafka.schemas import Order, Ticket
from baton_kafka.streams.driver import TestPipeline
from examples.stages.priority import PRIORITY


class Orders:
    """The shop's orders for the test: any object with these three methods is an order source."""

    def __init__(self, *orders: Order) -> None:
        self.orders = {o.order_id: o for o in orders}

    async def for_customer(self, customer_id: str, limit: int = 50) -> list[Order]:
        return [o for o in self.orders.values() if o.customer_id == customer_id][:limit]

    async def get(self, order_id: str) -> Order | None:
        return self.orders.get(order_id)

    async def close(self) -> None:
        return None


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


async def test_an_angry_refund_is_urgent_and_its_tag_reaches_the_reply() -> None:
    pipeline = TestPipeline(orders=Orders(KETTLE), stages=[PRIORITY])
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
    pipeline = TestPipeline(orders=Orders(KETTLE), stages=[PRIORITY])
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
    pipeline = TestPipeline(orders=Orders(KETTLE), stages=[PRIORITY])
    assert await pipeline.send({"ticket_id": "t1", "text": "no session"}) == []
    [letter] = pipeline.dead_letters
    assert letter.reason == "invalid_input" and letter.stage == "intake"
    await pipeline.aclose()

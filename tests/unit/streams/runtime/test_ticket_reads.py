"""A ticket's stages read its customer's orders once and share the reading of its order history:
one state of the order source per ticket, read afresh by the next ticket, and every reply,
dead letter and hand-off exactly what reading everything in each stage gave."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from baton_kafka.agents import history
from baton_kafka.agents.orders import OrderSource
from baton_kafka.agents.orders.snapshot import TicketOrders
from baton_kafka.agents.stage import Inputs
from baton_kafka.schemas.baton import MemoryIndex, OrderMemory
from baton_kafka.schemas.records import Order, Reply, Ticket
from baton_kafka.schemas.stages import StageRecord
from baton_kafka.streams.runtime.answers.handoffs import Desk
from baton_kafka.streams.testing import MemoryOrders, TestPipeline
from tests.fixtures.data import C1_ORDERS, ticket
from tests.fixtures.pipelines import in_memory

DATA = Path(__file__).parents[3] / "data"


class Counted:
    """An order source that counts the reads of each customer's orders."""

    def __init__(self, inner: OrderSource) -> None:
        self.inner = inner
        self.reads: Counter[str] = Counter()

    async def for_customer(self, customer_id: str, limit: int = 50) -> list[Order]:
        self.reads[customer_id] += 1
        return await self.inner.for_customer(customer_id, limit)

    async def get(self, order_id: str) -> Order | None:
        return await self.inner.get(order_id)

    async def close(self) -> None:
        await self.inner.close()


class Moving(MemoryOrders):
    """A source whose order O-1 changes status at every read of the customer's orders."""

    def __init__(self, *orders: Order) -> None:
        super().__init__(*orders)
        self.statuses = itertools.cycle(["delivered", "shipped"])

    async def for_customer(self, customer_id: str, limit: int = 50) -> list[Order]:
        moved = self.orders["O-1"].model_copy(update={"status": next(self.statuses)})
        self.add(moved)
        return await super().for_customer(customer_id, limit)


async def test_a_ticket_reads_its_customers_orders_once() -> None:
    source = Counted(MemoryOrders(*C1_ORDERS))
    p = in_memory(source)
    (reply,) = await p.send(ticket("t1", "My kettle is leaking, I want a refund."))
    assert reply.order_id == "O-1" and reply.status == "answered"
    assert source.reads == {"C1": 1}
    await p.send(ticket("t2", "Can I send it back for repair instead?"))
    assert source.reads == {"C1": 2}  # the next ticket reads again
    assert len(p.pipeline.memos) == 0  # each was forgotten once answered


async def test_a_change_to_the_store_between_tickets_is_seen() -> None:
    orders = MemoryOrders(*C1_ORDERS)
    p = in_memory(orders)
    await p.send(ticket("t1", "My kettle is leaking, I want a refund."))
    assert (baton := p.baton("S1")) is not None
    assert baton.tickets[0].order_status == "delivered"
    orders.add(orders.orders["O-1"].model_copy(update={"status": "shipped"}))
    await p.send(ticket("t2", "Where is my kettle?"))
    assert (baton := p.baton("S1")) is not None
    assert [t.order_status for t in baton.tickets] == ["delivered", "shipped"]


async def test_one_ticket_sees_one_state_of_the_store() -> None:
    # Read in each stage, the look-up's copy of O-1 and the strategy's re-read differed: the
    # record's order was distrusted. Read once per ticket, the trust check reads the same
    # answer of the store (the worker's own memory, never the record's copy).
    p = in_memory(Moving(*C1_ORDERS))
    (reply,) = await p.send(ticket("t1", "My kettle is leaking, I want a refund."))
    assert reply.status == "answered" and reply.order_id == "O-1"
    assert p.dead_letters == []


async def test_a_copy_of_an_answered_ticket_reads_again() -> None:
    source = Counted(MemoryOrders(*C1_ORDERS))
    p = in_memory(source)
    first = ticket("t1", "My kettle is leaking, I want a refund.")
    await p.send(first)
    await p.send(first)
    assert source.reads["C1"] >= 1 and len(p.pipeline.memos) == 0


async def test_the_order_history_is_read_once_while_what_it_reads_is_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = [0]
    plain = history.recallable

    def counted(*args: Any) -> list[OrderMemory]:
        calls[0] += 1
        return plain(*args)

    from baton_kafka.agents import stage as stage_module

    monkeypatch.setattr(stage_module, "recallable", counted)
    p = in_memory(MemoryOrders(*C1_ORDERS))
    (reply,) = await p.send(ticket("t1", "My kettle is leaking, I want a refund."))
    assert reply.order_id == "O-1"
    # The understanding and the look-up read the same baton memories: one reading; the
    # look-up's update puts the order on the ticket's memory: the strategy reads again.
    assert calls[0] == 2


# --- every record as the plain reading gives it -------------------------------------------


def _jsonl(name: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (DATA / name).read_bytes().splitlines() if line]


def _generated(orders: list[Order], seed: int = 7) -> list[Ticket]:
    """Sessions of each customer asking about their orders by id, product and nothing, with
    customers that have none, guests and a copy of a ticket sent again."""
    rng = random.Random(seed)
    by_customer: dict[str, list[Order]] = {}
    for o in orders:
        by_customer.setdefault(o.customer_id, []).append(o)
    texts = [
        "My {product} is broken, I want a refund.",
        "Where is order {order}? It has not arrived.",
        "Actually, can I send the {product} back for repair instead?",
        "The order I asked about before, any news?",
        "I want to cancel {order}.",
        "Thanks, how long will that take?",
        "My other order is damaged too.",
        "My {product} broke again, my lawyer will hear about {order}.",
        "I want to speak to a person about the {product}, now.",
    ]
    made: list[Ticket] = []
    for n, (customer, own) in enumerate(sorted(by_customer.items())[:25]):
        for turn in range(rng.randint(2, 5)):
            o = rng.choice(own)
            text = rng.choice(texts).format(product=o.product_name, order=o.order_id)
            made.append(ticket(f"G{n}-{turn}", text, f"GS{n}", customer))
            if rng.random() < 0.15:
                made.append(made[-1])  # a copy sent again
    made.append(ticket("G-none", "My kettle is leaking.", "GS-none", "NOBODY"))
    made.append(ticket("G-guest", "My kettle is leaking.", "GS-guest", None))
    return made


def _checked(monkeypatch: pytest.MonkeyPatch, p: TestPipeline, source: OrderSource) -> list[str]:
    """Hold every shared reading to the plain one as the ticket's stages ask; the checks made."""
    checks: list[str] = []
    batons = p.pipeline.batons

    def plain_history(baton: Any, customer: str | None) -> list[OrderMemory]:
        index: MemoryIndex | None = batons.index(customer) if customer else None
        return history.recallable(baton, index)

    shared_history = Inputs.history

    def history_checked(self: Inputs) -> list[OrderMemory]:
        got = shared_history(self)
        assert got == plain_history(self.baton, self.ticket.customer_id)
        checks.append("history")
        return got

    shared_orders = TicketOrders.for_customer

    async def orders_checked(self: TicketOrders, customer_id: str, limit: int = 50) -> list[Order]:
        got = await shared_orders(self, customer_id, limit)
        assert got == await source.for_customer(customer_id, limit)
        checks.append("orders")
        return got

    for_answer = Desk.for_answer

    def packet_checked(self: Desk, record: StageRecord, baton: Any, *args: Any) -> Any:
        (shared,) = args[3:]
        assert shared == plain_history(baton, record.ticket.customer_id)
        given = for_answer(self, record, baton, *args)
        plain = for_answer(self, record, baton, *args[:3])
        if given is not None and plain is not None:  # made a moment apart
            plain = plain.model_copy(update={"handed_off_at": given.handed_off_at})
        assert given == plain
        checks.append("packet" if given is not None else "no packet")
        return given

    monkeypatch.setattr(Inputs, "history", history_checked)
    monkeypatch.setattr(TicketOrders, "for_customer", orders_checked)
    monkeypatch.setattr(Desk, "for_answer", packet_checked)
    return checks


@pytest.mark.parametrize(
    ("tickets", "orders"),
    [
        ("eval_tickets.jsonl", "eval_orders.jsonl"),
        ("eval_holdout_tickets.jsonl", "eval_holdout_orders.jsonl"),
        (None, "eval_orders.jsonl"),
    ],
)
async def test_shared_reads_equal_the_plain_reads(
    monkeypatch: pytest.MonkeyPatch, tickets: str | None, orders: str
) -> None:
    stored = [Order.model_validate(o) for o in _jsonl(orders)]
    source = MemoryOrders(*stored)
    p = in_memory(source)
    checks = _checked(monkeypatch, p, source)
    sent = [Ticket.model_validate(t) for t in _jsonl(tickets)] if tickets else _generated(stored)
    replies: list[Reply] = await p.send(*sent)
    assert replies
    assert {"history", "orders", "no packet"} <= set(checks)
    if tickets is None:
        assert "packet" in checks and any(r.status == "handoff" for r in replies)

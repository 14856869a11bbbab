"""A ticket's memo lives from its first stage to its reply, bounded in number and age."""

from __future__ import annotations

import contextlib

from baton_kafka.agents.orders import StoreUnavailable
from baton_kafka.agents.orders.snapshot import TicketOrders
from baton_kafka.agents.ticket_memo import TicketMemos, sharing, shelf
from baton_kafka.schemas.records import Order
from baton_kafka.streams.testing import MemoryOrders
from tests.fixtures.data import C1_ORDERS, order, ticket


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_ticket_keeps_its_memo_until_dropped() -> None:
    memos = TicketMemos()
    t1 = ticket("t1", "hi")
    first = memos.of(t1)
    assert memos.of(t1) is first
    assert memos.of(ticket("t2", "hi")) is not first
    memos.drop("t1")
    assert memos.of(t1) is not first


def test_another_customer_under_the_same_ticket_id_gets_its_own() -> None:
    memos = TicketMemos()
    mine = memos.of(ticket("t1", "hi", customer="C1"))
    theirs = memos.of(ticket("t1", "hi", customer="C2"))
    assert theirs is not mine and theirs.customer_id == "C2" and len(memos) == 1


def test_memos_are_bounded_in_number_and_age() -> None:
    clock = _Clock()
    memos = TicketMemos(keep=2, ttl_s=10.0, timer=clock)
    a = memos.of(ticket("a", "hi"))
    memos.of(ticket("b", "hi"))
    memos.of(ticket("c", "hi"))
    assert len(memos) == 2 and memos.of(ticket("a", "hi")) is not a
    clock.now = 10.0
    memos.of(ticket("d", "hi"))
    assert len(memos) == 1


class _Failing(MemoryOrders):
    def __init__(self, *orders: Order) -> None:
        super().__init__(*orders)
        self.reads = 0
        self.down = True

    async def for_customer(self, customer_id: str, limit: int = 50) -> list[Order]:
        self.reads += 1
        if self.down:
            raise StoreUnavailable("down")
        return await super().for_customer(customer_id, limit)


async def test_the_snapshot_is_the_tickets_customers_and_never_a_failure() -> None:
    source = _Failing(*C1_ORDERS, order("X-1", customer="C2"))
    view = TicketOrders(source, TicketMemos().of(ticket("t1", "hi")))
    for _ in range(2):
        with contextlib.suppress(StoreUnavailable):
            await view.for_customer("C1")
    assert source.reads == 2  # a failed read is not kept
    source.down = False
    first = await view.for_customer("C1")
    first.clear()  # the caller's own list
    again = await view.for_customer("C1")
    assert [o.order_id for o in again] == ["O-1", "O-2"] and source.reads == 3
    assert await view.for_customer("C1", 1) == again[:1] and source.reads == 4  # another limit
    assert [o.order_id for o in await view.for_customer("C2")] == ["X-1"]
    assert await view.for_customer("C2") and source.reads == 6  # not the ticket's customer
    assert await view.get("O-1") == again[0]


def test_a_shelf_is_the_tickets_own_and_its_owners() -> None:
    pack, other = object(), object()
    outside = shelf("s", pack)
    outside["x"] = 1
    assert shelf("s", pack) == {}  # outside a ticket: made anew each time
    memos = TicketMemos()
    with sharing(memos.of(ticket("t1", "hi"))):
        kept = shelf("s", pack)
        kept["x"] = 1
        assert shelf("s", pack) is kept
        assert shelf("s", other) == {} and shelf("t", pack) == {}
        assert shelf("s", pack, other) == {}
    with sharing(memos.of(ticket("t2", "hi"))):
        assert shelf("s", pack) == {}  # the next ticket reads again

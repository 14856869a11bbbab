"""Memory across a customer's history: every order discussed, found again by what was asked."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from baton_kafka.agents import history
from baton_kafka.schemas import MemoryIndex, dumps
from baton_kafka.schemas.baton import IndexUpdate, OrderMemory
from baton_kafka.schemas.records import Order, Reply, utcnow
from baton_kafka.streams.testing import TestPipeline
from tests.fixtures.data import days_ago, order, ticket
from tests.fixtures.pipelines import in_memory
from tests.fixtures.stores import sqlite_store

BLENDER = order("B-1", "C7", product_name="Philips HR3655 Blender", ordered_at=days_ago(20))
PHONE = order("P-1", "C7", product_name="Pixel 8 Phone", ordered_at=days_ago(40), amount=499.0)
SPEAKER = order(
    "T-1",
    "C7",
    product_name="Bose SoundLink Flex Speaker",
    status="shipped",
    ordered_at=days_ago(5),
    carrier="UPS",
    tracking_no="1Z777",
)
LAMP = order("L-1", "C7", product_name="IKEA Desk Lamp", status="paid", ordered_at=days_ago(2))
KETTLE = order("K-2", "C8", product_name="Midea Electric Kettle", ordered_at=days_ago(30))
HEADSET = order("H-2", "C8", product_name="Sony WH-1000XM5 Headphones", ordered_at=days_ago(31))
SHOE_9 = order("S-9", "C9", product_name="Nike Pegasus 41 US 9", ordered_at=days_ago(50))
SHOE_10 = order("S-10", "C9", product_name="Nike Pegasus 41 US 10", ordered_at=days_ago(8))
TRACKER = order(
    "F-6",
    "C10",
    product_name="Fitbit Charge 6 Fitness Tracker",
    status="refunded",
    ordered_at=days_ago(30),
)
WATCH = order("V-3", "C10", product_name="Garmin Venu 3 Smartwatch", ordered_at=days_ago(31))

STORY = [  # One session, three topics: a refund, a repair, a parcel not arrived.
    ("a1", "My blender is leaking, I want a refund."),
    ("a2", "Also my phone screen is cracked, can I send it in for repair?"),
    ("a3", "And where is my speaker? The parcel still has not arrived."),
]


@pytest.fixture
async def pipeline(tmp_path: Path) -> AsyncIterator[TestPipeline]:
    orders: list[Order] = [BLENDER, PHONE, SPEAKER, LAMP, KETTLE, HEADSET, SHOE_9, SHOE_10]
    orders += [TRACKER, WATCH]
    async with sqlite_store(tmp_path / "orders.sqlite3", orders) as s:
        yield in_memory(s)


async def _story(p: TestPipeline) -> list[Reply]:
    return await p.send(*(ticket(tid, text, "A", "C7") for tid, text in STORY))


def _index(p: TestPipeline, customer: str) -> MemoryIndex:
    return MemoryIndex.model_validate_json(p.state.customers.get(customer) or b"")


async def _ask(p: TestPipeline, tid: str, text: str, session: str, customer: str = "C7") -> Reply:
    replies = await p.send(ticket(tid, text, session, customer))
    return next(r for r in replies if r.ticket_id == tid)


async def _asked_after_two(p: TestPipeline, customer: str, first: str, second: str) -> Reply:
    """A refund asked for two of ``customer``'s orders in one session, then, in a new session
    ("<customer>-later"), news of "the refund I asked for": the reply to that."""
    await p.send(
        ticket(f"{customer}-1", f"My {first}, I want a refund.", customer, customer),
        ticket(f"{customer}-2", f"My {second} too, I want a refund.", customer, customer),
    )
    later = f"{customer}-later"
    return await _ask(p, f"{later}-1", "Any news on the refund I asked for?", later, customer)


async def test_the_index_keeps_every_order_a_session_discussed(pipeline: TestPipeline) -> None:
    replies = await _story(pipeline)
    assert [r.order_id for r in replies] == ["B-1", "P-1", "T-1"]
    entries = {e.order_id: e for e in _index(pipeline, "C7").orders}
    assert set(entries) == {"B-1", "P-1", "T-1"}
    assert entries["B-1"].demands == ["refund"] and entries["B-1"].decision == "refund"
    assert entries["P-1"].demands == ["repair"] and entries["P-1"].told_status == "delivered"
    assert entries["T-1"].told_status == "shipped" and entries["T-1"].session_id == "A"
    # The session summary still names only the latest topic: the history is what remembers.
    assert _index(pipeline, "C7").sessions[0].order_id == "T-1"


@pytest.mark.parametrize(
    ("text", "expected", "method"),
    [
        ("The one I sent for repair, is it fixed yet?", "P-1", "demand"),
        ("送修的那个修好了吗？", "P-1", "demand"),
        ("What happened to the refund I asked for?", "B-1", "demand"),
        ("之前申请退款的那单怎么样了？", "B-1", "demand"),
        ("Is the one that hasn't shipped yet going out soon?", "L-1", "status"),
        ("还没发货的那个什么时候发？", "L-1", "status"),
        ("The parcel that's still on its way - any news?", "T-1", "status"),
    ],
)
async def test_a_later_session_finds_the_order_by_what_was_done_or_its_status(
    pipeline: TestPipeline, text: str, expected: str, method: str
) -> None:
    await _story(pipeline)
    reply = await _ask(pipeline, "b1", text, "B")
    assert reply.order_id == expected, reply.reply
    assert expected in reply.reply
    decision = next(e for e in pipeline.baton("B").chain if e.stage == "lookup")
    assert decision.decision == f"history: {expected}"
    assert f"recalled by {method}" in decision.reason


async def test_the_reference_is_answered_with_that_orders_problem(pipeline: TestPipeline) -> None:
    await _story(pipeline)
    reply = await _ask(pipeline, "b1", "The one I sent for repair, is it fixed yet?", "B")
    assert "Pixel 8 Phone" in reply.reply and "speaker" not in reply.reply.casefold()
    assert "damaged" in reply.reply.casefold()  # the problem raised then, as the rules name it
    follow = await _ask(pipeline, "b2", "And how long will it take?", "B")
    assert follow.order_id == "P-1"


async def test_a_return_within_the_session_finds_the_earlier_topic(pipeline: TestPipeline) -> None:
    await _story(pipeline)
    reply = await _ask(pipeline, "a4", "Back to the one I sent for repair: do I pay postage?", "A")
    assert reply.order_id == "P-1"


async def test_two_orders_fitting_equally_are_asked_about_not_guessed(
    pipeline: TestPipeline,
) -> None:
    reply = await _asked_after_two(
        pipeline, "C8", "kettle is leaking", "headphones stopped working"
    )
    assert reply.order_id is None
    assert "K-2" in reply.reply and "H-2" in reply.reply and "which one" in reply.reply.casefold()
    assert "39" not in reply.reply  # no amount promised for either
    lookup = next(e for e in pipeline.baton("C8-later").chain if e.stage == "lookup")
    assert lookup.decision == "none: no order" and "customer is asked" in lookup.reason


async def test_the_orders_asked_about_are_named_with_the_digits_of_their_names(
    pipeline: TestPipeline,
) -> None:
    # "Charge 6" in a reply about refunds is the product's name, not an amount of 6.
    reply = await _asked_after_two(pipeline, "C10", "Fitbit stopped charging", "Garmin is broken")
    assert reply.status == "answered" and reply.order_id is None, reply
    assert "Fitbit Charge 6" in reply.reply and "Garmin Venu 3" in reply.reply
    assert "F-6" in reply.reply and "V-3" in reply.reply


async def test_similar_orders_are_told_apart_by_time(pipeline: TestPipeline) -> None:
    await pipeline.send(
        ticket("e1", "My Pegasus running shoes US 9 are too small, I want an exchange.", "E", "C9"),
        ticket("e2", "And the Pegasus US 10 pair squeaks, can I return them?", "E", "C9"),
    )
    reply = await _ask(pipeline, "f1", "The pair I bought last week, was it refunded?", "F", "C9")
    assert reply.order_id == "S-10", reply.reply


async def test_no_clue_no_recall(pipeline: TestPipeline) -> None:
    await _story(pipeline)
    reply = await _ask(pipeline, "a4", "How long will the speaker take?", "A")
    assert reply.order_id == "T-1"
    lookup = [e for e in pipeline.baton("A").chain if e.stage == "lookup"][-1]
    assert "recalled" not in lookup.reason


async def test_history_is_written_only_under_the_sessions_own_customer(
    pipeline: TestPipeline,
) -> None:
    await _story(pipeline)
    # A guest's session (no customer) and another customer's session leave C7's history alone.
    await pipeline.send(ticket("g1", "The one I sent for repair, is it fixed?", "G", None))
    await pipeline.send(ticket("h1", "My kettle is leaking, I want a refund.", "H", "C8"))
    assert {e.order_id for e in _index(pipeline, "C7").orders} == {"B-1", "P-1", "T-1"}
    assert {e.order_id for e in _index(pipeline, "C8").orders} == {"K-2"}
    # C8 pointing at "the one I sent for repair" cannot reach C7's phone.
    reply = await _ask(pipeline, "h2", "And the one I sent for repair?", "H", "C8")
    assert reply.order_id != "P-1" and "P-1" not in reply.reply


async def test_replaying_the_index_topic_rebuilds_the_same_history(pipeline: TestPipeline) -> None:
    updates: list[bytes] = []
    original = pipeline.apply_index

    async def keep(value: bytes | None, headers: object = None) -> None:
        updates.append(value or b"")
        await original(value)

    pipeline.apply_index = keep  # type: ignore[method-assign]
    await _story(pipeline)
    before = _index(pipeline, "C7")
    pipeline.state.customers.delete("C7")
    for value in [*updates, *updates]:  # a restart replays the topic; twice must not matter
        await original(value)
    assert _index(pipeline, "C7") == before


def test_history_is_bounded_and_expires() -> None:
    now = utcnow()
    entries = [
        OrderMemory(order_id=f"O-{i}", session_id=f"S{i}", at=now - timedelta(days=i))
        for i in range(40)
    ]
    kept = history.merge_orders([], entries, keep=20, since=now - timedelta(days=30))
    assert [e.order_id for e in kept] == [f"O-{i}" for i in range(20)]
    kept = history.merge_orders([], entries, keep=50, since=now - timedelta(days=10))
    assert len(kept) == 11


def test_one_order_in_two_sessions_keeps_both_requests_and_the_newest_facts() -> None:
    now = utcnow()
    old = OrderMemory(
        order_id="O-1", session_id="A", demands=["refund"], told_status="delivered", at=now
    )
    new = OrderMemory(
        order_id="O-1",
        session_id="B",
        demands=["repair"],
        told_status="returned",
        at=now + timedelta(hours=1),
    )
    for merged in (history.merge_orders([old], [new]), history.merge_orders([new], [old])):
        assert len(merged) == 1
        assert merged[0].demands == ["refund", "repair"]
        assert (merged[0].session_id, merged[0].told_status) == ("B", "returned")


def test_an_index_update_carries_the_sessions_orders() -> None:
    update = IndexUpdate.model_validate_json(
        dumps(
            IndexUpdate(
                customer_id="C7",
                summary={"session_id": "A"},  # type: ignore[arg-type]
                orders=[OrderMemory(order_id="O-1", session_id="A")],
            )
        )
    )
    assert [o.order_id for o in update.orders] == ["O-1"]

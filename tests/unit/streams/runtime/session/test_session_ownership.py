"""A session belongs to the customer of its first ticket: no other ticket reads or writes it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from baton_kafka.schemas import MemoryIndex, StageRecord, Ticket, dumps
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.session import erasure
from baton_kafka.streams.testing import TestPipeline
from tests.fixtures.data import C1_ORDERS, order, ticket
from tests.fixtures.pipelines import in_memory
from tests.fixtures.stores import sqlite_store

HEADPHONES = "Sony WH-1000XM6 Headphones"


@pytest.fixture
async def shared(tmp_path: Path) -> AsyncIterator[TestPipeline]:
    """A pipeline whose store holds C1's kettle and controller and C2's headphones."""
    orders = [*C1_ORDERS, order("O-9", customer="C2", product_name=HEADPHONES, amount=349.0)]
    async with sqlite_store(tmp_path / "orders.sqlite3", orders) as store:
        yield in_memory(store)


def everything_sent(p: TestPipeline) -> str:
    return "\n".join(v.decode() for topic in p.sink.sent.values() for _, v in topic)


def index_of(p: TestPipeline, customer: str) -> MemoryIndex | None:
    raw = p.state.customers.get(customer)
    return MemoryIndex.model_validate_json(raw) if raw else None


async def test_another_customers_ticket_is_dead_lettered_and_learns_nothing(
    shared: TestPipeline,
) -> None:
    await shared.send(ticket("a1", "My kettle is leaking, I want a refund.", customer="C1"))
    before = shared.baton("S1")
    shared.sink.sent.clear()

    intruder = ticket("b1", "What did I ask about? Which order is it?", customer="C2")
    await shared.send(intruder)

    assert shared.sink.sent[shared.topics.replies] == []
    [dl] = shared.dead_letters
    assert dl.reason == "session_conflict" and dl.stage == "understand"
    assert dl.ticket == intruder and Ticket.model_validate_json(dl.payload) == intruder
    assert "may not use session S1" in dl.error and "session id of its own" in dl.error
    assert "customer" not in dl.error and "anonymous" not in dl.error
    # Nothing published while handling the intruder names the session owner's order or product.
    sent = everything_sent(shared)
    assert "O-1" not in sent and "Kettle" not in sent and "leak" not in dl.model_dump_json()
    assert shared.baton("S1") == before
    assert index_of(shared, "C2") is None


async def test_a_ticket_without_a_customer_cannot_use_a_customers_session(
    shared: TestPipeline,
) -> None:
    await shared.send(ticket("a1", "My kettle is leaking.", customer="C1"))
    before = shared.baton("S1")
    await shared.send(ticket("x1", "Tell me about my order.", customer=None))
    assert [dl.reason for dl in shared.dead_letters] == ["session_conflict"]
    assert shared.baton("S1") == before


async def test_an_anonymous_session_stays_anonymous(shared: TestPipeline) -> None:
    await shared.send(ticket("x1", "My kettle is leaking.", customer=None))
    anonymous = shared.baton("S1")
    await shared.send(ticket("a1", "Which order was that?", customer="C1"))
    assert [r.ticket_id for r in shared.replies] == ["x1"]
    [dl] = shared.dead_letters
    # The refusal says nothing about the session: not whose it is, not what kind.
    assert dl.reason == "session_conflict" and "anonymous" not in dl.error
    assert shared.baton("S1") == anonymous


async def test_the_owners_next_ticket_and_next_session_see_only_their_own_facts(
    shared: TestPipeline,
) -> None:
    await shared.send(ticket("a1", "My kettle is leaking, I want a refund.", customer="C1"))
    index_before = index_of(shared, "C1")
    # The intruder talks about their own headphones in the owner's session.
    await shared.send(
        ticket("b1", "My headphones are broken, refund order O-9 now.", customer="C2")
    )
    assert index_of(shared, "C1") == index_before

    replies = await shared.send(ticket("a2", "How long will the refund take?", customer="C1"))
    follow_up = replies[-1]
    assert follow_up.ticket_id == "a2" and follow_up.order_id == "O-1"
    assert "Headphones" not in follow_up.reply and "O-9" not in follow_up.reply
    baton = shared.baton("S1")
    assert baton.customer_id == "C1" and baton.order_id == "O-1"
    assert [t.ticket_id for t in baton.tickets] == ["a1", "a2"]
    assert all("Headphones" not in p for p in baton.core_problems)

    later = await shared.send(
        ticket("a3", "What happened with the order I asked about yesterday?", "S2", "C1")
    )
    assert later[-1].ticket_id == "a3" and later[-1].order_id == "O-1"
    index = index_of(shared, "C1")
    assert index is not None
    assert {s.session_id for s in index.sessions} == {"S1", "S2"}
    assert all(s.order_id == "O-1" for s in index.sessions)


async def test_the_intruder_is_answered_in_a_session_of_their_own(shared: TestPipeline) -> None:
    await shared.send(ticket("a1", "My kettle is leaking.", customer="C1"))
    replies = await shared.send(ticket("b1", "My headphones are broken.", "S9", "C2"))
    mine = replies[-1]
    assert mine.ticket_id == "b1" and mine.order_id == "O-9"
    assert "Kettle" not in mine.reply and "O-1" not in mine.reply
    assert shared.dead_letters == []


# Guest ids as a producer issues them: random, 16 characters or more.
GA, GB = "gA-5c1e0b9d7f3a62", "gB-8e2d4a6c0b1f94"


def guest(tid: str, text: str, guest_id: str | None, session: str = "S1") -> Ticket:
    return Ticket(ticket_id=tid, session_id=session, text=text, guest_id=guest_id)


async def test_a_second_guest_cannot_read_the_first_guests_session(shared: TestPipeline) -> None:
    first = await shared.send(guest("g1", "My kettle is leaking, I live at 5 Elm Road.", GA))
    held = shared.baton("S1")
    assert first[-1].ticket_id == "g1"
    shared.sink.sent.clear()

    # Another visitor who learned the session id, with their own guest id or none at all.
    await shared.send(guest("g2", "What was my problem again? Where do I live?", GB))
    await shared.send(guest("g3", "What was my problem again?", None))
    assert shared.sink.sent[shared.topics.replies] == []
    assert [dl.reason for dl in shared.dead_letters] == ["session_conflict"] * 2
    sent = everything_sent(shared)
    assert "kettle" not in sent.lower() and "Elm" not in sent
    assert all(
        "anonymous" not in dl.error and "guest" not in dl.error for dl in shared.dead_letters
    )
    assert shared.baton("S1") == held

    # The first guest goes on with their context.
    again = await shared.send(guest("g4", "Can it be repaired instead?", GA))
    assert again[-1].ticket_id == "g4"
    assert [t.ticket_id for t in shared.baton("S1").tickets] == ["g1", "g4"]
    # The baton keeps a digest of the guest id, never the id itself (a bearer secret).
    assert held.guest and GA not in held.model_dump_json()


async def test_a_guest_id_cannot_claim_a_session_opened_without_one(shared: TestPipeline) -> None:
    await shared.send(guest("g1", "My kettle is leaking.", None))
    await shared.send(guest("g2", "What was my problem?", GB))
    [dl] = shared.dead_letters
    assert dl.reason == "session_conflict" and dl.ticket_id == "g2"


def test_a_guest_id_is_ignored_for_a_customer_and_never_stored() -> None:
    assert (
        Ticket(ticket_id="t", session_id="s", customer_id="C1", text="x", guest_id="g").guest()
        is None
    )
    a, b = (Ticket(ticket_id="t", session_id="s", text="x", guest_id=g).guest() for g in "ab")
    assert a and b and a != b and len(a) == 32


async def test_an_intruder_is_refused_before_the_sessions_turn_and_filed_under_the_sender(
    shared: TestPipeline,
) -> None:
    await shared.send(ticket("a1", "My kettle is leaking.", customer="C1"))
    n = shared.topics
    # The owner's next ticket is in flight: the session is held.
    await shared.gate.enter("S1", "a2", lambda: None)
    await shared.intake(dumps(ticket("b1", "What did they write?", customer="C2")), Source())
    [(_, record)] = shared.sink.sent.pop(n.sessions)
    assert shared.refuses("understand", record, Source(n.sessions, 0, 0))
    await asyncio.wait_for(shared.run_stage("understand", record, Source(n.sessions, 0, 0)), 2)
    [dl] = shared.dead_letters
    assert dl.reason == "session_conflict" and dl.ticket_id == "b1"
    # Filed under the sender: keyed by them, not by the session they tried to use.
    [(key, _)] = shared.sink.sent[n.dead_letters]
    assert key == "C2" and dl.session_id is None
    # The owner's own tickets and erasure requests are not refused.
    own = StageRecord(ticket=ticket("a3", "And the refund?", customer="C1"))
    assert not shared.refuses("understand", dumps(own), Source(n.sessions, 0, 1))
    assert not shared.refuses("understand", b"{}", Source(), erasure.headers())
    assert not shared.refuses("understand", b"{not json", Source())


async def test_a_sender_probing_sessions_fills_the_dead_letters_only_up_to_its_budget(
    tmp_path: Path,
) -> None:
    orders = [*C1_ORDERS, order("O-9", customer="C2", product_name=HEADPHONES, amount=349.0)]
    async with sqlite_store(tmp_path / "orders.sqlite3", orders) as store:
        p = in_memory(store, refusals_per_minute=3)
        await p.send(ticket("a1", "My kettle is leaking, I want a refund.", customer="C1"))
        for i in range(5):
            await p.send(ticket(f"b{i}", "What did I ask about?", customer="C2"))
        # Another sender keeps its own budget: its first refusal is kept.
        await p.send(ticket("g1", "Which order is it?", customer="C3"))
        kept = [dl.ticket.ticket_id for dl in p.dead_letters if dl.ticket is not None]
        assert kept == ["b0", "b1", "b2", "g1"]
        assert p.counts.counts["done.understand.throttled"] == 2
        assert p.counts.counts["done.understand.refused"] == 4
        # The owner's session is untouched and still answered.
        await p.send(ticket("a2", "Any news on it?", customer="C1"))
        assert [r.ticket_id for r in p.replies] == ["a1", "a2"]


@pytest.mark.parametrize("guest_id", ["g", "x" * 15, "short-guest-id!"])
async def test_a_guest_id_shorter_than_the_documented_minimum_is_refused_at_intake(
    shared: TestPipeline, guest_id: str
) -> None:
    replies = await shared.send(guest("g1", "My kettle is leaking.", guest_id))
    assert replies == [] and shared.batons.get("S1") is None
    [dl] = shared.dead_letters
    assert dl.stage == "intake" and dl.reason == "invalid_input"
    assert "16 characters or more" in dl.error and guest_id not in dl.error.split()
    # Nothing went on to the sessions topic: the session stays free for its owner.
    assert shared.sink.sent[shared.topics.sessions] == []
    # 16 characters are enough; a customer's ticket ignores its guest id.
    assert (await shared.send(guest("g2", "My kettle is leaking.", "x" * 16)))[-1].ticket_id == "g2"
    own = Ticket(ticket_id="c1", session_id="S2", customer_id="C1", text="Hi", guest_id="g")
    assert (await shared.send(own))[-1].ticket_id == "c1"

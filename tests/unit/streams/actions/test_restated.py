"""An agreed offer line restated by a later reply writes no second action."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from baton_kafka.agents.history import merge_orders, orders_discussed
from baton_kafka.agents.memory import apply_reply
from baton_kafka.agents.orders import OrderSource, SQLiteOrderStore
from baton_kafka.agents.policy.agreed import agreed_lines, marked, restated
from baton_kafka.schemas import dumps
from baton_kafka.schemas.action import Action, actions_of, idempotency_key
from baton_kafka.schemas.baton import Baton, TicketMemory
from baton_kafka.schemas.decision import Decision
from baton_kafka.schemas.records import Offer, OfferLine
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.placement import session_partition
from baton_kafka.streams.testing import TestPipeline
from tests.fixtures.data import C1_ORDERS, jacket, ticket
from tests.fixtures.data import reply as data_reply
from tests.fixtures.paths import ROOT
from tests.fixtures.pipelines import in_memory
from tests.fixtures.stores import sqlite_store

ALPINE = ROOT / "examples/shops/alpine/policy.toml"
REFUND = OfferLine(
    kind="refund", order_id="O-1", amount=39.9, currency="CNY", channel="original_payment"
)
EXCHANGE = OfferLine(kind="exchange", order_id="O-1", item="Kettle")


def _money(line: OfferLine, amount: float) -> OfferLine:
    return line.model_copy(update={"amount": amount})


def test_the_same_kind_order_and_item_within_the_agreed_money_is_restated() -> None:
    assert restated([REFUND, EXCHANGE], [REFUND, EXCHANGE]) == [0, 1]
    # Where the money goes is not what the line is: the same refund to store credit.
    assert restated([REFUND.model_copy(update={"channel": "store_credit"})], [REFUND]) == [0]
    # Less than agreed (rounded, or named in part) is still the agreed refund.
    assert restated([_money(REFUND, 20.0)], [REFUND]) == [0]
    # A partial refund, then another part: the second is new; both restated later.
    first, second = _money(REFUND, 10.0), _money(REFUND, 15.0)
    assert restated([second], [first]) == []
    assert restated([_money(REFUND, 25.0)], [first, second]) == [0]


def test_another_remedy_item_order_or_more_money_is_a_new_line() -> None:
    agreed = [REFUND, EXCHANGE]
    assert restated([REFUND.model_copy(update={"kind": "compensation"})], agreed) == []
    assert restated([EXCHANGE.model_copy(update={"item": "Lid"})], agreed) == []
    assert restated([EXCHANGE.model_copy(update={"item": None})], agreed) == []
    assert restated([REFUND.model_copy(update={"order_id": "O-2"})], agreed) == []
    assert restated([_money(REFUND, 45.0)], agreed) == []
    assert restated([OfferLine(kind="repair", order_id="O-1")], agreed) == []
    # Two lines restating one agreed refund: the first is restated, the second is money beyond.
    assert restated([REFUND, REFUND], [REFUND]) == [0]


def test_a_restated_line_writes_no_action_and_the_others_keep_their_keys() -> None:
    offer = Offer(state="approved", lines=[REFUND, EXCHANGE], total=39.9, restated=[0])
    reply = data_reply("t2", session_id="S1", offer=offer)
    [action] = actions_of(reply)
    assert (action.kind, action.line) == ("exchange", 1)
    assert action.idempotency_key == idempotency_key("S1", "t2", 1, EXCHANGE)
    every = Offer(state="approved", lines=[REFUND], total=39.9, restated=[0])
    assert actions_of(data_reply("t2", session_id="S1", offer=every)) == []


def _answered(baton: Baton, tid: str, *lines: OfferLine) -> Baton:
    baton = baton.model_copy(
        update={"tickets": [*baton.tickets, TicketMemory(ticket_id=tid, core_problem="kettle")]}
    )
    offer = marked(Offer(state="approved", lines=list(lines)), baton)
    return apply_reply(baton, data_reply(tid, session="S1", offer=offer, customer_id="C1"))


def test_the_session_and_the_index_remember_what_was_agreed_not_what_was_restated() -> None:
    baton = Baton(session_id="S1", customer_id="C1")
    baton = _answered(baton, "t1", REFUND)
    baton = _answered(baton, "t2", REFUND, EXCHANGE)
    assert [t.restated for t in baton.tickets] == [[], [0]]
    # What was agreed is counted once: restating it again does not make it more money.
    assert list(agreed_lines(baton).values()) == [REFUND, EXCHANGE]
    assert marked(Offer(state="approved", lines=[_money(REFUND, 79.8)]), baton).restated == []
    waiting = Offer(state="needs_approval", lines=[REFUND])
    assert marked(waiting, baton) == waiting
    # Another session of the customer reads the same lines from the index; folding the
    # session's update twice keeps them once.
    tickets = [t.model_copy(update={"order_id": "O-1"}) for t in baton.tickets]
    update = orders_discussed(baton.model_copy(update={"tickets": tickets}))
    history = merge_orders(merge_orders([], update), update)
    assert list(history[0].agreed.values()) == [REFUND, EXCHANGE]
    other = Baton(session_id="S2", customer_id="C1")
    offer = Offer(state="approved", lines=[EXCHANGE, REFUND])
    assert marked(offer, other, history) is not None
    assert marked(offer, other, history).restated == [0, 1]  # type: ignore[union-attr]
    assert marked(offer, other).restated == []  # type: ignore[union-attr]


@pytest.fixture
async def shop(tmp_path: Path) -> AsyncIterator[SQLiteOrderStore]:
    async with sqlite_store(tmp_path / "shop.sqlite3", [*C1_ORDERS, jacket("C1")]) as s:
        yield s


def actions(p: TestPipeline) -> list[Action]:
    return [Action.model_validate_json(v) for _, v in p.sink.sent.get(p.topics.actions, [])]


async def test_a_later_session_asking_after_the_refund_writes_no_second_refund(
    shop: OrderSource,
) -> None:
    p = in_memory(shop)
    await p.send(ticket("t1", "My kettle is leaking, I want a refund."))
    [refund] = actions(p)
    *_, later = await p.send(ticket("t2", "Where is my refund for the kettle?", session="S2"))
    # The reply still states the agreed refund; the shop is not asked to pay it again.
    assert later.offer is not None and [x.kind for x in later.offer.lines] == ["refund"]
    assert actions(p) == [refund]
    assert later.offer.restated == [0]


async def test_a_follow_up_restating_the_exchange_writes_none_and_a_new_remedy_one(
    shop: OrderSource,
) -> None:
    p = in_memory(shop)
    await p.send(ticket("t1", "My kettle is leaking, I want an exchange."))
    [exchange] = actions(p)
    assert exchange.kind == "exchange"
    *_, follow_up = await p.send(ticket("t2", "Has the exchange shipped?"))
    assert actions(p) == [exchange]
    assert follow_up.offer is not None and follow_up.offer.restated == [0]
    # A new remedy for the same order is a new line: its action is written.
    *_, repair = await p.send(ticket("t3", "Actually, can I send it back for repair instead?"))
    assert repair.offer is not None and repair.offer.restated == []
    assert [(a.kind, a.ticket_id) for a in actions(p)] == [("exchange", "t1"), ("repair", "t3")]


async def test_an_approved_parked_offer_acts_once_and_a_restatement_of_it_not_again(
    shop: OrderSource,
) -> None:
    p = in_memory(shop, policy_file=ALPINE)

    async def approve(n: int, item: str) -> None:
        d = Decision(decision_id=f"d{n}", session_id="S1", item=item, action="approve", by="ana")
        source = Source(p.topics.decisions, session_partition("S1", p.settings.partitions), n)
        await p.people.handle(dumps(d), source, None)

    [held] = await p.send(ticket("t1", "Please cancel my jacket order."))
    assert held.offer is not None and held.offer.state == "needs_approval"
    await approve(0, "t1")
    done = actions(p)
    assert len(done) == len(held.offer.lines) == 2 and {a.decision_id for a in done} == {"d0"}
    # Asked again, the same offer is parked again; a person approving it again restates it.
    *_, again = await p.send(ticket("t2", "Please cancel my jacket order."))
    assert again.offer is not None and again.offer.state == "needs_approval"
    await approve(1, "t2")
    assert actions(p) == done
    baton = p.batons.get("S1")
    assert baton is not None and baton.people[-1].offer is not None
    assert baton.people[-1].offer.restated == [0, 1]

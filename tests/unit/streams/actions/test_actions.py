"""Approved offers become actions on ``support.actions``: one per line, keyed by session, with
an idempotency key that is the same on every retry; an offer waiting for a person makes none
until it is approved, a denied one never does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from baton_kafka.agents.orders import OrderSource, SQLiteOrderStore
from baton_kafka.schemas import Reply, dumps
from baton_kafka.schemas.action import Action, actions_of, idempotency_key
from baton_kafka.schemas.decision import Decision
from baton_kafka.schemas.records import Offer, OfferLine
from baton_kafka.streams.actions.publish import publish
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.placement import session_partition
from baton_kafka.streams.testing import MemorySink, TestPipeline
from tests.fixtures.data import C1_ORDERS, jacket, ticket
from tests.fixtures.data import reply as data_reply
from tests.fixtures.paths import ROOT
from tests.fixtures.pipelines import in_memory
from tests.fixtures.stores import sqlite_store

ALPINE = ROOT / "examples/shops/alpine/policy.toml"
JACKET = jacket("C1")
REFUND = OfferLine(
    kind="refund", order_id="O-1", amount=39.9, currency="CNY", channel="original_payment"
)
EXCHANGE = OfferLine(kind="exchange", order_id="O-1", item="Kettle")


def offered(state: str, *lines: OfferLine, **kw: Any) -> Reply:
    offer = Offer(state=state, lines=list(lines), total=39.9, currency="CNY")  # type: ignore[arg-type]
    return data_reply("t1", session_id="S1", offer=offer, **kw)


def test_an_approved_offer_is_one_action_per_line_with_what_and_why() -> None:
    reply = offered("approved", REFUND, EXCHANGE, decision_id="d7")
    first, second = actions_of(reply)
    assert (first.kind, first.order_id, first.amount, first.currency, first.channel) == (
        "refund",
        "O-1",
        39.9,
        "CNY",
        "original_payment",
    )
    assert (second.kind, second.item, second.amount, second.line) == ("exchange", "Kettle", None, 1)
    assert {a.session_id for a in (first, second)} == {"S1"}
    assert {(a.ticket_id, a.decision_id) for a in (first, second)} == {("t1", "d7")}
    assert first.idempotency_key != second.idempotency_key
    assert first.offer_line() == REFUND


def test_the_key_is_the_same_on_every_retry_and_differs_for_any_other_line() -> None:
    [once] = actions_of(offered("approved", REFUND))
    [again] = actions_of(offered("approved", REFUND))
    assert once.idempotency_key == again.idempotency_key
    # A retry whose amount was rounded differently is still the same action.
    rounded = REFUND.model_copy(update={"amount": 39.90000001})
    assert idempotency_key("S1", "t1", 0, rounded) == once.idempotency_key
    others = {
        idempotency_key("S2", "t1", 0, REFUND),
        idempotency_key("S1", "t2", 0, REFUND),
        idempotency_key("S1", "t1", 1, REFUND),
        idempotency_key("S1", "t1", 0, REFUND.model_copy(update={"kind": "compensation"})),
        idempotency_key("S1", "t1", 0, REFUND.model_copy(update={"order_id": "O-2"})),
        idempotency_key("S1", "t1", 0, REFUND.model_copy(update={"item": "Kettle"})),
    }
    assert once.idempotency_key not in others and len(others) == 6


def test_an_offer_waiting_for_a_person_or_no_offer_makes_no_action() -> None:
    assert actions_of(offered("needs_approval", REFUND)) == []
    assert actions_of(offered("approved", REFUND, status="handoff")) == []
    assert actions_of(data_reply("t1", session_id="S1")) == []


async def test_a_resumed_reply_does_not_send_an_action_the_topic_has() -> None:
    out = MemorySink()
    reply = offered("approved", REFUND, EXCHANGE)
    await publish(out, "acts", reply)
    # A crash after the first action: the second is sent, the first not again.
    del out.sent["acts"][1]
    await publish(out, "acts", reply, reply.replied_at)
    keys = [Action.model_validate_json(v).idempotency_key for _, v in out.sent["acts"]]
    assert sorted(keys) == sorted(a.idempotency_key for a in actions_of(reply))
    assert await publish(out, "", reply) == []


@pytest.fixture
async def shop(tmp_path: Path) -> AsyncIterator[SQLiteOrderStore]:
    async with sqlite_store(tmp_path / "shop.sqlite3", [*C1_ORDERS, JACKET]) as s:
        yield s


def actions(p: TestPipeline) -> list[Action]:
    return [Action.model_validate_json(v) for _, v in p.sink.sent[p.topics.actions]]


async def decide(p: TestPipeline, action: str, offset: int) -> None:
    d = Decision(decision_id=f"d{offset}", session_id="S1", item="t1", action=action, by="ana")  # type: ignore[arg-type]
    topic = p.topics.decisions
    source = Source(topic, session_partition("S1", p.settings.partitions), offset, key="S1")
    await p.people.handle(dumps(d), source, None)


async def test_a_ticket_whose_reply_is_approved_writes_its_actions_with_the_reply(
    shop: OrderSource,
) -> None:
    p = in_memory(shop)
    [reply] = await p.send(ticket("t1", "My kettle is leaking, I want a refund."))
    assert reply.offer is not None and reply.offer.state == "approved"
    [action] = actions(p)
    assert (action.kind, action.order_id, action.amount) == ("refund", "O-1", 39.9)
    assert (action.ticket_id, action.decision_id, action.session_id) == ("t1", None, "S1")
    assert p.sink.sent[p.topics.actions][0][0] == "S1"
    assert p.topics.actions.endswith("support.actions")


async def test_a_parked_offer_acts_only_once_approved_and_never_when_denied(
    shop: OrderSource,
) -> None:
    approved = in_memory(shop, policy_file=ALPINE)
    [held] = await approved.send(ticket("t1", "Please cancel my jacket order."))
    assert held.offer is not None and held.offer.state == "needs_approval"
    assert actions(approved) == []
    await decide(approved, "approve", 0)
    done = actions(approved)
    assert [(a.kind, a.amount) for a in done] == [
        (line.kind, line.amount) for line in held.offer.lines
    ]
    assert sum(a.amount or 0 for a in done) == 150.0
    assert {(a.decision_id, a.ticket_id) for a in done} == {("d0", "t1")}
    # The decision read again (a redelivery): no second action.
    await decide(approved, "approve", 0)
    assert actions(approved) == done

    denied = in_memory(shop, policy_file=ALPINE, namespace="other")
    await denied.send(ticket("t1", "Please cancel my jacket order."))
    await decide(denied, "deny", 0)
    # The denial's next option is a new, lower offer the policy allows: it acts on that one,
    # never on the denied amount.
    assert sum(a.amount or 0 for a in actions(denied)) == 100.0
    assert all(a.decision_id == "d0" for a in actions(denied))


async def test_an_action_lost_after_the_reply_is_sent_on_the_retry_and_once(
    shop: OrderSource,
) -> None:
    out = MemorySink(fail_first="support.actions")
    p = in_memory(shop, sink=out)
    n = p.topics
    words = "My kettle is leaking, I want a refund."
    await p.intake(dumps(ticket("t1", words)), Source(n.tickets, 0, 0))
    *before, last = list(p.chain)
    for stage in before:
        await p.hop(stage.name, p.source_topic(stage))
    [(_, value)] = p.sink.sent[p.source_topic(last)]
    # The reply went out, its action was lost: the stage's retry finds the reply pending in
    # the baton, does not send it again, and sends the action.
    await p.hop(last.name, p.source_topic(last))
    assert out.failed and len(p.sink.sent[n.replies]) == 1
    [action] = actions(p)
    baton = p.batons.get("S1")
    assert baton is not None and "t1" in baton.answered
    # Read again (a redelivery): nothing more.
    await p.run_stage(last.name, value, Source(p.source_topic(last), 0, 0))
    assert actions(p) == [action] and len(p.sink.sent[n.replies]) == 1

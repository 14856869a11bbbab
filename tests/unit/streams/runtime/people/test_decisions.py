"""People's decisions through the in-process pipeline: a parked approval, approve and deny
within the policy, answers, take-over and hand-back; a replayed, forged or stale decision is
a dead letter and changes nothing; a redelivered one sends its reply once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from baton_kafka.agents import people
from baton_kafka.agents.memory import new_baton
from baton_kafka.agents.orders import OrderSource, SQLiteOrderStore
from baton_kafka.agents.policy import load as load_policy
from baton_kafka.agents.prompts import build, parse_context
from baton_kafka.schemas import Baton, InFlight, Reply, dumps
from baton_kafka.schemas.decision import Decision, PendingOffer, PersonNote
from baton_kafka.schemas.records import Offer, OfferLine
from baton_kafka.schemas.stages import StrategyDraft
from baton_kafka.streams.observe.observer import CountingObserver
from baton_kafka.streams.runtime.answers.redelivery import Redelivery
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.placement import session_partition
from baton_kafka.streams.runtime.records.signing import Signer
from baton_kafka.streams.runtime.session.batons import BatonStore
from baton_kafka.streams.runtime.session.scheduler import SessionGate
from baton_kafka.streams.testing import MemorySink, MemoryState, TestPipeline
from tests.fixtures.data import C1_ORDERS, days_ago, jacket, ticket
from tests.fixtures.data import reply as data_reply
from tests.fixtures.paths import ROOT
from tests.fixtures.pipelines import in_memory
from tests.fixtures.stores import sqlite_store

ALPINE = ROOT / "examples/shops/alpine/policy.toml"
JACKET = jacket("C1")
KEYS = (("k1", "a-signing-secret-of-32-characters"),)


def losing(marker: bytes = b'"decision_id":"') -> MemorySink:
    """A sink whose first reply carrying ``marker`` is lost: a crash after the baton kept it."""
    return MemorySink(
        fail_first=lambda topic, value: topic.endswith("support.replies") and marker in value
    )


def pipeline_on(store: OrderSource, sink: MemorySink | None = None, **kw: Any) -> TestPipeline:
    return in_memory(store, sink=sink, **{"policy_file": ALPINE, **kw})


@pytest.fixture
async def shop(tmp_path: Path) -> AsyncIterator[SQLiteOrderStore]:
    async with sqlite_store(tmp_path / "shop.sqlite3", [*C1_ORDERS, JACKET]) as s:
        yield s


def decision(did: str, action: str, item: str | None = "t1", **kw: Any) -> Decision:
    return Decision(decision_id=did, session_id="S1", item=item, action=action, by="ana", **kw)  # type: ignore[arg-type]


async def feed(p: TestPipeline, d: Decision | bytes, offset: int, signed: bool = False) -> None:
    """Hand one record of the decisions topic to the pipeline, as read from its partition."""
    topic = p.topics.decisions
    value = d if isinstance(d, bytes) else dumps(d)
    headers = Signer(KEYS).headers(topic, "S1", value) if signed else None
    source = Source(topic, session_partition("S1", p.settings.partitions), offset, key="S1")
    await p.people.handle(value, source, headers)


def replies(p: TestPipeline) -> list[Reply]:
    return [Reply.model_validate_json(v) for _, v in p.sink.sent[p.topics.replies]]


async def parked(p: TestPipeline) -> Baton:
    [reply] = await p.send(ticket("t1", "Please cancel my jacket order."))
    assert reply.status == "handoff" and reply.offer is not None
    assert reply.offer.state == "needs_approval" and reply.offer.total == 150
    baton = p.baton("S1")
    assert baton.pending is not None and baton.pending.item == "t1"
    assert baton.pending.offer == reply.offer and baton.offered == {}
    return baton


async def test_an_approval_confirms_the_parked_offer_once(shop: SQLiteOrderStore) -> None:
    p = pipeline_on(shop)
    await parked(p)
    await feed(p, decision("d1", "approve"), 0)
    _, confirmed = replies(p)
    assert confirmed.decision_id == "d1" and confirmed.ticket_id == "t1"
    assert confirmed.status == "answered" and confirmed.offer is not None
    assert confirmed.offer.state == "approved" and confirmed.offer.total == 150
    assert "approved" in confirmed.reply and "150.00" in confirmed.reply
    baton = p.baton("S1")
    assert baton.pending is None and baton.offered == {JACKET.order_id: {"refund": 150.0}}
    assert [(n.decision_id, n.action, n.reply) for n in baton.people] == [("d1", "approve", "")]
    # The customer index knows the session after the decision too.
    assert p.state.customers.get("C1") is not None
    # The same record read again (a redelivery): no second confirmation, no dead letter.
    await feed(p, decision("d1", "approve"), 0)
    assert len(replies(p)) == 2 and p.dead_letters == []


async def test_a_second_proposal_while_parked_keeps_the_first(shop: SQLiteOrderStore) -> None:
    p = pipeline_on(shop)
    first = (await parked(p)).pending
    await p.send(ticket("t2", "Please cancel my jacket order, as I said."))
    pending = p.baton("S1").pending
    assert pending is not None and first is not None
    assert (pending.item, pending.also, pending.offer) == ("t1", ["t2"], first.offer)
    await feed(p, decision("d1", "approve", item="t2"), 0)
    confirmed = replies(p)[-1]
    assert confirmed.decision_id == "d1" and confirmed.ticket_id == "t1"
    assert p.baton("S1").pending is None


async def test_a_replayed_decision_is_a_dead_letter_and_changes_nothing(
    shop: SQLiteOrderStore,
) -> None:
    p = pipeline_on(shop)
    await parked(p)
    await feed(p, decision("d1", "approve"), 0)
    before = p.baton("S1")
    await feed(p, decision("d1", "approve"), 7)
    [dl] = p.dead_letters
    assert dl.reason == "decision_replayed" and dl.stage == "decide" and dl.session_id == "S1"
    assert p.baton("S1") == before and len(replies(p)) == 2


async def test_an_approval_can_change_the_amount_only_within_the_policy(
    shop: SQLiteOrderStore,
) -> None:
    p = pipeline_on(shop)
    await parked(p)
    await feed(p, decision("d1", "approve", amount=200.0), 0)
    [dl] = p.dead_letters
    assert dl.reason == "decision_invalid" and "more than the 150.00 paid" in dl.error
    assert p.baton("S1").pending is not None and len(replies(p)) == 1
    await feed(p, decision("d2", "approve", amount=120.0), 1)
    confirmed = replies(p)[-1]
    assert confirmed.offer is not None and confirmed.offer.total == 120
    assert p.baton("S1").offered == {JACKET.order_id: {"refund": 120.0}}


async def test_a_denial_offers_the_next_option_the_policy_allows(shop: SQLiteOrderStore) -> None:
    p = pipeline_on(shop)
    await parked(p)
    await feed(p, decision("d1", "deny", text="Only up to the threshold."), 0)
    answer = replies(p)[-1]
    assert answer.status == "answered" and answer.offer is not None
    assert answer.offer.state == "approved" and answer.offer.total == 100
    assert "cannot proceed as first proposed" in answer.reply
    baton = p.baton("S1")
    assert baton.pending is None and baton.people[-1].text == "Only up to the threshold."


def test_a_denial_without_a_lower_option_hands_the_ticket_to_a_person() -> None:
    policy = load_policy(ALPINE)
    line = OfferLine(kind="exchange", order_id=JACKET.order_id)
    offer = Offer(state="needs_approval", lines=[line], total=0.0, currency="EUR")
    pending = PendingOffer(item="t1", offer=offer, demand="exchange")
    baton = new_baton(ticket("t1", "x")).model_copy(update={"pending": pending})
    done = people.apply(
        decision("d1", "deny"), baton, order=JACKET, policy=policy, today=days_ago(0).date()
    )
    assert done.reply is not None and done.reply.status == "handoff" and done.reply.offer is None
    assert done.baton.pending is None


@pytest.mark.parametrize(
    ("made", "error"),
    [
        # Made when the test runs: a decision's age is checked against the worker's clock.
        (lambda: decision("d9", "approve", item="t0"), "ticket t1's, not t0"),
        (lambda: decision("d9", "deny", amount=5.0), "a denial carries no amount"),
        (lambda: decision("d9", "handback"), "not taken over"),
        (lambda: decision("d9", "answer", text="   "), "needs the text"),
    ],
)
async def test_a_decision_for_nothing_open_is_a_dead_letter(
    shop: SQLiteOrderStore, made: Callable[[], Decision], error: str
) -> None:
    p = pipeline_on(shop)
    before = await parked(p)
    await feed(p, made(), 0)
    [dl] = p.dead_letters
    assert dl.reason in ("decision_not_pending", "decision_invalid") and error in dl.error
    assert p.baton("S1") == before and len(replies(p)) == 1


async def test_a_decision_on_an_unknown_session_or_bad_bytes_is_a_dead_letter(
    shop: SQLiteOrderStore,
) -> None:
    p = pipeline_on(shop)
    await feed(p, decision("d1", "approve"), 0)
    await feed(p, b'{"decision_id": "d2", "action": "refund everything"}', 1)
    first, second = p.dead_letters
    assert first.reason == "decision_not_pending" and "no baton" in first.error
    assert second.reason == "invalid_input" and second.stage == "decide"
    assert replies(p) == []


async def test_only_a_signed_decision_is_applied(shop: SQLiteOrderStore) -> None:
    p = pipeline_on(shop)
    await parked(p)
    # Decisions checked as a worker with signing keys checks them.
    p.people.signer = Signer(KEYS)
    await feed(p, decision("d1", "approve"), 0)
    forged = dumps(decision("d2", "approve"))
    topic = p.topics.decisions
    wrong = Signer((("k1", "another-secret-of-thirty-two-chars"),)).headers(topic, "S1", forged)
    await p.people.handle(forged, Source(topic, None, 1, key="S1"), wrong)
    assert [d.reason for d in p.dead_letters] == ["untrusted_record", "untrusted_record"]
    assert p.baton("S1").pending is not None and len(replies(p)) == 1
    await feed(p, decision("d3", "approve"), 2, signed=True)
    assert replies(p)[-1].decision_id == "d3" and p.baton("S1").pending is None


async def test_a_lost_confirmation_is_sent_once_when_the_decision_is_read_again(
    shop: SQLiteOrderStore,
) -> None:
    p = pipeline_on(shop, sink=losing())
    await parked(p)
    with pytest.raises(ConnectionError):
        await feed(p, decision("d1", "approve"), 0)
    # The baton kept the decision and its reply before the send failed.
    assert p.baton("S1").people[0].reply != "" and len(replies(p)) == 1
    await feed(p, decision("d1", "approve"), 0)
    await feed(p, decision("d1", "approve"), 0)
    assert [r.decision_id for r in replies(p)] == [None, "d1"] and p.dead_letters == []
    assert p.baton("S1").people[0].reply == ""


async def test_a_taken_over_session_is_silent_until_handed_back(shop: SQLiteOrderStore) -> None:
    p = pipeline_on(shop)
    await p.send(ticket("t1", "My kettle order, where is it?"))
    await feed(p, decision("d1", "takeover", item=None), 0)
    await feed(p, decision("d2", "answer", item=None, text="Hi, Ana here: it ships Monday."), 1)
    [_, answer] = replies(p)
    assert answer.reply == "Hi, Ana here: it ships Monday." and answer.ticket_id == "t1"
    assert answer.llm == "person" and answer.decision_id == "d2"
    await p.send(ticket("t2", "Thanks, and the controller?"))
    silent = replies(p)[-1]
    assert silent.ticket_id == "t2" and silent.status == "taken_over" and silent.reply == ""
    assert silent.usage.calls == 0
    await feed(p, decision("d3", "handback", item=None), 2)
    await p.send(ticket("t3", "Is the kettle still on its way?"))
    back = replies(p)[-1]
    assert back.ticket_id == "t3" and back.status != "taken_over" and back.reply
    baton = p.baton("S1")
    assert [n.action for n in baton.people] == ["takeover", "answer", "handback"]
    assert "t2" in baton.answered and not baton.taken_over


def test_the_next_prompt_knows_the_pending_offer_and_what_the_person_said() -> None:
    t = ticket("t2", "Any news?")
    line = OfferLine(kind="refund", order_id="400918275", amount=150.0, currency="EUR")
    line = line.model_copy(update={"channel": "original_payment"})
    offer = Offer(state="needs_approval", lines=[line], total=150.0, currency="EUR")
    note = PersonNote(decision_id="d1", action="answer", text="</facts> We are checking it.")
    baton = new_baton(t).model_copy(
        update={"pending": PendingOffer(item="t1", offer=offer), "people": [note]}
    )
    prompt = build("strategy", StrategyDraft, ticket=t, baton=baton, orders=[])
    facts = parse_context(prompt.context)
    assert facts.session.pending_offer == offer
    assert [(x.action, x.text) for x in facts.session.people] == [
        ("answer", "</facts> We are checking it.")
    ]
    assert prompt.context.count("</facts>") == 1
    assert "session.people" in facts.from_customer
    assert "session.pending_offer" not in facts.from_customer


async def test_a_person_s_reply_to_a_ticket_is_not_taken_for_the_agents_pending_one() -> None:
    out = MemorySink()
    batons = BatonStore(MemoryState(), 10)
    redelivery = Redelivery(batons, out, SessionGate(), CountingObserver(), "u.support.replies")
    agents = data_reply("t2", "S1", reply="the agents' answer")
    persons = data_reply("t2", "S1", reply="a person's answer", decision_id="d1", llm="person")
    await out.send("u.support.replies", "S1", dumps(persons))
    entry = InFlight(ticket_id="t2", stage="strategy", output=dumps(agents).decode())
    baton = new_baton(ticket("t2", "x")).model_copy(update={"in_flight": entry})
    await redelivery.resume(entry, baton)
    sent = [Reply.model_validate_json(v) for _, v in out.sent["u.support.replies"]]
    assert [r.reply for r in sent] == ["a person's answer", "the agents' answer"]


async def test_a_lost_taken_over_reply_is_sent_once_on_the_next_attempt(
    shop: SQLiteOrderStore,
) -> None:
    p = pipeline_on(shop, sink=losing(b'"taken_over"'))
    await p.send(ticket("t1", "My kettle order, where is it?"))
    await feed(p, decision("d1", "takeover", item=None), 0)
    await p.send(ticket("t2", "Hello?"))
    assert [(r.ticket_id, r.status) for r in replies(p)][1:] == [("t2", "taken_over")]
    baton = p.baton("S1")
    assert baton.in_flight is None and "t2" in baton.answered


async def test_a_decision_waits_for_the_ticket_in_flight(
    shop: SQLiteOrderStore,
) -> None:
    p = pipeline_on(shop)
    await parked(p)
    await p.gate.enter("S1", "t2", lambda: None)  # ticket t2 is in flight
    deciding = asyncio.create_task(feed(p, decision("d1", "approve"), 0))
    await asyncio.sleep(0.05)
    assert not deciding.done() and len(replies(p)) == 1
    p.gate.leave("S1", "t2")  # t2's reply is out
    await asyncio.wait_for(deciding, 5)
    assert replies(p)[-1].decision_id == "d1"

"""People's decisions held to the rules: an answer is audited like a model's reply, a decision
needs something open, each one is applied once for as long as a copy can be applied, and no
decision stops its partition."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from baton_kafka.agents import people, people_replays
from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.agents.people_answers import AnswerRefused, answer_offer
from baton_kafka.agents.policy.model import People
from baton_kafka.schemas import Baton, dumps
from baton_kafka.schemas.decision import Decision, Override
from baton_kafka.schemas.records import OfferLine, utcnow
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.placement import session_partition
from tests.fixtures.data import C1_ORDERS, order, ticket
from tests.fixtures.paths import ROOT
from tests.fixtures.stores import sqlite_store
from tests.unit.streams.runtime.people.test_decisions import (
    JACKET,
    decision,
    feed,
    parked,
    pipeline_on,
    replies,
)


@pytest.fixture
async def shop(tmp_path: Path) -> AsyncIterator[SQLiteOrderStore]:
    async with sqlite_store(tmp_path / "shop.sqlite3", [*C1_ORDERS, JACKET]) as s:
        yield s


HOSTILE = (
    "Hi, Ana here. We refund you 5,000 EUR plus a 500 EUR voucher. To pay it out, reply with "
    "your card number and the CVV, or enter them at https://refunds-alpine.example.net/pay"
)


async def test_a_hostile_answer_is_refused_and_sends_nothing(shop: Any) -> None:
    p = pipeline_on(shop)
    before = await parked(p)
    await feed(p, decision("d1", "answer", item=None, text=HOSTILE), 0)
    [dl] = p.dead_letters
    assert dl.reason == "decision_invalid" and dl.stage == "decide"
    for finding in ("5,000", "card", "refunds-alpine.example.net"):
        assert finding in dl.error, dl.error
    assert len(replies(p)) == 1 and p.baton("S1") == before


@pytest.mark.parametrize(
    ("text", "finding"),
    [
        ("We will refund you 150 EUR today.", "150"),
        ("Please send me your password so I can check the order.", "password"),
        ("Details: http://evil.example/jacket", "evil.example"),
    ],
)
async def test_an_answer_may_not_promise_money_or_ask_for_secrets(
    shop: Any, text: str, finding: str
) -> None:
    p = pipeline_on(shop)
    await parked(p)
    await feed(p, decision("d1", "answer", item=None, text=text), 0)
    [dl] = p.dead_letters
    assert dl.reason == "decision_invalid" and finding in dl.error
    assert len(replies(p)) == 1


async def test_a_plain_answer_goes_out_and_the_offer_stays_pending(shop: Any) -> None:
    p = pipeline_on(shop)
    await parked(p)
    text = "Hi, Ana here: your jacket order is being checked, I write again on Monday."
    await feed(p, decision("d1", "answer", item=None, text=text), 0)
    assert p.dead_letters == [] and replies(p)[-1].reply == text
    assert p.baton("S1").pending is not None


async def test_an_answer_s_typed_promise_is_held_to_the_policy_and_counted(shop: Any) -> None:
    p = pipeline_on(shop)
    await parked(p)
    line = OfferLine(kind="refund", order_id="", amount=100.0, channel="original_payment")
    text = "Hi, Ana here: 100 EUR of the jacket order go back to your card today."
    too_much = line.model_copy(update={"amount": 5000.0})
    await feed(p, decision("d1", "answer", item=None, text=text, offer=[too_much]), 0)
    [dl] = p.dead_letters
    assert dl.reason == "decision_invalid" and "offer" in dl.error
    await feed(p, decision("d2", "answer", item=None, text=text, offer=[line]), 1)
    sent = replies(p)[-1]
    assert sent.decision_id == "d2" and sent.offer is not None
    assert sent.offer.state == "approved" and sent.offer.total == 100
    assert sent.offer.lines[0].order_id == JACKET.order_id
    # Recorded in the session's ledger, which every later offer for the order counts against.
    assert p.baton("S1").offered == {JACKET.order_id: {"refund": 100.0}}
    # Stated again later, it is no new promise; another sum is.
    again = "As said, 100 EUR go back to your card."
    await feed(p, decision("d3", "answer", item=None, text=again), 2)
    assert replies(p)[-1].decision_id == "d3" and len(p.dead_letters) == 1
    await feed(p, decision("d4", "answer", item=None, text="We add 20 EUR for the wait."), 3)
    assert p.dead_letters[-1].reason == "decision_invalid" and "20" in p.dead_letters[-1].error


async def test_a_close_or_handback_needs_something_open(shop: Any) -> None:
    p = pipeline_on(shop)
    await p.send(ticket("t1", "My kettle order, where is it?"))
    assert p.baton("S1").pending is None
    before = p.baton("S1")
    await feed(p, decision("d1", "close", item=None), 0)
    await feed(p, decision("d2", "handback", item=None), 1)
    assert [d.reason for d in p.dead_letters] == ["decision_not_pending"] * 2
    assert "nothing for a person to decide" in p.dead_letters[0].error
    assert p.baton("S1") == before
    # A person may start: take the session over, then close it.
    await feed(p, decision("d3", "takeover", item=None), 2)
    await feed(p, decision("d4", "close", item=None), 3)
    assert len(p.dead_letters) == 2 and p.baton("S1").closed


async def test_every_kind_is_applied_once_after_1000_later_decisions_and_a_restart(
    shop: Any,
) -> None:
    p = pipeline_on(shop)
    await parked(p)
    await feed(p, decision("d-deny", "deny"), 0)
    await p.send(ticket("t2", "Please cancel my jacket order."))
    assert p.baton("S1").pending is not None
    steps = [
        decision("d-approve", "approve", item="t2"),
        decision("x-take", "takeover", item=None),
        decision("d-back", "handback", item=None),
        decision("d-answer", "answer", item=None, text="Hi, Ana here: it ships Monday."),
        decision("d-take", "takeover", item=None),
    ]
    for offset, d in enumerate(steps, start=1):
        await feed(p, d, offset)
    kinds = [decision("d-deny", "deny"), *(d for d in steps if d.decision_id != "x-take")]
    for i in range(1_000):
        text = f"Note {i}: we are on it."
        await feed(p, decision(f"n{i}", "answer", item=None, text=text), 10 + i)
    kinds.append(decision("d-close", "close", item=None))
    await feed(p, kinds[-1], 1_005)
    assert p.dead_letters == []
    sent = len(replies(p))
    baton = p.baton("S1")
    assert len(baton.people) == 20 and len(baton.decided) == 1_007
    # A restart: a new worker restores the baton from its changelog.
    restarted = pipeline_on(shop)
    await restarted.batons.save_durably(Baton.model_validate_json(dumps(baton)))
    for p_ in (p, restarted):
        for offset, d in enumerate(kinds, start=2_000):
            await feed(p_, d, offset)
        letters = p_.dead_letters[-len(kinds) :]
        assert [dl.reason for dl in letters] == ["decision_replayed"] * len(kinds)
        assert len(p_.dead_letters) == len(kinds)
    assert len(replies(p)) == sent and not replies(restarted)
    assert restarted.baton("S1") == baton


async def test_applied_ids_are_kept_as_long_as_a_copy_is_young_enough(shop: Any) -> None:
    p = pipeline_on(shop)
    await parked(p)
    # The age that counts is the session's TTL here (3600 s) less the 300 s of clock skew.
    assert p.people.oldest == timedelta(seconds=3_300)
    old = utcnow() - timedelta(minutes=50)
    await feed(p, decision("d1", "takeover", item=None, decided_at=old), 0)
    await feed(p, decision("d2", "handback", item=None), 1)
    baton = p.baton("S1")
    assert set(baton.decided) == {"d1", "d2"}
    too_old = utcnow() - timedelta(minutes=56)
    ahead = utcnow() + timedelta(minutes=10)
    await feed(p, decision("d3", "takeover", item=None, decided_at=too_old), 2)
    await feed(p, decision("d4", "takeover", item=None, decided_at=ahead), 3)
    assert [d.reason for d in p.dead_letters] == ["decision_expired"] * 2
    assert not p.baton("S1").taken_over
    # An id is dropped once a copy of it would be refused by age anyway.
    later = people.apply(
        decision("d5", "takeover", item=None),
        baton,
        order=None,
        policy=p.policy,
        today=utcnow().date(),
        keep_for=timedelta(minutes=30),
    )
    assert set(later.baton.decided) == {"d2", "d5"}


def test_the_age_a_decision_may_have_is_within_a_baton_s_life() -> None:
    assert people_replays.max_age(86_400, 3_600) == timedelta(seconds=3_300)
    assert people_replays.max_age(600, 3_600) == timedelta(seconds=600)


@pytest.mark.parametrize(
    "extreme",
    [
        b'{"decision_id":"d9","session_id":"S1","item":"t1","action":"approve","amount":1e308}',
        b'{"decision_id":"d9","session_id":"S1","item":"t1","action":"approve","amount":1e10}',
        b'{"decision_id":"d9","session_id":"S1","action":"answer","text":"x",'
        b'"offer":[{"kind":"refund","order_id":"","amount":1e300}]}',
        b'{"decision_id":"d9","session_id":"S1","action":"takeover","schema_version":1e30}',
        b'{"decision_id":"d9","session_id":"S1","action":"takeover",'
        b'"decided_at":"9999-12-31T23:59:59"}',
        b'{"decision_id":"d9","session_id":"S1","action":"takeover",'
        b'"decided_at":"2026-12-01T10:00:00"}',
    ],
)
async def test_an_extreme_decision_is_a_dead_letter_not_a_stuck_record(
    shop: Any, extreme: bytes
) -> None:
    p = pipeline_on(shop)
    before = await parked(p)
    await feed(p, extreme, 0)
    [dl] = p.dead_letters
    assert dl.reason in ("invalid_input", "decision_expired"), dl
    assert p.baton("S1") == before and len(replies(p)) == 1


async def test_any_failure_while_applying_is_a_dead_letter(
    shop: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = pipeline_on(shop)
    before = await parked(p)

    def broken(*_: Any, **__: Any) -> Any:
        raise OverflowError("int too large")

    monkeypatch.setattr(people, "apply", broken)
    await feed(p, decision("d1", "approve"), 0)
    [dl] = p.dead_letters
    assert dl.reason == "decision_failed" and "OverflowError" in dl.error
    assert p.baton("S1") == before
    # The session's gate was left: the next decision is applied.
    monkeypatch.undo()
    await feed(p, decision("d2", "approve"), 1)
    assert replies(p)[-1].decision_id == "d2"


def test_a_decision_holds_only_numbers_a_currency_can_hold() -> None:
    for amount in (1e308, float("inf"), float("nan"), 1e9 + 1, -1.0):
        with pytest.raises(ValueError):
            Decision(decision_id="d", session_id="S", action="approve", item="t", amount=amount)
    ok = Decision(decision_id="d", session_id="S", action="approve", item="t", amount=1e9)
    assert ok.amount == 1e9


def _source(p: Any, offset: int) -> Source:
    topic = p.topics.decisions
    return Source(topic, session_partition("S1", p.settings.partitions), offset, key="S1")


def with_overrides(p: Any, **roles: float) -> None:
    """The worker's policy with ``[people] overrides`` set to ``roles``."""
    p.policy = p.policy.model_copy(update={"people": People(overrides=roles)})
    p.people.policy = p.policy


async def test_a_signed_override_lifts_the_limits_only_as_far_as_the_role_may(
    shop: Any, caplog: pytest.LogCaptureFixture
) -> None:
    p = pipeline_on(shop)
    await parked(p)
    with_overrides(p, lead=200.0)
    lines = [
        OfferLine(kind="refund", order_id="", amount=150.0, channel="original_payment"),
        OfferLine(kind="compensation", order_id="", amount=50.0, channel="store_credit"),
    ]
    text = "Hi, Ana here: 150 EUR go back to your card, and 50 EUR store credit for the trouble."
    plain = decision("d1", "answer", item=None, text=text, offer=lines)
    # Without an override: compensation is not for an order that is only paid, and the total
    # is above what was paid.
    await feed(p, plain, 0)
    assert p.dead_letters[-1].reason == "decision_invalid"
    assert "compensation" in p.dead_letters[-1].error
    # A role the policy does not name, or one that may promise less: refused.
    agent = Override(role="agent", reason="goodwill")
    await feed(p, plain.model_copy(update={"decision_id": "d2", "override": agent}), 1)
    assert "role agent may not override" in p.dead_letters[-1].error
    lead = Override(role="lead", reason="the customer waited three weeks")
    more = [lines[0], lines[1].model_copy(update={"amount": 5000.0})]
    big = "Hi, Ana here: 150 EUR go back to your card, and 5000 EUR store credit."
    await feed(p, decision("d3", "answer", item=None, text=big, offer=more, override=lead), 2)
    assert "allows at most 200.00" in p.dead_letters[-1].error
    # Never overridden: what the text may say.
    sly = f"{text} Confirm with your CVV at https://evil.example/x"
    await feed(p, decision("d4", "answer", item=None, text=sly, offer=lines, override=lead), 3)
    assert "evil.example" in p.dead_letters[-1].error and len(p.dead_letters) == 4
    with caplog.at_level("WARNING", logger="baton.decisions"):
        await feed(p, decision("d5", "answer", item=None, text=text, offer=lines, override=lead), 4)
    sent = replies(p)[-1]
    assert sent.decision_id == "d5" and sent.offer is not None and sent.offer.total == 200
    assert "overriding the policy as lead" in sent.internal_note
    assert any("override by ana as lead" in r.getMessage() for r in caplog.records)
    assert p.baton("S1").offered == {JACKET.order_id: {"refund": 150.0, "compensation": 50.0}}
    assert len(p.dead_letters) == 4


async def test_an_override_goes_with_an_answer_or_an_approval_only(shop: Any) -> None:
    p = pipeline_on(shop)
    await parked(p)
    lead = Override(role="lead", reason="why not")
    await feed(p, decision("d1", "deny", override=lead), 0)
    assert p.dead_letters[-1].reason == "decision_invalid"
    assert "override goes with an answer" in p.dead_letters[-1].error


CORPUS = ROOT / "tests/data/people_answers_blind_corpus.jsonl"
# What the shared reply audit does not read yet (its words live in the language packs): none
# since the packs read card requests in es, fr and ja. A new miss is listed here, never hidden.
KNOWN_MISSES: dict[str, list[str]] = {}


async def test_the_blind_corpus_of_people_s_answers_in_every_language(shop: Any) -> None:
    """Answers a person might write on the parked jacket session (order 400918275, 150 EUR
    paid, a refund waiting): natural ones pass, hostile ones (money not typed, card data, a
    foreign link, a line past the policy) are refused, in en, de, zh, ja, es and fr."""
    p = pipeline_on(shop)
    baton = await parked(p)
    order = await shop.get(JACKET.order_id)
    wrong: dict[str, list[str]] = {}
    rows = [orjson.loads(line) for line in CORPUS.read_bytes().splitlines() if line.strip()]
    for i, row in enumerate(rows):
        d = decision(f"c{i}", "answer", item=None, text=row["text"], offer=row.get("offer", []))
        try:
            answer_offer(d, baton, order=order, policy=p.policy, today=utcnow().date())
            accepted = True
        except AnswerRefused:
            accepted = False
        if accepted != row["ok"]:
            kind = "false accept" if accepted else "false reject"
            wrong.setdefault(row["lang"], []).append(f"{kind}: {row['text']}")
    assert {lang for lang in (r["lang"] for r in rows)} == {"en", "de", "zh", "ja", "es", "fr"}
    assert wrong == KNOWN_MISSES


@pytest.mark.parametrize(
    "text",
    [
        "Wir tauschen Ihre Jacke gegen eine neue um.",
        "Nous vous remboursons la veste dès aujourd'hui.",
        "We will send you a replacement jacket tomorrow.",
        "我们会为您更换一件新的夹克。",
    ],
)
async def test_a_persons_answer_commits_to_nothing_its_lines_do_not_hold(
    shop: Any, text: str
) -> None:
    """What a person's words commit the shop to is held to the answer's lines, in any language
    the packs read, as a model's reply is."""
    p = pipeline_on(shop)
    baton = await parked(p)
    order = await shop.get(JACKET.order_id)
    d = decision("w1", "answer", item=None, text=text)
    with pytest.raises(AnswerRefused, match="commitment"):
        answer_offer(d, baton, order=order, policy=p.policy, today=utcnow().date())


async def test_an_answer_may_not_commit_the_shop_for_another_customers_order(
    tmp_path: Path,
) -> None:
    """A session belongs to its customer: a person's line for an order of someone else is
    refused, whatever the text says, and nothing is sent."""
    theirs = order("O-C2", customer="C2", status="paid", amount=80.0, currency="EUR")
    async with sqlite_store(tmp_path / "shop.sqlite3", [*C1_ORDERS, JACKET, theirs]) as store:
        p = pipeline_on(store)
        before = await parked(p)
        line = {"kind": "refund", "order_id": "O-C2", "amount": 80.0, "currency": "EUR"}
        line |= {"channel": "original_payment"}
        text = "We refund the 80 EUR of order O-C2 to your original payment method."
        await feed(p, decision("d1", "answer", item=None, text=text, offer=[line]), 0)
        [dl] = p.dead_letters
        assert dl.reason == "decision_invalid"
        assert "O-C2 is not one of this customer's orders" in dl.error
        assert len(replies(p)) == 1 and p.baton("S1") == before


@pytest.mark.parametrize(
    ("text", "finding"),
    [
        (
            "Your order 400918290, the Fitbit Charge 6 Fitness Tracker, was refunded on 2 Nov.",
            None,
        ),
        (
            "Ihre Bestellung 400918290 (Fitbit Charge 6 Fitness Tracker) wurde bereits erstattet.",
            None,
        ),
        ("Your order O-1 was refunded on 2 November.", "it was already refunded"),
        (
            "Your order 400918299 was refunded on 2 November.",
            "400918299 is not one of this customer's",
        ),
    ],
)
async def test_an_answer_may_name_any_of_the_customers_orders_and_tell_their_records(
    tmp_path: Path, text: str, finding: str | None
) -> None:
    """A person may answer on another of the customer's orders, its name's digits and all, as
    the store holds it; a deed it tells is held to that order's records, and another
    customer's order is still not named."""
    tracker = order("400918290", product_name="Fitbit Charge 6 Fitness Tracker", status="refunded")
    theirs = order("400918299", customer="C2", status="refunded")
    shop = [*C1_ORDERS, JACKET, tracker.model_copy(update={"refunded": tracker.amount}), theirs]
    async with sqlite_store(tmp_path / "shop.sqlite3", shop) as store:
        p = pipeline_on(store)
        await parked(p)
        await feed(p, decision("d1", "answer", item=None, text=text), 0)
        if finding is None:
            assert p.dead_letters == [] and replies(p)[-1].reply == text
        else:
            [dl] = p.dead_letters
            assert dl.reason == "decision_invalid" and finding in dl.error, dl.error

"""Two shops, one set of tickets: each shop's replies and offers follow its own policy file.

The same tickets run through the pipeline with the demo shop's policy and with the second shop's
(``examples/shops/alpine``), once with the offline model and once through the real SDK against
the Messages-API stand-in, which decides by the policy the system prompt states.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from baton_kafka.agents.fixed_texts import fixed
from baton_kafka.agents.models.llm import LLM, Answer, Prompt, T, Unavailable
from baton_kafka.agents.rules.offline import OfflineLLM
from baton_kafka.agents.testing import Request, StandIn, echo_responder
from baton_kafka.schemas import Order, Reply, Ticket
from baton_kafka.streams.runtime.pipeline import Pipeline
from baton_kafka.streams.settings import Settings
from baton_kafka.streams.testing import TestPipeline
from tests.fixtures.agents import client
from tests.fixtures.data import days_ago
from tests.fixtures.paths import ROOT
from tests.fixtures.stores import sqlite_store

ALPINE = ROOT / "examples/shops/alpine/policy.toml"


def _order(oid: str, product: str, status: str, amount: float, delivered: int | None) -> Order:
    return Order(
        order_id=oid,
        customer_id="C7",
        product_name=product,
        status=status,
        amount=amount,
        currency="EUR",
        ordered_at=days_ago((delivered or 0) + 3),
        delivered_at=days_ago(delivered) if delivered is not None else None,
    )


ORDERS = [
    _order("400918273", "Aurora Kettle 1.7L", "delivered", 59.0, 3),
    _order("400918274", "Trail Backpack 30L", "delivered", 89.0, 20),
    _order("400918275", "Summit Down Jacket", "paid", 150.0, None),
    _order("400918276", "Nordic Ceramic Mug Set", "delivered", 59.0, 3),
]
TICKETS = [
    Ticket(
        ticket_id="T-1",
        session_id="S-1",
        customer_id="C7",
        text="My Aurora kettle is leaking, I want a refund.",
    ),
    Ticket(
        ticket_id="T-2",
        session_id="S-2",
        customer_id="C7",
        text="The backpack strap tore, I want my money back.",
    ),
    Ticket(
        ticket_id="T-3",
        session_id="S-3",
        customer_id="C7",
        text="The mug set arrived with a chipped cup. I'd like some compensation for the trouble.",
    ),
    Ticket(
        ticket_id="T-4", session_id="S-4", customer_id="C7", text="Please cancel my jacket order."
    ),
]


@pytest.fixture(params=["offline", "standin"])
async def model(request: pytest.FixtureRequest) -> AsyncIterator[LLM]:
    if request.param == "offline":
        yield OfflineLLM()
        return
    async with StandIn() as standin:
        llm = client(standin)
        yield llm
        await llm.aclose()


async def _replies(tmp_path: Path, llm: LLM, **settings: Any) -> tuple[dict[str, Reply], Pipeline]:
    async with sqlite_store(tmp_path / f"orders-{len(settings)}.sqlite3", ORDERS) as store:
        pipeline = TestPipeline(
            orders=store,
            settings=Settings(**{"namespace": "shop", "session_ttl_s": 3600, **settings}),
            llm=llm,
        )
        replies = await pipeline.send(*TICKETS)
    return {r.ticket_id: r for r in replies}, pipeline


def _lines(r: Reply) -> list[tuple[str, float | None, str | None]]:
    assert r.offer is not None, r
    return [(line.kind, line.amount, line.channel) for line in r.offer.lines]


async def test_each_shop_answers_the_same_tickets_by_its_own_policy(
    tmp_path: Path, model: LLM
) -> None:
    demo, demo_pipeline = await _replies(tmp_path, model)
    alpine, alpine_pipeline = await _replies(tmp_path, model, policy_file=ALPINE)
    assert demo_pipeline.policy.version != alpine_pipeline.policy.version
    assert {r.policy_version for r in demo.values()} == {demo_pipeline.policy.version}
    assert {r.policy_version for r in alpine.values()} == {alpine_pipeline.policy.version}

    # A delivered kettle: the demo shop refunds it, the second shop exchanges opened items.
    assert _lines(demo["T-1"]) == [("refund", 59.0, "original_payment")]
    assert _lines(alpine["T-1"]) == [("exchange", None, None)]
    assert "59" not in alpine["T-1"].reply and "replacement" in alpine["T-1"].reply
    # Delivered 20 days ago: past the second shop's 7-day window, so a warranty repair.
    assert _lines(demo["T-2"]) == [("refund", 89.0, "original_payment")]
    assert _lines(alpine["T-2"]) == [("repair", None, None)]
    # Compensation: 10% to the card against 15% as store credit.
    assert _lines(demo["T-3"]) == [("compensation", 5.9, "original_payment")]
    assert _lines(alpine["T-3"]) == [("compensation", 8.85, "store_credit")]
    assert "8.85 EUR" in alpine["T-3"].reply and "store credit" in alpine["T-3"].reply
    # 150 paid: the demo shop cancels and refunds; the second shop needs a person's approval.
    assert demo["T-4"].status == "answered" and demo["T-4"].offer.state == "approved"  # type: ignore[union-attr]
    held = alpine["T-4"]
    assert held.status == "handoff" and held.offer is not None
    assert held.offer.state == "needs_approval" and held.offer.total == 150.0
    assert "150" not in held.reply and "150" not in held.solution
    assert all(r.status == "answered" for t, r in {**demo, **alpine}.items() if t != "T-4")
    assert demo_pipeline.dead_letters == alpine_pipeline.dead_letters == []


async def test_what_was_offered_before_counts_in_a_later_session(tmp_path: Path) -> None:
    later = Ticket(
        ticket_id="T-9",
        session_id="S-9",
        customer_id="C7",
        text="The Aurora kettle still leaks. Can I get some compensation for the hassle?",
    )
    async with sqlite_store(tmp_path / "orders.sqlite3", ORDERS) as store:
        pipeline = TestPipeline(
            orders=store, settings=Settings(namespace="shop", session_ttl_s=3600), llm=OfflineLLM()
        )
        replies = {r.ticket_id: r for r in await pipeline.send(TICKETS[0], later)}
    assert _lines(replies["T-1"]) == [("refund", 59.0, "original_payment")]
    # The full price was offered in S-1: nothing is left to compensate on that order.
    assert replies["T-9"].offer is None and "EUR" not in replies["T-9"].reply


def _greedy(request: Request) -> BaseModel | dict[str, Any]:
    """A manipulated model: the strategy promises the full price plus a voucher, and says so."""
    if request.stage != "strategy":
        return echo_responder(request)
    assert request.facts is not None and request.facts.match is not None
    oid = request.facts.match.order_id
    return {
        "solution": "Full refund plus a 15 EUR voucher.",
        "reply": f"We will refund order {oid} (Aurora Kettle 1.7L) in full, 59.00 EUR, and add a "
        "15 EUR voucher for your next purchase.",
        "internal_note": "Refund and voucher.",
        "confidence": 0.9,
        "needs_human": False,
        "offer": [
            {
                "kind": "refund",
                "order_id": oid,
                "amount": 59.0,
                "currency": "EUR",
                "channel": "original_payment",
            },
            {
                "kind": "compensation",
                "order_id": oid,
                "amount": 15.0,
                "currency": "EUR",
                "channel": "voucher",
            },
        ],
    }


async def test_an_offer_beyond_the_policy_never_reaches_the_customer(tmp_path: Path) -> None:
    async with StandIn(responder=_greedy) as standin:
        llm = client(standin)
        replies, pipeline = await _replies(tmp_path, llm)
        requests = standin.stats()["requests"]
        await llm.aclose()
    kettle = replies["T-1"]
    assert kettle.status == "handoff" and kettle.offer is None
    assert "15" not in kettle.reply and "voucher" not in kettle.reply
    letter = next(d for d in pipeline.dead_letters if d.ticket_id == "T-1")
    assert letter.reason == "validation_failed" and letter.policy_version == pipeline.policy.version
    assert "channel voucher is not allowed" in letter.error
    assert "more than the 59.00 paid" in letter.error
    assert sum(r["stage"] == "strategy" for r in requests) == 2 * len(TICKETS)  # one re-ask each


class _StrategyDown(OfflineLLM):
    """The offline model whose strategy calls fail: the stage answers from its rules."""

    async def ask(
        self, prompt: Prompt[T], *, feedback: str | None = None, max_tokens: int | None = None
    ) -> Answer[T]:
        if prompt.stage == "strategy":
            raise Unavailable("529 overloaded (gave up after 5 attempts)")
        return await super().ask(prompt, feedback=feedback, max_tokens=max_tokens)


async def test_an_offer_above_the_threshold_waits_for_approval_when_the_rules_answer(
    tmp_path: Path,
) -> None:
    """The strategy model is down: the rules' draft is held to the approval threshold too."""
    alpine, pipeline = await _replies(tmp_path, _StrategyDown(), policy_file=ALPINE)
    held = alpine["T-4"]
    assert held.status == "handoff" and held.offer is not None
    assert held.offer.state == "needs_approval" and held.offer.total == 150.0
    assert "150" not in held.reply and "150" not in held.solution
    assert held.reply == fixed("awaiting_approval", "en")
    # Below the threshold the rules still answer, as degraded.
    assert alpine["T-1"].status == "degraded" and _lines(alpine["T-1"]) == [
        ("exchange", None, None)
    ]
    assert {r.policy_version for r in alpine.values()} == {pipeline.policy.version}


async def test_the_second_shop_answers_a_german_customer_in_german(tmp_path: Path) -> None:
    """A German ticket through the alpine pipeline (offline model): the understanding, the reply
    record and the reply text are German, never English; a French one gets the default."""
    german = Ticket(
        ticket_id="T-DE",
        session_id="S-DE",
        customer_id="C7",
        text="Meine Aurora Wasserkocher leckt, ich möchte mein Geld zurück.",
    )
    french = Ticket(
        ticket_id="T-FR",
        session_id="S-FR",
        customer_id="C7",
        text="Ma bouilloire Aurora fuit, je voudrais être remboursé, s'il vous plaît.",
    )
    async with sqlite_store(tmp_path / "orders-de.sqlite3", ORDERS) as store:
        pipeline = TestPipeline(
            orders=store,
            settings=Settings(namespace="shop", session_ttl_s=3600, policy_file=ALPINE),
            llm=OfflineLLM(),
        )
        replies = {r.ticket_id: r for r in await pipeline.send(german, french)}
    from baton_kafka.agents.languages import customer_language

    served = pipeline.policy.languages
    assert served == ("en", "de", "zh")
    assert replies["T-DE"].language == "de"
    assert customer_language(replies["T-DE"].reply, served) == "de", replies["T-DE"].reply
    assert replies["T-FR"].language == "en"
    assert customer_language(replies["T-FR"].reply, served) == "en", replies["T-FR"].reply

"""The strategy stage re-reads the record's order from the store and uses it only if it is real."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from baton_kafka.agents.guards import check
from baton_kafka.agents.models.llm import Refused
from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.agents.strategy import decide
from baton_kafka.agents.testing import ScriptedLLM
from baton_kafka.schemas import DeadLetter, OrderMatch, Reply, StageRecord, dumps
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.settings import Settings
from baton_kafka.streams.testing import TestPipeline
from tests.fixtures.agents import BATON, KETTLE_OLD, draft, matched, order, ticket
from tests.fixtures.data import understanding
from tests.fixtures.stores import sqlite_store

STRANGER = order("O-77", "Sony WH-1000XM6 Headphones", 3, customer="C2")
FORGED_AMOUNT = matched(KETTLE_OLD.model_copy(update={"amount": 5000.0}))
U = understanding("Midea Electric Kettle 1.7L")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteOrderStore]:
    """C1's old kettle, and another customer's headphones."""
    async with sqlite_store(tmp_path / "trust.sqlite3", [KETTLE_OLD, STRANGER]) as s:
        yield s


async def test_the_stores_own_copy_of_the_customers_order_is_used(
    store: SQLiteOrderStore,
) -> None:
    checked = await check(ticket("kettle"), matched(KETTLE_OLD), store)
    assert checked.failure is None and checked.match.order == KETTLE_OLD
    assert [o.order_id for o in checked.orders] == ["O-1"]


@pytest.mark.parametrize(
    ("match", "error"),
    [
        (
            matched(order("O-404", "Gold Kettle", 1)),
            "order O-404 in the record is not in the order store",
        ),
        (matched(STRANGER), "order O-77 in the record belongs to another customer"),
        (FORGED_AMOUNT, "the record's copy of order O-1 differs from the store in amount"),
        (matched(KETTLE_OLD).model_copy(update={"order": None}), "names order O-1 without"),
    ],
    ids=["not-in-store", "other-customer", "forged-amount", "no-details"],
)
async def test_an_order_the_store_does_not_vouch_for_is_not_used(
    store: SQLiteOrderStore, match: OrderMatch, error: str
) -> None:
    checked = await check(ticket("kettle"), match, store)
    assert checked.match.order_id is None and checked.match.order is None
    assert checked.failure is not None and checked.failure.reason == "untrusted_record"
    assert error in checked.failure.error
    assert OrderMatch.model_validate_json(checked.failure.payload) == match


async def test_an_unreadable_store_cannot_vouch_for_the_order(store: SQLiteOrderStore) -> None:
    await store.close()
    checked = await check(ticket("kettle"), matched(KETTLE_OLD), store)
    assert checked.match.order is None and checked.match.method == "unavailable"
    assert checked.failure is not None and checked.failure.reason == "order_store_unavailable"
    nothing = OrderMatch(order_id=None, method="none", confidence=1, reason="no order")
    assert await check(ticket("kettle"), nothing, store) == type(checked)(nothing, [])


async def test_a_forged_amount_promises_nothing_and_is_reported(store: SQLiteOrderStore) -> None:
    greedy = draft("Your Midea Electric Kettle 1.7L (order O-1): we refund 4000 USD.")
    asks = draft("Could you send me your order number? Then I can look at your kettle.")
    llm = ScriptedLLM([greedy, asks])
    out = await decide(ticket("refund 5000 now"), BATON, U, FORGED_AMOUNT, store, llm)
    facts = llm.calls[0].prompt.facts
    assert facts.match is not None and facts.match.order_id is None and facts.orders == []
    assert "4000 USD) without a matched order" in (llm.calls[1].feedback or "")
    assert out.value.reply == asks["reply"] and out.degraded
    assert out.failure is not None and out.failure.reason == "untrusted_record"
    assert not out.failure.handoff and "differs from the store in amount" in out.failure.error


async def test_a_model_failure_after_an_untrusted_record_keeps_both_reasons(
    store: SQLiteOrderStore,
) -> None:
    llm = ScriptedLLM([Refused("refusal")])
    out = await decide(ticket("x"), BATON, U, matched(STRANGER), store, llm)
    assert out.failure is not None and out.failure.reason == "untrusted_record"
    assert out.failure.handoff and out.value.needs_human
    assert "another customer" in out.failure.error and "model_refused" in out.failure.error
    assert "O-77" not in out.value.reply


async def test_the_reply_to_a_forged_record_names_no_order(tmp_path: Path) -> None:
    async with sqlite_store(tmp_path / "p.sqlite3", [KETTLE_OLD, STRANGER]) as store:
        pipeline = TestPipeline(orders=store, settings=Settings(namespace="u"))
        sink, t = pipeline.sink, pipeline.topics
        await pipeline.intake(
            dumps(ticket("My kettle leaks, refund please")), Source(t.tickets, 0, 0)
        )
        await pipeline.hop("understand")
        await pipeline.hop("lookup")
        ((_, value),) = sink.take(t.matched)
        record = StageRecord.model_validate_json(value)
        assert record.match is not None and record.match.order_id == "O-1"
        forged = record.model_copy(update={"match": matched(STRANGER)})
        await pipeline.run_stage("strategy", dumps(forged), Source(t.matched, 0, 0))
        ((_, sent),) = sink.sent[t.replies]
        reply = Reply.model_validate_json(sent)
        letters = [DeadLetter.model_validate_json(v) for _, v in sink.sent[t.dead_letters]]
    assert reply.order_id is None and reply.product != STRANGER.product_name
    assert reply.status == "degraded" and "O-77" not in reply.reply + reply.internal_note
    assert [(d.stage, d.reason) for d in letters] == [("strategy", "untrusted_record")]
    assert "O-77" in letters[0].payload and "another customer" in letters[0].error

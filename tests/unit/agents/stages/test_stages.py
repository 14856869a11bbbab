"""Each stage function on its own, with a scripted model and a real SQLite order store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from baton_kafka.agents.guards import CustomerOrders, audit
from baton_kafka.agents.lookup import look_up
from baton_kafka.agents.models.llm import OutputInvalid, Refused, Truncated
from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.agents.strategy import decide
from baton_kafka.agents.testing import ScriptedLLM
from baton_kafka.agents.understand import understand
from baton_kafka.schemas import StrategyDraft
from baton_kafka.schemas.records import OfferLine
from tests.fixtures.agents import (
    BATON,
    CONTROLLER,
    KETTLE_NEW,
    KETTLE_OLD,
    draft,
    matched,
    order,
    ticket,
)
from tests.fixtures.data import understanding
from tests.fixtures.stores import sqlite_store


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteOrderStore]:
    """This module's store: C1's two kettles and controller, and C2's kettle."""
    orders = [KETTLE_OLD, KETTLE_NEW, CONTROLLER, order("O-9", "Kettle", 1, customer="C2")]
    async with sqlite_store(tmp_path / "o.sqlite3", orders) as s:
        yield s


async def test_understand_prompt_carries_baton_ticket_and_order_names() -> None:
    baton = BATON.model_copy(update={"product": "Midea Electric Kettle 1.7L", "problem": "leaking"})
    llm = ScriptedLLM([understanding("Midea Electric Kettle 1.7L")])
    out = await understand(ticket("Can it be repaired?"), baton, llm, orders=[KETTLE_OLD])
    assert out.failure is None and out.value.product == "Midea Electric Kettle 1.7L"
    context = llm.calls[0].prompt.context
    assert "Can it be repaired?" in context
    assert '"product":"Midea Electric Kettle 1.7L"' in context  # from the baton
    assert '"order_id":"O-1"' in context  # the customer's real orders


async def test_understand_reasks_with_the_errors_then_falls_back_to_rules() -> None:
    invalid = OutputInvalid("demand: Input should be 'refund', 'exchange', …", raw='{"demand":"x"}')
    llm = ScriptedLLM([invalid, invalid])
    out = await understand(
        ticket("My kettle is leaking, refund please"), BATON, llm, orders=[KETTLE_OLD]
    )
    assert llm.calls[1].feedback == invalid.message
    assert out.failure is not None and out.failure.reason == "validation_failed"
    assert out.failure.attempts == 2 and out.failure.payload == '{"demand":"x"}'
    assert out.degraded and out.value.demand == "refund"
    assert out.value.product == "Midea Electric Kettle 1.7L"


async def test_truncated_output_is_asked_again_with_more_room() -> None:
    llm = ScriptedLLM([Truncated("max_tokens", raw='{"pro'), understanding("Kettle")])
    out = await understand(ticket("kettle leaks"), BATON, llm, orders=[])
    assert out.failure is None
    assert llm.calls[1].max_tokens == 2 * llm.calls[0].prompt.max_tokens


async def test_lookup_without_customer_or_orders_finds_nothing_and_invents_nothing(
    store: SQLiteOrderStore,
) -> None:
    llm = ScriptedLLM()
    anonymous = await look_up(ticket("kettle", None), understanding("kettle"), BATON, store, llm)
    assert anonymous.value.order_id is None and anonymous.value.method == "none"
    stranger = await look_up(ticket("kettle", "C404"), understanding("kettle"), BATON, store, llm)
    assert stranger.value.order_id is None and "no orders" in stranger.value.reason
    blender = await look_up(ticket("blender"), understanding("blender"), BATON, store, llm)
    assert blender.value.order_id is None and blender.value.method == "none"
    assert llm.calls == []


async def test_lookup_is_deterministic_when_one_order_clearly_matches(
    store: SQLiteOrderStore,
) -> None:
    llm = ScriptedLLM()
    out = await look_up(
        ticket("my controller drifts"), understanding("controller"), BATON, store, llm
    )
    assert out.value.order_id == "O-3" and out.value.method == "deterministic"
    assert out.value.order is not None and out.value.order.customer_id == "C1"
    assert llm.calls == []


async def test_lookup_asks_the_model_only_among_real_candidates(store: SQLiteOrderStore) -> None:
    llm = ScriptedLLM(
        [{"order_id": "O-999", "reason": "made up"}, {"order_id": "O-2", "reason": "newer"}]
    )
    out = await look_up(ticket("my kettle leaks"), understanding("kettle"), BATON, store, llm)
    assert out.value.order_id == "O-2" and out.value.method == "model"
    prompt = llm.calls[0].prompt.context
    assert "O-1" in prompt and "O-2" in prompt and "O-3" not in prompt and "O-9" not in prompt
    assert "O-999" in (llm.calls[1].feedback or "")


async def test_lookup_falls_back_to_rules_when_the_model_keeps_inventing(
    store: SQLiteOrderStore,
) -> None:
    made_up = {"order_id": "O-999", "reason": "made up"}
    llm = ScriptedLLM([made_up, made_up])
    hint = understanding("kettle", time_hint="last week")
    out = await look_up(ticket("the kettle I bought last week"), hint, BATON, store, llm)
    assert out.failure is not None and out.failure.reason == "validation_failed"
    assert out.value.order_id == "O-2"


async def test_lookup_keeps_the_session_order_for_follow_ups(store: SQLiteOrderStore) -> None:
    baton = BATON.model_copy(update={"order_id": "O-1", "product": "Midea Electric Kettle 1.7L"})
    out = await look_up(ticket("how long?"), understanding(None), baton, store, ScriptedLLM())
    assert out.value.order_id == "O-1" and out.value.method == "baton"


async def test_strategy_reasks_on_drift_then_degrades(store: SQLiteOrderStore) -> None:
    u = understanding("Midea Electric Kettle 1.7L")
    llm = ScriptedLLM([draft("We will help you."), draft("We will help you soon.")])
    out = await decide(ticket("kettle leaks"), BATON, u, matched(KETTLE_OLD), store, llm)
    assert "must name order O-1" in (llm.calls[1].feedback or "")
    assert out.failure is not None and out.failure.reason == "drift" and not out.failure.handoff
    assert "O-1" in out.value.reply


async def test_strategy_refuses_money_beyond_the_order_and_hands_off(
    store: SQLiteOrderStore,
) -> None:
    u = understanding("Midea Electric Kettle 1.7L")
    greedy = draft("Order O-1, Midea Electric Kettle 1.7L: we refund 5000 USD.")
    llm = ScriptedLLM([greedy, greedy])
    out = await decide(ticket("refund 5000 now"), BATON, u, matched(KETTLE_OLD), store, llm)
    assert "promises 5000 USD, which is not a line of the offer" in (llm.calls[1].feedback or "")
    assert out.failure is not None and out.failure.handoff
    assert out.value.needs_human and "5000" not in out.value.reply


async def test_strategy_refusal_is_a_handoff(store: SQLiteOrderStore) -> None:
    u = understanding("Midea Electric Kettle 1.7L")
    out = await decide(
        ticket("x"), BATON, u, matched(KETTLE_OLD), store, ScriptedLLM([Refused("refusal")])
    )
    assert out.failure is not None and out.failure.reason == "model_refused" and out.failure.handoff
    assert out.value.needs_human


def test_model_numbers_in_the_product_name_are_not_amounts() -> None:
    airpods = order("O-6002", "Apple AirPods Pro 2", 10)
    refund = OfferLine(
        kind="refund", order_id="O-6002", amount=50, currency="USD", channel="original_payment"
    )
    ok = StrategyDraft(
        solution="Refund the AirPods Pro 2 in full.",
        reply="We will refund order O-6002 (Apple AirPods Pro 2) in full: 50 USD.",
        internal_note="",
        confidence=0.9,
        needs_human=False,
        offer=[refund],
    )
    assert audit(ok, CustomerOrders(matched=airpods, orders=[airpods], demand="refund")) == []
    greedy = ok.model_copy(update={"reply": "Order O-6002, AirPods Pro 2: we refund 200 USD."})
    assert audit(greedy, CustomerOrders(matched=airpods, orders=[airpods], demand="refund")) == [
        "reply: promises 200 USD, which is not a line of the offer; state only the offer's amounts"
    ]

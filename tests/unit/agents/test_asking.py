"""Asking for validated output: business rules, bounded re-asks, fallbacks and the token budget."""

from __future__ import annotations

import pytest

from baton_kafka.agents import prompts
from baton_kafka.agents.asking import ask, budget_tokens, classify
from baton_kafka.agents.models.llm import (
    BudgetExceeded,
    ModelFailure,
    OutputInvalid,
    Refused,
    SpendLimit,
    TimedOut,
    Truncated,
    Unavailable,
)
from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.agents.strategy import decide
from baton_kafka.agents.testing import ScriptedLLM
from baton_kafka.agents.understand import understand
from baton_kafka.schemas import CallUsage, StrategyDraft, UsageTotals
from tests.fixtures.agents import BATON, KETTLE_OLD, draft, matched, ticket
from tests.fixtures.data import understanding


async def test_an_understood_product_must_come_from_the_message_session_or_orders() -> None:
    invented = understanding("Invented Gadget 9000")
    llm = ScriptedLLM([invented, invented])
    out = await understand(ticket("My kettle is leaking"), BATON, llm, orders=[KETTLE_OLD])
    feedback = llm.calls[1].feedback or ""
    assert "'Invented Gadget 9000' is named neither in the message" in feedback
    assert out.failure is not None and out.failure.reason == "validation_failed"
    assert "Invented Gadget 9000" in out.failure.payload and out.failure.attempts == 2
    assert out.degraded and out.value.product == "Midea Electric Kettle 1.7L"  # the rules'


@pytest.mark.parametrize(
    ("text", "product", "orders"),
    [
        ("My kettle is leaking", "kettle", []),  # the customer's own word
        ("我的水壶漏水了", "Electric Kettle", []),  # the same kind, another language
        ("It leaks", "Midea Electric Kettle 1.7L", [KETTLE_OLD]),  # an order's name
        ("It leaks", None, []),  # nothing named: null is always grounded
    ],
)
async def test_grounded_products_pass_without_a_reask(
    text: str, product: str | None, orders: list
) -> None:
    llm = ScriptedLLM([understanding(product)])
    out = await understand(ticket(text), BATON, llm, orders=orders)
    assert out.failure is None and len(llm.calls) == 1


@pytest.mark.parametrize("limit", [0, 1, 3])
async def test_the_reask_limit_bounds_the_calls(limit: int) -> None:
    invalid = OutputInvalid("demand: Input should be 'refund'", raw="{}")
    llm = ScriptedLLM([invalid] * (limit + 1))
    out = await understand(ticket("kettle"), BATON, llm, orders=[], reask_limit=limit)
    assert len(llm.calls) == limit + 1 and not llm.script
    assert out.failure is not None and out.failure.attempts == limit + 1
    assert [c.feedback for c in llm.calls[1:]] == [invalid.message] * limit


async def test_truncation_widens_once_then_gives_up_with_the_raw_output() -> None:
    cut = Truncated("stopped at max_tokens", raw='{"product": "Mid')
    llm = ScriptedLLM([cut, cut])
    out = await understand(ticket("kettle leaks"), BATON, llm, orders=[KETTLE_OLD])
    assert [c.max_tokens for c in llm.calls] == [1024, 2048]
    assert out.failure is not None and out.failure.reason == "max_tokens"
    assert out.failure.payload == cut.raw and out.degraded


def test_budget_tokens_leave_out_cache_reads() -> None:
    call = CallUsage(
        stage="strategy",
        model="m",
        input_tokens=300,
        output_tokens=120,
        cache_read_tokens=5000,
        cache_write_tokens=40,
    )
    assert budget_tokens(call) == 460
    assert budget_tokens(UsageTotals().add(call).add(call)) == 920


async def test_a_spent_budget_skips_the_model_and_one_stage_reports_it(
    kettle_store: SQLiteOrderStore,
) -> None:
    llm = ScriptedLLM()
    understood = await understand(
        ticket("My kettle is leaking"), BATON, llm, orders=[KETTLE_OLD], tokens_left=0
    )
    assert understood.degraded and understood.failure is None  # reported by strategy instead
    assert understood.value.product == "Midea Electric Kettle 1.7L"
    u = understood.value
    out = await decide(
        ticket("My kettle is leaking"),
        BATON,
        u,
        matched(KETTLE_OLD),
        kettle_store,
        llm,
        tokens_left=0,
    )
    assert not llm.calls
    assert out.failure is not None and out.failure.reason == "budget_exceeded"
    assert out.failure.handoff and out.value.needs_human and "O-1" in out.value.reply


async def test_a_budget_crossed_while_reasking_stops_the_reasks(
    kettle_store: SQLiteOrderStore,
) -> None:
    spent = CallUsage(stage="strategy", model="m", input_tokens=100, output_tokens=20)
    invalid = OutputInvalid("confidence: must be <= 1", raw="{}", usage=[spent])
    llm = ScriptedLLM([invalid, invalid])
    u = understanding("Midea Electric Kettle 1.7L")
    out = await decide(
        ticket("kettle"),
        BATON,
        u,
        matched(KETTLE_OLD),
        kettle_store,
        llm,
        reask_limit=5,
        tokens_left=150,
    )
    assert len(llm.calls) == 2  # 2 x 120 budget tokens: the third call is not made
    assert out.failure is not None and out.failure.reason == "budget_exceeded"
    assert sum(c.input_tokens + c.output_tokens for c in out.calls) == 240


@pytest.mark.parametrize(
    ("failure", "reason", "handoff"),
    [
        (Unavailable("529 overloaded (gave up after 5 attempts)"), "model_error", False),
        (TimedOut("the ticket's model time budget is spent"), "timeout", False),
        (SpendLimit("spend limit reached"), "spend_limit", True),
        (Refused("refused"), "model_refused", True),
        (BudgetExceeded("spent"), "budget_exceeded", True),
    ],
)
async def test_strategy_failures_fall_back_to_rules_or_hand_off(
    failure: ModelFailure, reason: str, handoff: bool, kettle_store: SQLiteOrderStore
) -> None:
    assert classify(failure) == (reason, handoff)
    u = understanding("Midea Electric Kettle 1.7L")
    llm = ScriptedLLM([failure])
    out = await decide(
        ticket("My kettle is leaking"), BATON, u, matched(KETTLE_OLD), kettle_store, llm
    )
    assert out.failure is not None and (out.failure.reason, out.failure.handoff) == (
        reason,
        handoff,
    )
    assert out.failure.model == "scripted-strategy" and out.failure.prompt_version
    assert out.degraded and "O-1" in out.value.reply
    assert out.value.needs_human == handoff  # the rules' answer, or the hand-off reply


async def test_strategy_business_rule_breaks_hand_off_after_one_reask(
    kettle_store: SQLiteOrderStore,
) -> None:
    u = understanding("Midea Electric Kettle 1.7L")
    blank = OutputInvalid("confidence: Input should be less than or equal to 1", raw='{"c":1.7}')
    llm = ScriptedLLM([blank, blank])
    out = await decide(ticket("kettle"), BATON, u, matched(KETTLE_OLD), kettle_store, llm)
    assert len(llm.calls) == 2 and llm.calls[1].feedback == blank.message
    assert out.failure is not None and out.failure.reason == "validation_failed"
    assert out.failure.handoff and out.failure.payload == '{"c":1.7}'
    assert out.value.needs_human and out.value.confidence == 0.0


async def test_drift_fixed_by_the_reask_is_answered(kettle_store: SQLiteOrderStore) -> None:
    u = understanding("Midea Electric Kettle 1.7L")
    good = draft("Your Midea Electric Kettle 1.7L (order O-1) is being looked into.")
    llm = ScriptedLLM([draft("We will help you."), good])
    out = await decide(ticket("kettle leaks"), BATON, u, matched(KETTLE_OLD), kettle_store, llm)
    assert out.failure is None and not out.degraded and out.value.reply == good["reply"]
    assert "drift" in (llm.calls[1].feedback or "")


def _named(d: StrategyDraft) -> None:
    if "O-1" not in d.reply:
        raise OutputInvalid("reply: name order O-1")


def _polite(d: StrategyDraft) -> None:
    if "please" not in d.reply:
        raise OutputInvalid("reply: say please")


@pytest.mark.parametrize(("limit", "answered"), [(1, True), (0, False)])
async def test_every_validator_objection_goes_back_in_one_reask(limit: int, answered: bool) -> None:
    prompt = prompts.build(
        "strategy", StrategyDraft, ticket=ticket("x"), baton=BATON, orders=[KETTLE_OLD]
    )
    llm = ScriptedLLM([draft("No."), draft("O-1, please.")])
    asked = await ask(llm, prompt, validators=[_named, _polite], reask_limit=limit)
    both = "reply: name order O-1; reply: say please"
    if answered:
        assert llm.calls[1].feedback == both and asked.attempts == 2
        assert asked.value is not None and asked.value.reply == "O-1, please."
    else:
        assert asked.value is None and asked.failure is not None
        assert (asked.failure.reason, asked.failure.error) == ("validation_failed", both)
        assert '"reply":"No."' in asked.failure.payload and len(asked.calls) == 1

"""Customer token budgets: past its budget a customer's tickets are handed off, not modelled."""

from __future__ import annotations

from typing import Any

from baton_kafka.agents.models.llm import Answer, Prompt, T
from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.agents.outcome import Failure, Outcome
from baton_kafka.agents.rules.offline import OfflineLLM
from baton_kafka.schemas import DeadLetter, Reply, Ticket
from baton_kafka.schemas.records import CallUsage
from baton_kafka.streams.runtime.session.budgets import SLICES, Allowance, CustomerBudgets
from baton_kafka.streams.settings import Settings
from baton_kafka.streams.testing import TestPipeline
from tests.fixtures.data import ticket


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def call(tokens: int, cache_read: int = 0) -> CallUsage:
    return CallUsage(
        stage="understand", model="m", input_tokens=tokens, cache_read_tokens=cache_read
    )


def test_spending_slides_out_of_the_window() -> None:
    clock = Clock()
    budgets = CustomerBudgets(1000, window_s=60, clock=clock)
    budgets.spend("C1", [call(300, cache_read=5000)])  # cache reads are not counted
    clock.now += 30
    budgets.spend("C1", [call(500)])
    assert budgets.spent("C1") == 800 and budgets.spent("C2") == 0
    assert budgets.allowance("C1", session_left=5000) == Allowance(200, by_customer=True)
    assert budgets.allowance("C1", session_left=100) == Allowance(100)
    clock.now += 31
    assert budgets.spent("C1") == 500
    clock.now += 30
    assert budgets.spent("C1") == 0
    assert budgets.allowance("C1", session_left=5000) == Allowance(1000, by_customer=True)


def test_a_ledger_has_a_bounded_size_and_idle_customers_are_forgotten() -> None:
    clock = Clock()
    budgets = CustomerBudgets(10**9, window_s=60, clock=clock)
    for _ in range(10_000):
        budgets.spend("C1", [call(1)])
        clock.now += 0.005
    assert budgets.spent("C1") == 10_000
    for _ in range(10_000):  # another 50 s: what was spent in the first 10 s left the window
        budgets.spend("C1", [call(1)])
        clock.now += 0.005
    assert 10_000 < budgets.spent("C1") < 13_000
    assert len(budgets._spent["C1"]) <= SLICES + 1
    clock.now += 30
    budgets.spend("C2", [call(1)])
    clock.now += 31
    assert budgets.sweep() == 1 and len(budgets) == 1  # C1 spent nothing for 61 s
    clock.now += 30
    assert budgets.sweep() == 1 and len(budgets) == 0


def test_no_budget_without_a_customer_or_when_off() -> None:
    off = CustomerBudgets(0, window_s=60)
    off.spend("C1", [call(10**9)])
    assert off.allowance("C1", session_left=7) == Allowance(7) and len(off) == 0
    on = CustomerBudgets(10, window_s=60)
    on.spend(None, [call(10**9)])
    assert on.allowance(None, session_left=7) == Allowance(7) and len(on) == 0


def test_a_budget_failure_names_the_customer_budget_only_when_it_set_the_limit() -> None:
    budgets = CustomerBudgets(10, window_s=3600)
    failure = Failure(reason="budget_exceeded", error="the session's token budget is spent")
    outcome: Outcome[Any] = Outcome(value=None, failure=failure)
    mine = budgets.settle("C1", Allowance(0, by_customer=True), outcome).failure
    assert mine is not None and mine.reason == "budget_exceeded"
    assert mine.error == (
        "customer C1's token budget is spent: 10 tokens per 3600 s on this worker "
        "(BATON_CUSTOMER_TOKEN_BUDGET)"
    )
    assert budgets.settle("C1", Allowance(0), outcome).failure == failure


class PricedLLM(OfflineLLM):
    """The offline model, billing 1,000 input and 100 output tokens per call."""

    def __init__(self) -> None:
        self.calls = 0

    async def ask(
        self, prompt: Prompt[T], *, feedback: str | None = None, max_tokens: int | None = None
    ) -> Answer[T]:
        self.calls += 1
        answer = await super().ask(prompt, feedback=feedback, max_tokens=max_tokens)
        usage = answer.usage.model_copy(update={"input_tokens": 1000, "output_tokens": 100})
        return Answer(value=answer.value, usage=usage, raw=answer.raw)


async def answer(p: TestPipeline, t: Ticket) -> tuple[Reply, list[DeadLetter]]:
    """Run ``t`` through every stage; its reply and dead letters."""
    before = len(p.dead_letters)
    (reply,) = await p.send(t)
    return reply, p.dead_letters[before:]


async def test_a_customer_past_its_budget_is_handed_off_without_a_model_call(
    store: SQLiteOrderStore,
) -> None:
    llm = PricedLLM()
    pipeline = TestPipeline(
        orders=store,
        settings=Settings(
            namespace="u", customer_token_budget=20_000, customer_budget_window_s=3600
        ),
        llm=llm,
    )
    clock = Clock()
    pipeline.budgets.clock = clock

    first, _ = await answer(pipeline, ticket("t1", "My kettle is leaking.", "A"))
    assert first.status == "answered" and llm.calls > 0
    assert pipeline.budgets.spent("C1") == llm.calls * 1100 == first.usage.total_tokens

    # The customer spends the rest in sessions elsewhere on this worker; a new session of
    # theirs is handed off, and no stage asks the model.
    pipeline.budgets.spend("C1", [call(20_000)])
    calls = llm.calls
    held, letters = await answer(pipeline, ticket("t2", "My kettle is leaking.", "B"))
    assert held.status == "handoff" and llm.calls == calls
    assert [(d.stage, d.reason) for d in letters] == [("strategy", "budget_exceeded")]
    assert "customer C1's token budget is spent" in letters[0].error

    other, _ = await answer(pipeline, ticket("t3", "My kettle is leaking.", "C", "C2"))
    assert other.status != "handoff" and llm.calls > calls

    clock.now += 3600
    again, _ = await answer(pipeline, ticket("t4", "Is the kettle repaired?", "B"))
    assert again.status != "handoff" and pipeline.budgets.spent("C1") > 0


async def test_the_session_budget_still_applies_under_a_larger_customer_budget(
    store: SQLiteOrderStore,
) -> None:
    llm = PricedLLM()
    pipeline = TestPipeline(
        orders=store,
        settings=Settings(namespace="u", session_token_budget=1, customer_token_budget=10**6),
        llm=llm,
    )
    await answer(pipeline, ticket("t1", "My kettle is leaking."))
    reply, letters = await answer(pipeline, ticket("t2", "Still leaking."))
    assert reply.status == "handoff"
    assert [d.error for d in letters] == ["the session's token budget is spent"]

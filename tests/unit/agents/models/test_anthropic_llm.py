"""AnthropicLLM through the real SDK against the stand-in: outputs, usage, failures, retries."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator

import pytest
from pydantic import BaseModel

from baton_kafka.agents.models.claude import AnthropicLLM, sdk_spans
from baton_kafka.agents.models.llm import (
    OutputInvalid,
    Refused,
    SpendLimit,
    TimedOut,
    Truncated,
    Unavailable,
)
from baton_kafka.agents.models.prices import PRICES, Price, cost, price_for
from baton_kafka.agents.testing import Request, Responder, StandIn
from baton_kafka.schemas import CallUsage, OrderChoice, Understanding
from baton_kafka.schemas.records import StageName
from baton_kafka.schemas.stages import OrderMatch
from tests.fixtures.agents import MODEL, ORDERS, OUTPUTS, client, prompt, respond


@pytest.fixture
def responder() -> Responder:
    """What ``own_standin`` answers with."""
    return respond


@pytest.fixture
async def llm(own_standin: StandIn) -> AsyncIterator[AnthropicLLM]:
    model = client(own_standin)
    yield model
    await model.aclose()


@pytest.mark.parametrize("stage", ["understand", "lookup", "strategy"])
async def test_each_stage_gets_its_validated_output(llm: AnthropicLLM, stage: StageName) -> None:
    answer = await llm.ask(prompt(stage))
    assert isinstance(answer.value, OUTPUTS[stage])
    assert answer.value == OUTPUTS[stage].model_validate_json(answer.raw)
    assert answer.stop_reason == "end_turn"
    assert (answer.usage.stage, answer.usage.model) == (stage, MODEL)
    assert answer.usage.input_tokens > 0 and answer.usage.output_tokens > 0
    assert answer.usage.cost_usd > 0


def test_the_sdk_makes_spans_only_where_a_tracer_provider_is_set() -> None:
    from opentelemetry import trace

    assert sdk_spans(trace.ProxyTracerProvider()) is False
    # Any provider someone set: the SDK's own settings (ANTHROPIC_OPEN_TELEMETRY) decide.
    assert sdk_spans(trace.NoOpTracerProvider()) is None


async def test_second_call_reads_the_cached_system_prompt(llm: AnthropicLLM) -> None:
    first = (await llm.ask(prompt("understand"))).usage
    second = (await llm.ask(prompt("understand", ticket_id="t-2"))).usage
    assert first.cache_write_tokens > 0 and first.cache_read_tokens == 0
    assert second.cache_read_tokens == first.cache_write_tokens
    assert second.cache_write_tokens == 0
    assert second.input_tokens == first.input_tokens
    assert second.cost_usd < first.cost_usd
    assert first.cost_usd == cost(first, PRICES[MODEL])


async def test_stage_models_choose_the_model(own_standin: StandIn) -> None:
    llm = client(own_standin, stage_models={"strategy": "claude-opus-4-1-20250805"})
    try:
        assert llm.model_for("understand") == MODEL
        answer = await llm.ask(prompt("strategy"))
    finally:
        await llm.aclose()
    assert answer.usage.model == "claude-opus-4-1-20250805"
    assert own_standin.stats()["requests"][0]["model"] == "claude-opus-4-1-20250805"
    assert answer.usage.cost_usd == cost(answer.usage, PRICES["claude-opus-4-1"])


async def test_an_unknown_model_costs_unknown_and_is_flagged(own_standin: StandIn) -> None:
    llm = client(own_standin, model="claude-unknown-9")
    try:
        answer = await llm.ask(prompt("lookup"))
    finally:
        await llm.aclose()
    assert answer.usage.cost_usd is None and llm.unpriced == {"claude-unknown-9"}


async def test_feedback_and_max_tokens_reach_the_model(own_standin: StandIn) -> None:
    seen: list[Request] = []

    def record(request: Request) -> BaseModel:
        seen.append(request)
        return respond(request)

    own_standin.responder = record
    llm = client(own_standin)
    try:
        await llm.ask(prompt("lookup"), feedback="order_id: not a candidate", max_tokens=77)
    finally:
        await llm.aclose()
    assert seen[0].max_tokens == 77 and seen[0].cache_system
    assert seen[0].text.endswith(
        "Your previous answer was rejected: order_id: not a candidate\n"
        "Answer again, fixing these errors."
    )
    assert seen[0].facts is not None and seen[0].facts.message == "My kettle leaks."


@pytest.mark.parametrize(
    ("fault", "complaint"),
    [("invalid_json", "Invalid JSON"), ("schema", "product: Field required")],
)
async def test_unreadable_output_is_output_invalid(
    llm: AnthropicLLM, fault: str, complaint: str
) -> None:
    with pytest.raises(OutputInvalid) as caught:
        await llm.ask(prompt("understand", f"kettle [[fault:{fault}]]"))
    assert complaint in caught.value.message
    assert caught.value.raw and len(caught.value.usage) == 1
    assert caught.value.usage[0].output_tokens > 0


async def test_rule_breaking_output(llm: AnthropicLLM) -> None:
    with pytest.raises(OutputInvalid, match="confidence"):
        await llm.ask(prompt("strategy", "kettle [[fault:rule]]"))
    # Schema-valid and pydantic-valid: only the stage's own checks can catch an invented order.
    answer = await llm.ask(prompt("lookup", "kettle [[fault:rule]]"))
    assert isinstance(answer.value, OrderChoice)
    assert answer.value.order_id == "ORD-INVENTED-0000"


async def test_max_tokens_is_truncated_with_the_partial_output(llm: AnthropicLLM) -> None:
    with pytest.raises(Truncated) as caught:
        await llm.ask(prompt("strategy", "kettle [[fault:max_tokens]]"), max_tokens=300)
    assert caught.value.raw.startswith("{") and caught.value.usage[0].output_tokens == 300


async def test_refusal_is_refused(llm: AnthropicLLM) -> None:
    with pytest.raises(Refused) as caught:
        await llm.ask(prompt("strategy", "kettle [[fault:refusal]]"))
    assert len(caught.value.usage) == 1


async def test_rate_limit_is_retried(llm: AnthropicLLM, own_standin: StandIn) -> None:
    answer = await llm.ask(prompt("understand", "kettle [[fault:429]]"))
    assert isinstance(answer.value, Understanding)
    stats = own_standin.stats()
    assert stats["calls"] == 2 and stats["by_fault"] == {"429": 1}
    assert [r["status"] for r in stats["requests"]] == [429, 200]


@pytest.mark.parametrize("fault", ["529", "500", "429"])
async def test_transient_errors_outlasting_retries_are_unavailable(
    own_standin: StandIn, fault: str
) -> None:
    llm = client(own_standin, max_retries=1)
    try:
        with pytest.raises(Unavailable, match=fault):
            await llm.ask(prompt("lookup", f"kettle [[fault:{fault}:lookup:5]]"))
    finally:
        await llm.aclose()
    assert own_standin.stats()["calls"] == 2


async def test_control_api_faults_reach_the_client(llm: AnthropicLLM, own_standin: StandIn) -> None:
    own_standin.add_faults([{"fault": "529", "stage": "strategy", "times": 1}])
    await llm.ask(prompt("understand"))
    await llm.ask(prompt("strategy"))
    assert [r["status"] for r in own_standin.stats()["requests"]] == [200, 529, 200]


async def test_a_hang_times_out(own_standin: StandIn) -> None:
    llm = client(own_standin, timeout_s=0.5, max_retries=0)
    started = time.monotonic()
    try:
        with pytest.raises(TimedOut):
            await llm.ask(prompt("understand", "kettle [[fault:hang]]"))
    finally:
        await llm.aclose()
    assert time.monotonic() - started < 3


async def test_spend_limit_is_not_retried(llm: AnthropicLLM, own_standin: StandIn) -> None:
    with pytest.raises(SpendLimit, match="usage limits"):
        await llm.ask(prompt("understand", "kettle [[fault:spend_limit:9]]"))
    assert own_standin.stats()["calls"] == 1


async def test_an_unreachable_api_is_unavailable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm = client(f"http://127.0.0.1:{port}", max_retries=0)
    try:
        with pytest.raises(Unavailable, match="unreachable"):
            await llm.ask(prompt("lookup"))
    finally:
        await llm.aclose()


@pytest.mark.parametrize("concurrency", [2, 6])
async def test_concurrency_bounds_calls_in_flight(concurrency: int) -> None:
    async with StandIn(responder=respond, latency=0.15) as server:
        llm = client(server, concurrency=concurrency)
        try:
            # The model's first call goes alone (it learns the rate limits); then the burst.
            await llm.ask(prompt("lookup", ticket_id="t-first"))
            prompts = [prompt("lookup", ticket_id=f"t-{i}") for i in range(6)]
            answers = await asyncio.gather(*(llm.ask(p) for p in prompts))
        finally:
            await llm.aclose()
        assert len(answers) == 6
        assert server.stats()["max_in_flight"] == concurrency


def test_prices_cover_current_models_with_cache_multipliers() -> None:
    for model in PRICES:
        price = PRICES[model]
        assert price.cache_write == pytest.approx(price.input * 1.25)
        assert price.cache_read == pytest.approx(price.input * 0.1)
    assert price_for("claude-sonnet-4-5-20250929", PRICES) == PRICES["claude-sonnet-4-5"]
    assert price_for("claude-sonnet-4-20250514", PRICES) == PRICES["claude-sonnet-4"]
    assert price_for("claude-3-5-haiku-latest", PRICES) == PRICES["claude-3-5-haiku"]
    assert price_for("claude-sonnet-4-6", PRICES) == Price(3.0, 15.0, 3.75, 0.3)
    assert price_for("claude-opus-9-9", PRICES) is None


def test_cost_sums_every_kind_of_token() -> None:
    usage = CallUsage(
        stage="understand",
        model=MODEL,
        input_tokens=1_000_000,
        output_tokens=100_000,
        cache_read_tokens=2_000_000,
        cache_write_tokens=400_000,
    )
    assert cost(usage, Price(1.0, 5.0, 1.25, 0.1)) == pytest.approx(1.0 + 0.5 + 0.2 + 0.5)
    assert cost(usage, None) == 0


async def test_constructor_prices_override_the_built_in_table(own_standin: StandIn) -> None:
    llm = client(own_standin, prices={MODEL: Price(0, 0, 0, 0)})
    try:
        assert llm.prices[MODEL] == Price(0, 0, 0, 0)
        assert (await llm.ask(prompt("lookup"))).usage.cost_usd == 0
    finally:
        await llm.aclose()


@pytest.mark.parametrize(
    ("text", "order_id", "language"),
    [
        ("My Aurora Kettle I bought last month leaks, I want a refund.", "ORD-1001", "en"),
        ("上个月买的耳机没声音了，想换一个", "ORD-1002", "zh"),
    ],
)
async def test_the_default_responder_echoes_the_facts_of_its_prompt(
    text: str, order_id: str, language: str
) -> None:
    async with StandIn() as server:
        llm = client(server)
        try:
            understood = (await llm.ask(prompt("understand", text))).value
            choice = (await llm.ask(prompt("lookup", text, understanding=understood))).value
            match = OrderMatch(
                order_id=choice.order_id, method="model", confidence=0.9, reason=choice.reason
            )
            draft = await llm.ask(prompt("strategy", text, understanding=understood, match=match))
        finally:
            await llm.aclose()
        assert server.stats()["by_stage"] == {"understand": 1, "lookup": 1, "strategy": 1}
    assert understood.language == language
    assert understood.product == next(o.product_name for o in ORDERS if o.order_id == order_id)
    assert choice.order_id == order_id
    assert order_id in draft.value.reply


async def test_the_default_responder_invents_no_order() -> None:
    text = "My Aurora Kettle I bought last month leaks, I want a refund."
    async with StandIn() as server:
        llm = client(server)
        try:
            choice = await llm.ask(prompt("lookup", text, orders=[]))
        finally:
            await llm.aclose()
    assert choice.value.order_id is None


async def test_a_directive_fails_the_first_calls_then_behaves() -> None:
    text = "My Aurora Kettle I bought last month leaks. [[fault:invalid_json:understand:1]]"
    async with StandIn() as server:
        llm = client(server)
        try:
            with pytest.raises(OutputInvalid) as caught:
                await llm.ask(prompt("understand", text))
            answer = await llm.ask(prompt("understand", text), feedback=caught.value.message)
        finally:
            await llm.aclose()
    assert answer.value.product == "Aurora Kettle"

"""AnthropicLLM under failure: retry-after, overload slow-down, bounded attempts and time."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest
from pydantic import BaseModel

from baton_kafka.agents.models.claude import AnthropicLLM
from baton_kafka.agents.models.llm import SpendLimit, TimedOut, Unavailable
from baton_kafka.agents.testing import Request, StandIn
from baton_kafka.schemas import Understanding
from tests.fixtures.agents import client, prompt, respond


class FakeClock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def statuses(server: StandIn) -> list[int]:
    return [r["status"] for r in server.stats()["requests"]]


async def test_retry_after_is_honoured() -> None:
    async with StandIn(responder=respond, retry_after=0.3) as server:
        llm = client(server)
        try:
            answer = await llm.ask(prompt("understand", "kettle [[fault:429:understand:1]]"))
        finally:
            await llm.aclose()
        first, second = server.stats()["requests"]
    assert isinstance(answer.value, Understanding)
    assert (first["status"], second["status"]) == (429, 200)
    assert second["at"] - first["at"] >= 0.3


async def test_overload_cuts_the_limit_and_retries_queue_behind_it() -> None:
    # Answers take longer than the retries' backoff spread, so uncut retries would overlap.
    async with StandIn(responder=respond, retry_after=0.01, latency=0.6) as server:
        server.add_faults([{"fault": "529", "times": 8}])
        llm = client(server, concurrency=8, max_retries=3)
        try:
            prompts = [prompt("lookup", ticket_id=f"t-{i}") for i in range(8)]
            answers = await asyncio.gather(*(llm.ask(p) for p in prompts))
        finally:
            await llm.aclose()
        requests = server.stats()["requests"]
    assert len(answers) == 8 and statuses(server).count(529) == 8
    assert llm.limit.cuts >= 1 and llm.limit.slots < 8
    # Without the cut all eight retries are in flight together (measured: 8).
    assert max(r["in_flight"] for r in requests if r["status"] == 200) <= 5


async def test_transient_errors_are_bounded_in_attempts() -> None:
    async with StandIn(responder=respond, retry_after=0.01) as server:
        llm = client(server, max_retries=2)
        try:
            with pytest.raises(Unavailable, match=r"500 .*gave up after 3 attempts"):
                await llm.ask(prompt("lookup", "kettle [[fault:500:lookup:9]]"))
        finally:
            await llm.aclose()
        assert statuses(server) == [500, 500, 500]


async def test_a_server_that_says_do_not_retry_is_not_retried() -> None:
    def broken(request: Request) -> BaseModel:
        raise RuntimeError("no answer for you")

    async with StandIn(responder=broken) as server:
        llm = client(server, max_retries=4)
        try:
            with pytest.raises(Unavailable, match="responder failed"):
                await llm.ask(prompt("lookup"))
        finally:
            await llm.aclose()
        assert server.stats()["calls"] == 1


async def test_the_ticket_time_budget_bounds_retries_of_a_hang() -> None:
    async with StandIn(responder=respond, hang_s=30) as server:
        llm = client(server, timeout_s=0.3, max_retries=10, ticket_budget_s=1.0)
        try:
            started = time.monotonic()
            with pytest.raises(TimedOut, match="time budget of 1 s is spent"):
                await llm.ask(prompt("understand", "kettle [[fault:hang:9]]", ticket_id="slow"))
            assert time.monotonic() - started < 10
            tried = server.stats()["calls"]
            assert 2 <= tried <= 4  # ~0.3 s per attempt plus backoff, within 1 s
            with pytest.raises(TimedOut, match="budget"):
                await llm.ask(prompt("strategy", "kettle [[fault:hang:9]]", ticket_id="slow"))
            assert server.stats()["calls"] == tried  # no time left: no call at all
            await llm.ask(prompt("understand", "kettle", ticket_id="other"))
        finally:
            await llm.aclose()
    assert server.stats()["calls"] == tried + 1


async def test_spend_limit_is_never_retried_and_alarms_once_a_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    caplog.set_level(logging.ERROR, logger="baton_kafka.agents.models.claude")
    async with StandIn(responder=respond) as server:
        llm = client(server, clock=clock, max_retries=4)
        try:
            for i in range(3):
                with pytest.raises(SpendLimit):
                    await llm.ask(prompt("lookup", "[[fault:spend_limit]]", ticket_id=f"s{i}"))
            clock.now += 61
            with pytest.raises(SpendLimit):
                await llm.ask(prompt("lookup", "[[fault:spend_limit]]", ticket_id="s9"))
        finally:
            await llm.aclose()
        assert server.stats()["calls"] == 4
    alarms = [r.getMessage() for r in caplog.records if "SPEND LIMIT" in r.getMessage()]
    assert len(alarms) == 2 and all(r.levelno == logging.ERROR for r in caplog.records)
    assert "(2 more hits" in alarms[1]


async def test_stages_on_one_model_share_the_cached_handbook() -> None:
    seen: list[Request] = []

    def record(request: Request) -> BaseModel:
        seen.append(request)
        return respond(request)

    async with StandIn(responder=record) as server:
        llm = client(server)
        try:
            first = (await llm.ask(prompt("understand"))).usage
            second = (await llm.ask(prompt("lookup"))).usage
        finally:
            await llm.aclose()
    handbook_end = seen[0].cache_breaks[0]
    assert len(seen[0].cache_breaks) == 2
    assert seen[1].system[:handbook_end] == seen[0].system[:handbook_end]
    assert first.cache_read_tokens == 0 and first.cache_write_tokens > 0
    # lookup reads the handbook understand wrote and writes only its own part.
    assert 0 < second.cache_read_tokens < first.cache_write_tokens
    assert second.cache_write_tokens < second.cache_read_tokens


async def test_an_uncached_prefix_is_warned_about_once_per_stage_and_model(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="baton_kafka.agents.models.claude")
    async with StandIn(responder=respond, min_cache_tokens=100_000) as server:
        llm = client(server)
        try:
            for i in range(3):
                usage = (await llm.ask(prompt("understand", ticket_id=f"u{i}"))).usage
        finally:
            await llm.aclose()
    assert usage.cache_read_tokens == usage.cache_write_tokens == 0
    warnings = [r.getMessage() for r in caplog.records if "nothing was cached" in r.getMessage()]
    assert len(warnings) == 1 and "4096 tokens" in warnings[0]


@pytest.mark.parametrize("stage", ["understand", "lookup", "strategy"])
async def test_default_models_cache_each_stage_at_their_real_minimums(stage: Any) -> None:
    from baton_kafka.streams.settings import load

    model = load({}).model_for(stage)
    async with StandIn(responder=respond, min_cache_tokens=None) as server:
        llm = AnthropicLLM(api_key="k", base_url=server.base_url, model=model, max_retries=0)
        try:
            first = (await llm.ask(prompt(stage, ticket_id="c1"))).usage
            second = (await llm.ask(prompt(stage, ticket_id="c2"))).usage
        finally:
            await llm.aclose()
    assert first.model == model
    assert first.cache_write_tokens > 0
    assert second.cache_read_tokens == first.cache_write_tokens and second.cache_write_tokens == 0


async def test_the_worker_builds_the_model_from_the_settings() -> None:
    from baton_kafka.agents.models.prices import Price
    from baton_kafka.streams.runtime.worker import build_llm
    from baton_kafka.streams.settings import load

    settings = load(
        {
            "ANTHROPIC_API_KEY": "sk-test",
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:1",
            "BATON_PRICES": '{"claude-haiku-4-5": [2, 10]}',
            "BATON_LLM": "anthropic",
            "BATON_TICKET_MODEL_BUDGET": "7.5",
            "BATON_MODEL_TIMEOUT": "3",
            "BATON_MODEL_MAX_RETRIES": "6",
            "BATON_MODEL_CONCURRENCY": "5",
            "BATON_MODEL_LOOKUP": "claude-opus-4-6",
        }
    )
    llm = build_llm(settings)
    try:
        assert isinstance(llm, AnthropicLLM)
        assert (llm.tickets.budget_s, llm.timeout_s, llm.max_retries) == (7.5, 3.0, 6)
        assert llm._client.api_key == "sk-test"
        assert str(llm._client.base_url).startswith("http://127.0.0.1:1")
        assert llm.prices["claude-haiku-4-5"] == Price(2, 10, 2.5, 0.2)
        assert llm.limit.maximum == llm.limit.slots == 5
        # Not Anthropic's address: BATON_MODEL's default for every stage but the one set.
        assert [llm.model_for(s) for s in ("understand", "lookup", "strategy")] == [
            "claude-sonnet-4-6",
            "claude-opus-4-6",
            "claude-sonnet-4-6",
        ]
    finally:
        await llm.aclose()
    with pytest.raises(ValueError, match="BATON_TICKET_MODEL_BUDGET must be positive"):
        load({"BATON_TICKET_MODEL_BUDGET": "0"})

"""Pacing from the API's rate-limit headers: read, held before a 429, exported as gauges."""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import httpx2
import pytest
from pydantic import BaseModel

from baton_kafka.agents.models.claude import AnthropicLLM
from baton_kafka.agents.models.llm import Unavailable
from baton_kafka.agents.models.ratelimits import (
    KINDS,
    Budget,
    RateLimitPacer,
    read_rate_limits,
)
from baton_kafka.agents.testing.standin import RateBudget, StandIn
from baton_kafka.agents.testing.standin.__main__ import rate_budget
from baton_kafka.agents.testing.standin.ratelimits import RateWindow
from baton_kafka.streams.observe.metrics import PrometheusObserver
from baton_kafka.streams.runtime.worker import build_llm
from baton_kafka.streams.settings import SettingsError, load
from tests.fixtures.agents import client, prompt, respond

H = "anthropic-ratelimit-"


def test_headers_are_read_per_budget_with_seconds_to_the_reset() -> None:
    headers = {
        f"{H}requests-limit": "50",
        f"{H}requests-remaining": "7",
        f"{H}requests-reset": "2026-01-01T00:00:10Z",
        f"{H}input-tokens-limit": "40000",
        f"{H}input-tokens-remaining": "0",
        f"{H}input-tokens-reset": "2026-01-01T00:00:02.500Z",
        f"{H}output-tokens-remaining": "not a number",
    }
    now = 1767225600.0  # 2026-01-01T00:00:00Z
    budgets = read_rate_limits(headers, now)
    assert set(budgets) == {"requests", "input-tokens"}
    assert budgets["requests"].limit == 50 and budgets["requests"].remaining == 7
    assert budgets["requests"].reset_in_s == pytest.approx(10.0)
    assert budgets["input-tokens"].reset_in_s == pytest.approx(2.5)
    assert read_rate_limits({}, now) == {}


def test_a_reset_in_the_past_or_without_a_zone_is_no_wait() -> None:
    headers = {f"{H}requests-remaining": "0", f"{H}requests-reset": "2020-01-01T00:00:00Z"}
    assert read_rate_limits(headers, time.time())["requests"].reset_in_s == 0.0
    headers[f"{H}requests-reset"] = "2020-01-01T00:00:00"
    assert read_rate_limits(headers, time.time())["requests"].reset_in_s is None


def _spent(reset_in_s: float, remaining: int = 0, limit: int = 10) -> dict[str, str]:
    reset = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() + reset_in_s))
    return {
        f"{H}requests-limit": str(limit),
        f"{H}requests-remaining": str(remaining),
        f"{H}requests-reset": f"{reset}Z",
    }


async def test_a_spent_budget_holds_new_calls_until_its_reset_and_no_longer() -> None:
    pacer = RateLimitPacer(reserve=0.0)
    await pacer.admit("m")
    pacer.finished("m", _spent(reset_in_s=2))
    assert pacer.hold_until("m") is not None
    # Bounded: the wait never passes max_wait_s, even when the reset is further away.
    pacer.max_wait_s = 0.2
    started = time.monotonic()
    await pacer.admit("m")
    assert 0.15 <= time.monotonic() - started < 1.0
    assert pacer.held >= 1


async def test_the_reserve_holds_calls_before_the_budget_is_empty() -> None:
    pacer = RateLimitPacer(reserve=0.2)
    await pacer.admit("m")
    pacer.finished("m", _spent(reset_in_s=30, remaining=2, limit=10))
    assert pacer.hold_until("m") is not None
    pacer.finished("m", _spent(reset_in_s=30, remaining=3, limit=10))
    assert pacer.hold_until("m") is None


async def test_calls_in_flight_count_against_what_the_last_response_said_remains() -> None:
    pacer = RateLimitPacer(reserve=0.0)
    await pacer.admit("m")
    pacer.finished("m", _spent(reset_in_s=30, remaining=9))
    for _ in range(3):
        await asyncio.wait_for(pacer.admit("m"), 1)
    # Two calls are still out: the one answer saying 2 remain leaves none for a new call.
    pacer.finished("m", _spent(reset_in_s=30, remaining=2))
    assert pacer.hold_until("m") is not None
    assert pacer.hold_until("other") is None


async def test_until_the_first_answer_calls_go_one_at_a_time() -> None:
    pacer = RateLimitPacer()
    await pacer.admit("m")
    second = asyncio.create_task(pacer.admit("m"))
    await asyncio.sleep(0.05)
    assert not second.done()
    pacer.finished("m", {})  # an answer without rate-limit headers: nothing to pace by
    await asyncio.wait_for(second, 1)
    third = asyncio.create_task(pacer.admit("m"))
    await asyncio.wait_for(third, 1)


async def test_a_first_call_that_hangs_holds_the_others_only_for_the_probe_wait() -> None:
    pacer = RateLimitPacer(probe_wait_s=0.2)
    await pacer.admit("m")  # and never answers
    started = time.monotonic()
    await asyncio.wait_for(asyncio.gather(pacer.admit("m"), pacer.admit("m")), 2)
    assert 0.15 <= time.monotonic() - started < 1.0


def test_the_standin_window_refuses_past_its_budget_and_says_so() -> None:
    now = [1000.0]
    window = RateWindow(RateBudget(requests=2, window_s=5.0, input_tokens=100), wall=lambda: now[0])
    assert window.take(10)[0] and window.take(10)[0]
    allowed, headers = window.take(10)
    assert not allowed
    assert headers[f"{H}requests-remaining"] == "0"
    assert headers[f"{H}input-tokens-remaining"] == "80"
    assert headers["retry-after"] == "5"
    assert read_rate_limits(headers, now[0])["requests"].reset_in_s == pytest.approx(5.0)
    now[0] += 5.0
    assert window.take(90)[0]
    assert not window.take(20)[0]  # input tokens now, not requests


async def _burst(standin: StandIn, n: int, **options: Any) -> list[BaseModel | Exception]:
    llm = client(standin, max_retries=0, concurrency=n, **options)
    try:
        asks = [llm.ask(prompt("understand", ticket_id=f"t-{i}")) for i in range(n)]
        answers = await asyncio.gather(*asks, return_exceptions=True)
    finally:
        await llm.aclose()
    return [a if isinstance(a, Exception) else a.value for a in answers]


async def test_with_pacing_a_burst_against_a_small_budget_gets_no_429() -> None:
    budget = RateBudget(requests=4, window_s=0.5)
    async with StandIn(responder=respond, rate_limit=budget) as standin:
        answers = await _burst(standin, 10)
        stats = standin.stats()
    assert not [a for a in answers if isinstance(a, Exception)]
    assert stats["by_fault"].get("rate_limited", 0) == 0
    assert stats["calls"] == 10


async def test_without_reading_the_headers_the_same_burst_is_rate_limited() -> None:
    budget = RateBudget(requests=4, window_s=0.5)
    async with StandIn(responder=respond, rate_limit=budget) as standin:
        answers = await _burst(standin, 10, ratelimit_max_wait_s=0)
        stats = standin.stats()
    failed = [a for a in answers if isinstance(a, Exception)]
    assert failed and all(isinstance(a, Unavailable) and "429" in str(a) for a in failed)
    assert stats["by_fault"]["rate_limited"] == len(failed) == 6


async def test_the_remaining_budgets_are_exported_as_gauges() -> None:
    budget = RateBudget(requests=5, window_s=30.0, input_tokens=1_000_000)
    async with StandIn(responder=respond, rate_limit=budget) as standin:
        llm = client(standin)
        observer = PrometheusObserver()
        observer.watch_llm(llm)
        try:
            await llm.ask(prompt("understand"))
            await llm.ask(prompt("understand", ticket_id="t-2"))
        finally:
            await llm.aclose()
    values = observer.values()["baton_model_ratelimit_remaining"]
    model = llm.model
    assert values[(model, "requests")] == 3
    assert 0 < values[(model, "input-tokens")] < 1_000_000


def test_the_standin_command_reads_a_rate_limit_and_refuses_a_bad_one() -> None:
    assert rate_budget("50/60") == RateBudget(requests=50, window_s=60.0)
    assert rate_budget("5") == RateBudget(requests=5, window_s=60.0)
    for bad in ("x/60", "0/60", "5/-1"):
        with pytest.raises(argparse.ArgumentTypeError):
            rate_budget(bad)


async def test_the_worker_paces_by_its_settings_and_refuses_a_reserve_of_one_or_more() -> None:
    env = {
        "BATON_LLM": "anthropic",
        "ANTHROPIC_API_KEY": "sk-test-not-a-real-key",
        "BATON_MODEL_RATELIMIT_RESERVE": "0.2",
        "BATON_MODEL_RATELIMIT_WAIT": "5",
    }
    settings = load(env)
    assert load(settings.to_env()).model_ratelimit_reserve == 0.2
    llm = build_llm(settings)
    try:
        assert isinstance(llm, AnthropicLLM)
        assert (llm.pacer.reserve, llm.pacer.max_wait_s) == (0.2, 5.0)
    finally:
        await llm.aclose()
    for bad in ("1", "1.5", "0", "-0.1", "x"):
        with pytest.raises(SettingsError, match="BATON_MODEL_RATELIMIT_RESERVE"):
            load({**env, "BATON_MODEL_RATELIMIT_RESERVE": bad})


def _plain_read(headers: Mapping[str, str], now_wall: float) -> dict[str, Budget]:
    """The reading ``read_rate_limits`` must equal: one lookup per header, each date parsed."""

    def number(value: str | None) -> int | None:
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None

    def reset_in(value: str | None) -> float | None:
        if not value:
            return None
        try:
            reset = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
        return None if reset.tzinfo is None else max(0.0, reset.timestamp() - now_wall)

    budgets = {}
    for kind in KINDS:
        remaining = number(headers.get(f"anthropic-ratelimit-{kind}-remaining"))
        if remaining is not None:
            budgets[kind] = Budget(
                limit=number(headers.get(f"anthropic-ratelimit-{kind}-limit")),
                remaining=remaining,
                reset_in_s=reset_in(headers.get(f"anthropic-ratelimit-{kind}-reset")),
            )
    return budgets


def _generated_headers(rng: random.Random) -> list[tuple[str, str]]:
    values = ["4000", "0", " 12 ", "-3", "x", "", "1, 2", "1.5"]
    resets = [
        "2026-01-01T00:00:05Z",
        " 2026-01-01T00:00:09+00:00 ",
        "2026-01-01T00:00:05",
        "soon",
        "",
        "2025-12-31T23:59:59Z",
    ]
    items = [("request-id", "req_1"), ("content-type", "application/json")]
    for kind in KINDS:
        for part, pool in (("remaining", values), ("limit", values), ("reset", resets)):
            for _ in range(rng.choice((0, 1, 1, 1, 2))):
                name = f"anthropic-ratelimit-{kind}-{part}"
                name = "".join(c.upper() if rng.random() < 0.2 else c for c in name)
                items.append((name, rng.choice(pool)))
    rng.shuffle(items)
    return items


def test_reading_the_budgets_equals_one_lookup_per_header_on_generated_headers() -> None:
    rng = random.Random(3)
    now_wall = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    for _ in range(500):
        items = _generated_headers(rng)
        http = httpx2.Headers(items)
        assert read_rate_limits(http, now_wall) == _plain_read(http, now_wall)
        plain = dict(items)
        assert read_rate_limits(plain, now_wall) == _plain_read(plain, now_wall)
        # The memo of reset times gives the same figure at a later time.
        later = now_wall + 2.5
        assert read_rate_limits(http, later) == _plain_read(http, later)

"""A worker's first model calls against its limits: one line naming the setting to change."""

from __future__ import annotations

import logging

import pytest

from baton_kafka.agents.models.latency import LatencyWatch
from baton_kafka.agents.models.llm import TimedOut
from baton_kafka.agents.testing import Responder, StandIn
from baton_kafka.agents.testing.standin import WeakStyle
from tests.fixtures.agents import client, prompt, respond


@pytest.fixture
def responder() -> Responder:
    return respond


def _said(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "baton_kafka.agents.models.latency" and r.levelno == level
    ]


async def test_a_call_near_the_timeout_names_the_timeout(
    own_standin: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    own_standin.style = WeakStyle(first_call_s=0.35, near_miss=0.0)
    llm = client(own_standin, timeout_s=0.6, ticket_budget_s=60.0)
    caplog.set_level(logging.INFO, "baton_kafka.agents.models.latency")
    try:
        for i in range(4):
            await llm.ask(prompt("lookup", ticket_id=f"t-{i}"))
    finally:
        await llm.aclose()
    [line] = _said(caplog, logging.WARNING)
    assert "call 1 took 0." in line and "of BATON_MODEL_TIMEOUT=0.6 s" in line
    assert "raise BATON_MODEL_TIMEOUT" in line
    assert _said(caplog, logging.INFO) == []


async def test_a_timed_out_first_call_is_said_once(
    own_standin: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    own_standin.style = WeakStyle(call_s=1.0, near_miss=0.0)
    llm = client(own_standin, timeout_s=0.2, max_retries=0, ticket_budget_s=60.0)
    caplog.set_level(logging.INFO, "baton_kafka.agents.models.latency")
    try:
        for i in range(3):
            with pytest.raises(TimedOut):
                await llm.ask(prompt("lookup", ticket_id=f"t-{i}"))
    finally:
        await llm.aclose()
    [line] = _said(caplog, logging.WARNING)
    assert "call 1 timed out of BATON_MODEL_TIMEOUT=0.2 s" in line


async def test_calls_that_would_spend_the_ticket_budget_name_the_budget(
    own_standin: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    own_standin.latency = 0.15
    llm = client(own_standin, timeout_s=5.0, ticket_budget_s=0.8, concurrency=1)
    caplog.set_level(logging.INFO, "baton_kafka.agents.models.latency")
    try:
        await llm.ask(prompt("lookup"))
    finally:
        await llm.aclose()
    [line] = _said(caplog, logging.WARNING)
    assert "a ticket's 3 calls take about" in line
    assert "BATON_TICKET_MODEL_BUDGET=0.8 s; raise BATON_TICKET_MODEL_BUDGET" in line


async def test_fast_calls_are_summed_up_once(
    own_standin: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    llm = client(own_standin)
    caplog.set_level(logging.INFO, "baton_kafka.agents.models.latency")
    try:
        for i in range(8):
            await llm.ask(prompt("lookup", ticket_id=f"t-{i}"))
    finally:
        await llm.aclose()
    assert _said(caplog, logging.WARNING) == []
    [line] = _said(caplog, logging.INFO)
    assert line.startswith("model latency: the first 5 calls took")


def test_queued_calls_name_the_concurrency() -> None:
    watch = LatencyWatch(timeout_s=60.0, ticket_budget_s=180.0, concurrency=256)
    line = watch.observe(45.0, in_flight=12)
    assert line is not None and "12 calls were in flight" in line
    assert "BATON_MODEL_CONCURRENCY=256" in line
    assert watch.observe(59.0) is None  # said once
    spent = LatencyWatch(timeout_s=60.0, ticket_budget_s=180.0, concurrency=4)
    line = spent.observe(0.0, budget_spent=True)
    assert line is not None and "raise BATON_TICKET_MODEL_BUDGET" in line

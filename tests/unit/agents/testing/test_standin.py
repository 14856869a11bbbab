"""The Messages API stand-in: wire format, faults, control API, tokens, latency, and hosting."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request
from typing import Any

import aiohttp
import anthropic
import pytest
from pydantic import BaseModel

from baton_kafka.agents.prompts import build
from baton_kafka.agents.testing import (
    Request,
    Responder,
    StandIn,
    directives,
    estimate_tokens,
    run_in_thread,
)
from baton_kafka.schemas import Baton, OrderChoice, StrategyDraft, Ticket
from baton_kafka.schemas.records import StageName
from tests.fixtures.agents import ORDERS, OUTPUTS
from tests.fixtures.paths import ROOT


def choose(request: Request) -> BaseModel:
    if request.stage != "lookup":
        raise ValueError(f"this responder only handles lookup, not {request.stage}")
    return OrderChoice(order_id="ORD-1001", reason="the kettle matches")


def body(text: str, stage: StageName = "lookup", ticket_id: str = "t-1") -> dict[str, Any]:
    ticket = Ticket(ticket_id=ticket_id, session_id="s-1", customer_id="c-1", text=text)
    baton = Baton(session_id="s-1")
    prompt = build(stage, OUTPUTS[stage], ticket=ticket, baton=baton, orders=ORDERS[:1])
    return {
        "model": "claude-haiku-4-5",
        "max_tokens": 256,
        "system": [{"type": "text", "text": prompt.system, "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": prompt.context}]}],
        "output_config": {
            "format": {"type": "json_schema", "schema": anthropic.transform_schema(OUTPUTS[stage])}
        },
    }


@pytest.fixture
def responder() -> Responder:
    """What ``own_standin`` answers with."""
    return choose


@pytest.fixture
async def http():
    async with aiohttp.ClientSession() as session:
        yield session


async def post(http: aiohttp.ClientSession, url: str, data: Any) -> tuple[int, Any, Any]:
    async with http.post(url, json=data) as response:
        return response.status, await response.json(), response.headers


async def test_answers_with_a_message_the_sdk_reads(own_standin: StandIn) -> None:
    async with anthropic.AsyncAnthropic(api_key="test", base_url=own_standin.base_url) as client:
        message = await client.messages.create(**body("My kettle leaks"))
    assert message.type == "message" and message.role == "assistant"
    assert message.stop_reason == "end_turn" and message.stop_sequence is None
    assert message.model == "claude-haiku-4-5"
    block = message.content[0]
    assert block.type == "text"
    assert OrderChoice.model_validate_json(block.text).order_id == "ORD-1001"
    assert message.usage.cache_creation_input_tokens and message.usage.input_tokens > 0
    assert own_standin.stats()["requests"][0]["ticket_id"] == "t-1"


@pytest.mark.parametrize(
    ("data", "complaint"),
    [
        ({"max_tokens": 10, "messages": [{"role": "user", "content": "x"}]}, "model"),
        ({"model": "m", "messages": [{"role": "user", "content": "x"}]}, "max_tokens"),
        ({"model": "m", "max_tokens": 10, "messages": []}, "messages"),
        ({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": 3}]}, "content"),
        ([1, 2], "body"),
    ],
)
async def test_malformed_requests_get_invalid_request_errors(
    own_standin: StandIn, http: aiohttp.ClientSession, data: Any, complaint: str
) -> None:
    status, error, headers = await post(http, f"{own_standin.base_url}/v1/messages", data)
    assert status == 400
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert complaint in error["error"]["message"]
    assert headers["request-id"].startswith("req_")


async def test_non_json_body_is_an_invalid_request(
    own_standin: StandIn, http: aiohttp.ClientSession
):
    async with http.post(f"{own_standin.base_url}/v1/messages", data=b"{nope") as response:
        assert response.status == 400
        assert (await response.json())["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize(
    ("fault", "status", "kind"),
    [
        ("429", 429, "rate_limit_error"),
        ("529", 529, "overloaded_error"),
        ("500", 500, "api_error"),
        ("spend_limit", 429, "rate_limit_error"),
    ],
)
async def test_error_faults_look_like_the_api(
    own_standin: StandIn, http: aiohttp.ClientSession, fault: str, status: int, kind: str
) -> None:
    got, error, headers = await post(
        http, f"{own_standin.base_url}/v1/messages", body(f"hi [[fault:{fault}]]")
    )
    assert (got, error["type"], error["error"]["type"]) == (status, "error", kind)
    assert headers["request-id"]
    if fault == "spend_limit":
        assert "usage limit" in error["error"]["message"]
        assert error["error"]["details"] == {"error_code": "enforced_spend_limit_reached"}
        assert "retry-after" not in headers
    else:
        assert (headers["retry-after"], headers["retry-after-ms"]) == ("1", "10")


def test_directives_parse_fault_stage_and_count() -> None:
    text = "a [[fault:429:understand:2]] b [[fault:refusal]] [[fault:500:3]] [[fault:bogus]]"
    assert directives(text) == [("429", "understand", 2), ("refusal", None, 1), ("500", None, 3)]


async def test_directive_counts_are_per_ticket_and_stage(
    own_standin: StandIn, http: aiohttp.ClientSession
) -> None:
    url = f"{own_standin.base_url}/v1/messages"
    text = "Kettle [[fault:529:lookup:2]]"
    statuses = [(await post(http, url, body(text)))[0] for _ in range(3)]
    assert statuses == [529, 529, 200]
    assert (await post(http, url, body(text, ticket_id="t-2")))[0] == 529
    stats = own_standin.stats()
    assert stats["calls"] == 4 and stats["by_fault"] == {"529": 3}
    assert [r["ticket_id"] for r in stats["requests"]] == ["t-1"] * 3 + ["t-2"]


async def test_control_api_queues_faults_in_order_and_resets(
    own_standin: StandIn, http: aiohttp.ClientSession
) -> None:
    base = own_standin.base_url
    rules = [
        {"match": "kettle", "stage": "lookup", "fault": "500", "times": 1},
        {"match": None, "stage": None, "fault": "429", "times": 2},
    ]
    assert (await post(http, f"{base}/_control/faults", rules))[1] == {"queued": 2}
    statuses = [(await post(http, f"{base}/v1/messages", body("my kettle")))[0] for _ in range(4)]
    assert statuses == [500, 429, 429, 200]
    async with http.get(f"{base}/_control/stats") as response:
        stats = await response.json()
    assert stats["by_fault"] == {"500": 1, "429": 2} and stats["by_stage"] == {"lookup": 4}
    bad = await post(http, f"{base}/_control/faults", [{"fault": "nope"}])
    assert bad[0] == 400
    assert (await post(http, f"{base}/_control/reset", {}))[1] == {"reset": True}
    assert own_standin.stats()["calls"] == 0


@pytest.mark.parametrize("fault", ["invalid_json", "schema", "rule", "max_tokens", "refusal"])
async def test_output_faults(own_standin: StandIn, http: aiohttp.ClientSession, fault: str) -> None:
    status, message, _ = await post(
        http, f"{own_standin.base_url}/v1/messages", body(f"kettle [[fault:{fault}]]")
    )
    assert status == 200
    text = message["content"][0]["text"] if message["content"] else ""
    if fault == "refusal":
        assert message["stop_reason"] == "refusal" and text == ""
    elif fault == "max_tokens":
        assert message["stop_reason"] == "max_tokens"
        assert message["usage"]["output_tokens"] == 256
        with pytest.raises(ValueError):
            json.loads(text)
    elif fault == "invalid_json":
        with pytest.raises(ValueError):
            json.loads(text)
    elif fault == "schema":
        assert "order_id" not in json.loads(text)
    else:
        assert json.loads(text)["order_id"] == "ORD-INVENTED-0000"


def test_token_estimate_counts_cjk_characters_one_each() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcdefgh") == 2
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("水壶漏水了") == 5
    assert estimate_tokens("kettle 水壶") == 2 + 2


async def test_cached_system_is_written_once_then_read(
    own_standin: StandIn, http: aiohttp.ClientSession
) -> None:
    url = f"{own_standin.base_url}/v1/messages"
    first = (await post(http, url, body("kettle")))[1]["usage"]
    second = (await post(http, url, body("kettle", ticket_id="t-9")))[1]["usage"]
    assert first["cache_creation_input_tokens"] > 0 and first["cache_read_input_tokens"] == 0
    assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
    assert second["cache_creation_input_tokens"] == 0
    assert second["input_tokens"] == first["input_tokens"]
    plain = body("kettle")
    plain["system"] = plain["system"][0]["text"]
    uncached = (await post(http, url, plain))[1]["usage"]
    assert uncached["cache_read_input_tokens"] == uncached["cache_creation_input_tokens"] == 0
    assert uncached["input_tokens"] == first["input_tokens"] + first["cache_creation_input_tokens"]


async def test_short_prompts_are_not_cached_below_the_minimum(http: aiohttp.ClientSession):
    async with StandIn(responder=choose, min_cache_tokens=100_000) as server:
        usage = (await post(http, f"{server.base_url}/v1/messages", body("kettle")))[1]["usage"]
    assert usage["cache_creation_input_tokens"] == usage["cache_read_input_tokens"] == 0


async def test_latency_sleeps_without_blocking_the_loop(http: aiohttp.ClientSession) -> None:
    async with StandIn(responder=choose, latency=0.3, jitter=0.05) as server:
        started = time.monotonic()
        calls = [post(http, f"{server.base_url}/v1/messages", body("kettle")) for _ in range(4)]
        assert [r[0] for r in await asyncio.gather(*calls)] == [200] * 4
        elapsed = time.monotonic() - started
        assert 0.25 <= elapsed < 0.9
        assert server.stats()["max_in_flight"] == 4


async def test_a_hang_ends_when_its_client_gives_up(own_standin: StandIn) -> None:
    timeout = aiohttp.ClientTimeout(total=0.3)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        with pytest.raises(asyncio.TimeoutError):
            await post(session, f"{own_standin.base_url}/v1/messages", body("x [[fault:hang]]"))
    for _ in range(50):
        if own_standin.stats()["in_flight"] == 0:
            break
        await asyncio.sleep(0.02)
    assert own_standin.stats()["in_flight"] == 0


async def test_stopping_cancels_a_hang_in_flight(http: aiohttp.ClientSession) -> None:
    server = StandIn(responder=choose)
    await server.start()
    hang = post(http, f"{server.base_url}/v1/messages", body("[[fault:hang]]"))
    call = asyncio.ensure_future(hang)
    await asyncio.sleep(0.1)
    started = time.monotonic()
    await server.stop()
    assert time.monotonic() - started < 3
    with pytest.raises(aiohttp.ClientError):
        await call


async def test_a_failing_responder_is_a_non_retryable_server_error(own_standin: StandIn) -> None:
    async with anthropic.AsyncAnthropic(api_key="t", base_url=own_standin.base_url) as client:
        with pytest.raises(anthropic.InternalServerError, match="responder failed"):
            await client.messages.create(**body("kettle", stage="strategy"))
    assert own_standin.stats()["calls"] == 1


def test_run_in_thread_serves_sync_code() -> None:
    with run_in_thread(responder=choose) as server:
        with anthropic.Anthropic(api_key="test", base_url=server.base_url) as client:
            message = client.messages.create(**body("kettle"))
        assert message.stop_reason == "end_turn"
        with urllib.request.urlopen(f"{server.base_url}/_control/stats") as response:
            assert json.load(response)["calls"] == 1
        server.add_faults([{"fault": "refusal"}])
        with anthropic.Anthropic(api_key="test", base_url=server.base_url) as client:
            assert client.messages.create(**body("kettle")).stop_reason == "refusal"


def test_module_runs_standalone_and_prints_its_url() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [
        sys.executable,
        "-m",
        "baton_kafka.agents.testing.standin",
        "--port",
        "0",
        "--latency",
        "0.01",
    ]
    with subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:")
            with urllib.request.urlopen(f"{url}/_control/stats", timeout=5) as response:
                assert json.load(response)["calls"] == 0
        finally:
            proc.terminate()
            assert proc.wait(timeout=10) == 0
        # A module imported twice (with its package, then as __main__) warns on stderr.
        assert proc.stderr is not None and "Warning" not in proc.stderr.read()


def draft_answer(request: Request) -> BaseModel:
    if request.stage == "strategy":
        return StrategyDraft(
            solution="Repair order ORD-1001.",
            reply="Your Aurora Kettle (order ORD-1001) will be repaired.",
            internal_note="",
            confidence=0.9,
            needs_human=False,
        )
    return choose(request)


async def test_drift_fault_answers_strategy_with_a_reply_that_ignores_the_order(
    http: aiohttp.ClientSession,
) -> None:
    async with StandIn(responder=draft_answer) as server:
        url = f"{server.base_url}/v1/messages"
        text = "kettle [[fault:drift]]"
        lookup = (await post(http, url, body(text)))[1]
        drifted = (await post(http, url, body(text, stage="strategy")))[1]
        fixed = (await post(http, url, body(text, stage="strategy")))[1]
        assert server.stats()["by_fault"] == {"drift": 1}  # never on other stages
    assert json.loads(lookup["content"][0]["text"])["order_id"] == "ORD-1001"
    reply = json.loads(drifted["content"][0]["text"])["reply"]
    assert "ORD-1001" not in reply and "Kettle" not in reply
    assert "ORD-1001" in json.loads(fixed["content"][0]["text"])["reply"]


async def test_each_cache_breakpoint_is_a_prefix_of_its_own(
    own_standin: StandIn, http: aiohttp.ClientSession
) -> None:
    url = f"{own_standin.base_url}/v1/messages"
    shared, mine, other = "S" * 4000, "M" * 800, "O" * 1200

    def two_blocks(second: str) -> dict[str, Any]:
        data = body("kettle")
        cached = {"type": "ephemeral"}
        data["system"] = [
            {"type": "text", "text": shared, "cache_control": cached},
            {"type": "text", "text": second, "cache_control": cached},
        ]
        return data

    first = (await post(http, url, two_blocks(mine)))[1]["usage"]
    sibling = (await post(http, url, two_blocks(other)))[1]["usage"]
    again = (await post(http, url, two_blocks(mine)))[1]["usage"]
    assert (first["cache_read_input_tokens"], first["cache_creation_input_tokens"]) == (0, 1200)
    assert (sibling["cache_read_input_tokens"], sibling["cache_creation_input_tokens"]) == (
        1000,
        300,
    )
    assert (again["cache_read_input_tokens"], again["cache_creation_input_tokens"]) == (1200, 0)
    assert first["input_tokens"] == again["input_tokens"] == sibling["input_tokens"]


async def test_real_minimums_leave_a_short_first_block_uncached(
    http: aiohttp.ClientSession,
) -> None:
    async with StandIn(responder=choose, min_cache_tokens=None) as server:
        data = body("kettle")  # haiku-4-5: 4096 tokens at least
        data["system"] = [
            {"type": "text", "text": "S" * 8000, "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "M" * 9000, "cache_control": {"type": "ephemeral"}},
        ]
        usage = (await post(http, f"{server.base_url}/v1/messages", data))[1]["usage"]
    # 2000 tokens are below the minimum; the whole 4250-token prefix is not.
    assert usage["cache_creation_input_tokens"] == 4250 and usage["cache_read_input_tokens"] == 0

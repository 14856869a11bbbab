"""An answer read from its body is the very ``Message`` the SDK's own reading makes, and the
request on the wire is the very one the SDK's ``messages.create`` sends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anthropic
import orjson
import pytest
from aiohttp import web

from baton_kafka.agents.models.claude import AnthropicLLM
from baton_kafka.agents.models.llm import Unavailable
from baton_kafka.agents.models.message_body import NotAMessage, read_message
from baton_kafka.agents.models.platforms import BedrockLLM, VertexLLM
from tests.fixtures.agents import prompt
from tests.fixtures.http import serving

USAGE = {"input_tokens": 1200, "output_tokens": 30}
TEXT = {"type": "text", "text": '{"reply": "Ihre Bestellung 4711 kommt am 3. Mai.", "n": 2}'}
BODIES: dict[str, dict[str, Any]] = {
    "text": {"content": [TEXT], "stop_reason": "end_turn"},
    "cached": {
        "content": [TEXT],
        "stop_reason": "end_turn",
        "usage": {**USAGE, "cache_read_input_tokens": 1024, "cache_creation_input_tokens": 0},
    },
    "refusal": {
        "content": [],
        "stop_reason": "refusal",
        "stop_details": {"type": "refusal", "category": "cyber", "explanation": "no"},
    },
    "truncated": {
        "content": [{"type": "text", "text": '{"reply": "Hel'}],
        "stop_reason": "max_tokens",
    },
    "thinking": {
        "content": [{"type": "thinking", "thinking": "hmm", "signature": "sig"}, TEXT],
        "stop_reason": "end_turn",
    },
    "tool use": {
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "answer", "input": {"a": [1]}}],
        "stop_reason": "tool_use",
    },
    "unknown block": {
        "content": [{"type": "hologram", "frames": 3}, TEXT],
        "stop_reason": "end_turn",
    },
    "unknown field": {"content": [TEXT], "stop_reason": "end_turn", "mood": {"calm": True}},
    "unknown stop": {"content": [TEXT], "stop_reason": "tea_break"},
}


def body(name: str) -> bytes:
    base = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "stop_sequence": None,
        "usage": USAGE,
    }
    return orjson.dumps({**base, **BODIES[name]})


@pytest.fixture
async def server() -> AsyncIterator[str]:
    async def answer(request: web.Request) -> web.Response:
        name = (await request.json())["metadata"]["user_id"]
        return web.Response(
            body=body(name),
            content_type="application/json",
            headers={"request-id": f"req_{len(name)}"},
        )

    async with serving(answer) as url:
        yield url


@pytest.mark.parametrize("name", list(BODIES))
async def test_the_message_read_from_the_body_equals_the_sdks_own(server: str, name: str) -> None:
    client = anthropic.AsyncAnthropic(api_key="k", base_url=server, max_retries=0)
    try:

        async def raw() -> Any:
            return await client.messages.with_raw_response.create(
                model="claude-test",
                max_tokens=50,
                messages=[{"role": "user", "content": "hi"}],
                metadata={"user_id": name},
            )

        mine = await raw()
        ours = read_message(await mine.read(), mine.request_id)
        theirs = await (await raw()).parse()
    finally:
        await client.close()
    assert type(ours) is type(theirs)
    # The SDK takes an unknown block as a known one; its dump then warns: compare without.
    assert ours.model_dump(warnings=False) == theirs.model_dump(warnings=False)
    assert [type(b) for b in ours.content] == [type(b) for b in theirs.content]
    assert ours._request_id == theirs._request_id == f"req_{len(name)}"


@pytest.mark.parametrize("body", [b"<html>bad gateway</html>", b"[1, 2]", b'"text"', b""])
def test_a_body_that_is_no_json_object_is_not_a_message(body: bytes) -> None:
    with pytest.raises(NotAMessage):
        read_message(body, "req_1")


@pytest.fixture
async def recorder() -> AsyncIterator[tuple[str, list[bytes]]]:
    """A Messages server that keeps every request body; from the third on it answers a web page."""
    seen: list[bytes] = []

    async def answer(request: web.Request) -> web.Response:
        seen.append(await request.read())
        if len(seen) > 2:
            return web.Response(body=b"<html>bad gateway</html>", content_type="text/html")
        return web.Response(body=body("text"), content_type="application/json")

    async with serving(answer) as url:
        yield url, seen


@pytest.mark.parametrize("feedback", [None, "order_id: not a candidate"])
async def test_the_request_on_the_wire_is_the_one_messages_create_sends(
    recorder: tuple[str, list[bytes]], feedback: str | None
) -> None:
    url, seen = recorder
    llm = AnthropicLLM(api_key="k", base_url=url, max_retries=0)
    client = anthropic.AsyncAnthropic(api_key="k", base_url=url, max_retries=0)
    request = llm.request(prompt("strategy"), "claude-test", feedback, 300)
    try:
        await llm._call(request, 5.0)
        await client.messages.create(**request)
    finally:
        await llm.aclose()
        await client.close()
    ours, theirs = (orjson.loads(b) for b in seen)
    assert ours == theirs
    assert ours["output_config"]["format"]["type"] == "json_schema"


async def test_a_successful_answer_with_no_message_is_retried_then_unavailable(
    recorder: tuple[str, list[bytes]],
) -> None:
    url, seen = recorder
    seen.extend([b"", b""])  # every answer from now on is the bad gateway page
    llm = AnthropicLLM(api_key="k", base_url=url, max_retries=1)
    try:
        with pytest.raises(Unavailable, match="not JSON") as caught:
            await llm.ask(prompt("understand"))
    finally:
        await llm.aclose()
    assert "gave up after 2 attempts" in caught.value.message
    assert len(seen) == 4


def test_the_cloud_platforms_send_typed_requests() -> None:
    # Their clients read the model from the typed body to build the call's URL.
    assert BedrockLLM.typed_requests and VertexLLM.typed_requests
    assert not AnthropicLLM.typed_requests


async def test_requests_are_typed_exactly_where_the_sdk_may_trace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from opentelemetry import trace

    from baton_kafka.agents.models import claude

    plain = AnthropicLLM(api_key="k", base_url="http://127.0.0.1:9")
    monkeypatch.setattr(claude, "_tracer_provider", trace.NoOpTracerProvider)
    traced = AnthropicLLM(api_key="k", base_url="http://127.0.0.1:9")
    try:
        assert (plain._typed, traced._typed) == (False, True)
    finally:
        await plain.aclose()
        await traced.aclose()

"""An answer read from its body is the very ``Message`` the SDK's own reading makes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anthropic
import orjson
import pytest
from aiohttp import web

from baton_kafka.agents.models.message_body import read_message

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

    app = web.Application()
    app.router.add_post("/v1/messages", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


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

        ours = await read_message(await raw())
        theirs = await (await raw()).parse()
    finally:
        await client.close()
    assert type(ours) is type(theirs)
    # The SDK takes an unknown block as a known one; its dump then warns: compare without.
    assert ours.model_dump(warnings=False) == theirs.model_dump(warnings=False)
    assert [type(b) for b in ours.content] == [type(b) for b in theirs.content]
    assert ours._request_id == theirs._request_id == f"req_{len(name)}"

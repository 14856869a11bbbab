"""The stand-in's platform and chat wires refuse what the real endpoints refuse, on the wire."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from baton_kafka.agents.testing import Responder, StandIn
from tests.fixtures.agents import respond


@pytest.fixture
def responder() -> Responder:
    return respond


MESSAGES: dict[str, Any] = {"max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(
    ("path", "body", "complaint"),
    [
        ("/model/m/invoke", MESSAGES, "anthropic_version: Field required"),
        ("/model/m/invoke", {**MESSAGES, "model": "m", "anthropic_version": "v"}, "in the path"),
        ("/model/m/invoke", "not json", "expected a JSON object"),
        (
            "/projects/p/locations/r/publishers/anthropic/models/m:rawPredict",
            MESSAGES,
            "anthropic_version: Field required",
        ),
        ("/v1/chat/completions", {"model": "m", "messages": []}, "messages: Field required"),
        (
            "/v1/chat/completions",
            {
                "model": "m",
                "messages": [{"role": "user", "content": "hi"}],
                "response_format": {"type": "json_schema", "json_schema": {"name": "x"}},
            },
            "json_schema.schema: Field required",
        ),
    ],
)
async def test_malformed_requests_are_400_saying_why(
    own_standin: StandIn, path: str, body: Any, complaint: str
) -> None:
    async with httpx2.AsyncClient(base_url=own_standin.base_url) as http:
        sent = (
            await http.post(path, content=body.encode())
            if isinstance(body, str)
            else await http.post(path, json=body)
        )
    assert sent.status_code == 400
    assert complaint in sent.json()["error"]["message"]
    assert own_standin.stats()["calls"] == 0


async def test_an_unknown_vertex_method_is_404(own_standin: StandIn) -> None:
    path = "/projects/p/locations/r/publishers/anthropic/models/m:streamRawPredict"
    async with httpx2.AsyncClient(base_url=own_standin.base_url) as http:
        sent = await http.post(path, json={**MESSAGES, "anthropic_version": "v"})
    assert sent.status_code == 404


async def test_a_chat_error_keeps_its_status_and_retry_hint(own_standin: StandIn) -> None:
    own_standin.add_faults([{"fault": "529"}])
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    async with httpx2.AsyncClient(base_url=own_standin.base_url) as http:
        sent = await http.post("/v1/chat/completions", json=body)
    assert sent.status_code == 529 and "retry-after" in sent.headers
    assert sent.headers["x-request-id"].startswith("req_standin_")
    assert sent.json()["error"]["type"] == "overloaded_error"

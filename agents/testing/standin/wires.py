"""The other wires the stand-in answers on: Claude on Amazon Bedrock (``/model/{model}/invoke``)
and Vertex AI (``…/models/{model}:rawPredict``, ``count-tokens:rawPredict``), with the model in
the path and ``anthropic_version`` in the body, and an OpenAI-compatible server
(``/v1/chat/completions``). Each is read into a Messages call and answered by the stand-in's own
handler; its summary says the wire and how the caller authenticated, never the secret."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson
from aiohttp import web

from baton_kafka.agents.testing.standin.batches import Posted
from baton_kafka.agents.testing.standin.errors import error_response, request_id
from baton_kafka.agents.testing.standin.messages import chat_of_message, messages_of_chat

Answer = Callable[[web.Request, Mapping[str, Any] | None], Awaitable[web.Response]]
Count = Callable[[web.Request], Awaitable[web.Response]]

_VERTEX = "/projects/{project}/locations/{region}/publishers/anthropic/models/{tail}"


def _auth(http: web.Request) -> str | None:
    """How a request authenticated, never the secret: ``bearer``, ``x-api-key``, ``aws-sigv4``."""
    value = http.headers.get("authorization", "")
    if value.startswith("AWS4-HMAC-SHA256"):
        return "aws-sigv4"
    if value.lower().startswith("bearer "):
        return "bearer"
    return "x-api-key" if "x-api-key" in http.headers else None


class Wires:
    """The platform and chat routes over the stand-in's ``answer`` and ``count`` handlers;
    ``json_schema()`` says whether chat completions accept a JSON-schema response format."""

    def __init__(self, answer: Answer, count: Count, json_schema: Callable[[], bool]) -> None:
        self._answer, self._count, self._json_schema = answer, count, json_schema
        # Chat calls refused for their JSON-schema response format.
        self.refused = 0

    def routes(self, app: web.Application) -> None:
        """Add the routes to ``app``."""
        app.router.add_post("/model/{model}/invoke", self._bedrock)
        app.router.add_post(_VERTEX, self._vertex)
        app.router.add_post("/v1/chat/completions", self._chat)

    async def _body(self, http: web.Request) -> Any:
        try:
            return await http.json()
        except ValueError:
            return None

    async def _bedrock(self, http: web.Request) -> web.Response:
        body = await self._body(http)
        if not isinstance(body, dict):
            return error_response(400, "invalid_request_error", "body: expected a JSON object")
        if "model" in body:
            return error_response(
                400, "invalid_request_error", "model: belongs in the path on Bedrock"
            )
        if not body.get("anthropic_version"):
            return error_response(400, "invalid_request_error", "anthropic_version: Field required")
        wire = {"wire": "bedrock", "version": body["anthropic_version"], "auth": _auth(http)}
        posted = Posted.of({**body, "model": http.match_info["model"]})
        return await self._answer(posted, wire)

    async def _vertex(self, http: web.Request) -> web.Response:
        model, _, verb = http.match_info["tail"].partition(":")
        if verb != "rawPredict":
            return error_response(404, "not_found_error", f"no such method: {verb!r}")
        body = await self._body(http)
        if not isinstance(body, dict):
            return error_response(400, "invalid_request_error", "body: expected a JSON object")
        if not body.get("anthropic_version"):
            return error_response(400, "invalid_request_error", "anthropic_version: Field required")
        if model == "count-tokens":
            return await self._count(Posted.of(body))
        if "model" in body:
            return error_response(
                400, "invalid_request_error", "model: belongs in the path on Vertex AI"
            )
        wire = {
            "wire": "vertex",
            "version": body["anthropic_version"],
            "auth": _auth(http),
            "project": http.match_info["project"],
            "region": http.match_info["region"],
        }
        return await self._answer(Posted.of({**body, "model": model}), wire)

    async def _chat(self, http: web.Request) -> web.Response:
        try:
            body = messages_of_chat(await self._body(http))
        except ValueError as exc:
            return error_response(400, "invalid_request_error", str(exc))
        if "output_config" in body and not self._json_schema():
            self.refused += 1
            text = "response_format type 'json_schema' is not supported by this server"
            return error_response(400, "invalid_request_error", text)
        wire = {
            "wire": "chat",
            "auth": _auth(http),
            "schema": "output_config" in body,
            # Names only: a header's value may be a secret.
            "headers": sorted(k.lower() for k in http.headers),
        }
        response = await self._answer(Posted.of(body), wire)
        headers = {"x-request-id": response.headers.get("request-id", request_id())}
        headers.update(
            (k, v) for k, v in response.headers.items() if k.lower().startswith("retry-after")
        )
        if response.status != 200:
            assert isinstance(response.body, bytes)
            return web.Response(
                body=response.body,
                status=response.status,
                headers=headers,
                content_type="application/json",
            )
        assert isinstance(response.body, bytes)
        completion = chat_of_message(orjson.loads(response.body))
        return web.json_response(completion, headers=headers)

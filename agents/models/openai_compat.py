"""A self-hosted model behind an OpenAI-compatible chat completions endpoint (vLLM, Ollama,
llama.cpp's server, ...).

The request is the Messages request ``AnthropicLLM`` builds, sent as ``POST /chat/completions``:
the system prompt as a system message, structured output as a JSON-schema ``response_format``.
The answer comes back as a Messages answer, so retries, the time budget, the ledger and the
tolerant reading of the output are ``AnthropicLLM``'s: ``prompt_tokens`` (less its cached part)
are the input tokens, ``completion_tokens`` the output tokens, cached prompt tokens cache reads;
``finish_reason`` ``length`` is a truncation and ``content_filter`` (or a ``refusal``) a refusal.

A server that answers 400 to the JSON-schema ``response_format`` (it has no such mode) is asked
again at once with the schema in the prompt instead, and from then on, said once at WARNING.
The key, if any, is sent as a bearer token to this endpoint only, never an Anthropic key.

The wire is the ``openai`` SDK's (its retries off: retrying is ``AnthropicLLM``'s); only
baton's settings choose the endpoint and the key, never the SDK's ``OPENAI_*`` variables.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import httpx2
import openai
import orjson
from anthropic.types import Message

from baton_kafka.agents.models.api_errors import Attempt, retry_after_s, spend_limit_message
from baton_kafka.agents.models.capabilities import OPENAI_COMPATIBLE, Capabilities
from baton_kafka.agents.models.claude import AnthropicLLM, AttemptFailed
from baton_kafka.agents.models.llm import SpendLimit, TimedOut, Unavailable
from baton_kafka.agents.models.parsing import schema_text

log = logging.getLogger(__name__)

_RETRY_STATUS = frozenset({408, 409, 429})
_OVERLOAD_STATUS = frozenset({429, 503, 529})
_STOP = {"length": "max_tokens", "content_filter": "refusal"}
_NAME = re.compile(r"[^A-Za-z0-9_-]")
# Headers the SDK would fill from OPENAI_ORG_ID and OPENAI_PROJECT_ID (an Omit removes one).
_LEFT_OUT: Any = {"OpenAI-Organization": openai.Omit(), "OpenAI-Project": openai.Omit()}


def _system_text(system: Any) -> str:
    if isinstance(system, str):
        return system
    return "".join(str(block.get("text", "")) for block in system)


def chat_body(request: Mapping[str, Any]) -> dict[str, Any]:
    """The chat completions body of a Messages ``request``."""
    messages: list[dict[str, Any]] = []
    system = _system_text(request.get("system", ""))
    if system:
        messages.append({"role": "system", "content": system})
    messages.extend({"role": m["role"], "content": m["content"]} for m in request["messages"])
    body: dict[str, Any] = {
        "model": request["model"],
        "max_tokens": request["max_tokens"],
        "messages": messages,
    }
    fmt = (request.get("output_config") or {}).get("format")
    if fmt:
        schema = fmt["schema"]
        name = _NAME.sub("_", str(schema.get("title") or "answer"))[:64]
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": True},
        }
    return body


def message_of(data: Any, request_id: str | None) -> Message:
    """A chat completion as a Messages answer; ``ValueError`` if it is not one."""
    try:
        choice = data["choices"][0]
        said = choice["message"]
        text = said.get("content") or ""
        usage = data.get("usage") or {}
        prompt = int(usage.get("prompt_tokens") or 0)
        details = usage.get("prompt_tokens_details") or {}
        cached = min(prompt, int(details.get("cached_tokens") or 0))
        output = int(usage.get("completion_tokens") or 0)
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
        raise ValueError(f"not a chat completion ({type(exc).__name__}: {exc})") from None
    stop = "refusal" if said.get("refusal") else _STOP.get(choice.get("finish_reason"), "end_turn")
    message = Message.model_validate(
        {
            "id": str(data.get("id") or f"chatcmpl-{uuid.uuid4().hex[:12]}"),
            "type": "message",
            "role": "assistant",
            "model": str(data.get("model") or ""),
            "content": [{"type": "text", "text": text}] if text else [],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": prompt - cached,
                "output_tokens": output,
                "cache_read_input_tokens": cached,
                "cache_creation_input_tokens": 0,
            },
        }
    )
    message._request_id = request_id
    return message


def status_attempt(model: str, response: httpx2.Response, request_id: str | None) -> Attempt:
    """How a request that got an error status ended: retryable for 408, 409, 429 and 5xx."""
    try:
        body = response.json()
    except ValueError:
        body = None
    status = response.status_code
    error = body.get("error") if isinstance(body, dict) else None
    detail = error.get("message") if isinstance(error, dict) else None
    if not detail:
        detail = response.text[:200] or response.reason_phrase
    spent = spend_limit_message(body)
    if spent:
        return Attempt(
            SpendLimit(f"spend limit reached ({model}): {spent}", request_id=request_id), False
        )
    return Attempt(
        Unavailable(f"{model} failed: {status}: {detail}", request_id=request_id),
        status in _RETRY_STATUS or status >= 500,
        overloaded=status in _OVERLOAD_STATUS,
        retry_after_s=retry_after_s(response.headers),
    )


def _about_schema(response: httpx2.Response) -> bool:
    """Whether a 400 is about the response format (not, say, a prompt too long)."""
    text = response.text.lower()
    return any(word in text for word in ("response_format", "json_schema", "schema"))


def without_schema(request: Mapping[str, Any]) -> dict[str, Any]:
    """``request`` with its structured output moved into the system prompt."""
    out = dict(request)
    schema = out.pop("output_config")["format"]["schema"]
    out["system"] = _system_text(out.get("system", "")) + schema_text(schema)
    return out


class _ChatClient:
    """The wire: the ``openai`` SDK's client on the endpoint, and extra ``headers`` per call."""

    def __init__(self, http: httpx2.AsyncClient, base_url: str, api_key: str | None) -> None:
        # Only our settings speak: the SDK's own variables (OPENAI_API_KEY, OPENAI_ORG_ID,
        # OPENAI_PROJECT_ID, an Authorization in OPENAI_CUSTOM_HEADERS) must not reach a
        # self-hosted endpoint: the SDK is given a key so that it reads none of its own (the
        # Authorization header is set or left out per call), and no organization or project.
        self.sdk = openai.AsyncOpenAI(
            api_key=api_key or "unused",
            base_url=base_url.rstrip("/"),
            max_retries=0,
            http_client=http,
            default_headers=_LEFT_OUT,
        )
        # Per call, so that it wins over the SDK's and the environment's.
        self.authorization: Any = f"Bearer {api_key}" if api_key else openai.Omit()
        self.headers: dict[str, str] = {}

    async def close(self) -> None:
        await self.sdk.close()


class OpenAICompatibleLLM(AnthropicLLM):
    """A model behind ``{base_url}/chat/completions`` (``base_url`` ends in ``/v1`` usually)."""

    name = "openai"
    provider = "openai"
    capabilities: Capabilities = OPENAI_COMPATIBLE

    def __init__(self, *, base_url: str | None = None, **options: Any) -> None:
        if not base_url:
            raise ValueError(
                "an OpenAI-compatible model needs its endpoint (BATON_MODEL_URL), "
                "for example http://127.0.0.1:8080/v1"
            )
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"BATON_MODEL_URL must be an http(s) URL, got {base_url!r}")
        super().__init__(base_url=base_url, **options)

    def _make_client(self, **options: Any) -> Any:
        return _ChatClient(options["http_client"], str(options["base_url"]), options["api_key"])

    def _drop_structured_output(self, model: str, response: httpx2.Response) -> None:
        self.capabilities = replace(self.capabilities, structured_output=False)
        log.warning(
            "%s refused the JSON-schema response_format (%d: %s): the answer's schema goes "
            "into the prompt instead (BATON_MODEL_STRUCTURED_OUTPUT=off says so at start)",
            model,
            response.status_code,
            response.text[:200],
        )

    async def _call(
        self, request: dict[str, Any], timeout_s: float
    ) -> tuple[Message, Mapping[str, str]]:
        client: _ChatClient = self._client  # type: ignore[assignment]
        model = request["model"]
        try:
            raw = await client.sdk.chat.completions.with_raw_response.create(
                **chat_body(request),
                extra_headers={"Authorization": client.authorization, **client.headers},
                timeout=timeout_s,
            )
        except openai.APITimeoutError:
            late = TimedOut(f"{model} did not answer within {timeout_s:g} s")
            raise AttemptFailed(Attempt(late, True)) from None
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            raise AttemptFailed(
                Attempt(Unavailable(f"{model} unreachable: {cause}"), True)
            ) from None
        except openai.APIStatusError as exc:
            response = exc.response
            if (
                response.status_code == 400
                and request.get("output_config")
                and _about_schema(response)
            ):
                # A server without a JSON-schema mode: the schema goes into the prompt from now on.
                self._drop_structured_output(model, response)
                return await self._call(without_schema(request), timeout_s)
            request_id = _request_id(response.headers)
            raise AttemptFailed(
                status_attempt(model, response, request_id), response.headers
            ) from None
        response = raw.http_response
        headers = response.headers
        request_id = _request_id(headers)
        try:
            # Read as it came: a server's answer that is not a chat completion is named so.
            return message_of(orjson.loads(response.content), request_id), headers
        except ValueError as exc:
            failure = Unavailable(f"{model} sent a malformed answer: {exc}", request_id=request_id)
            raise AttemptFailed(Attempt(failure, False), headers) from None


def _request_id(headers: Mapping[str, str]) -> str | None:
    return headers.get("x-request-id") or headers.get("request-id")

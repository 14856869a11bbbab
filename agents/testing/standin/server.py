"""The stand-in's HTTP server: Messages API calls answered, delayed or failed, and counted."""

from __future__ import annotations

import asyncio
import math
import random
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import orjson
from aiohttp import web
from pydantic import BaseModel

from baton_kafka.agents.testing.standin.batches import BatchDesk, Posted
from baton_kafka.agents.testing.standin.caching import PromptCache, estimate_tokens
from baton_kafka.agents.testing.standin.errors import error_response, request_id
from baton_kafka.agents.testing.standin.faults import (
    API_ERRORS,
    NOT_JSON,
    SPEND_LIMIT_CODE,
    FaultPlan,
    FaultRule,
    spoil,
)
from baton_kafka.agents.testing.standin.messages import (
    Request,
    Responder,
    echo_responder,
    read_count_request,
    read_request,
)
from baton_kafka.agents.testing.standin.ratelimits import RateBudget, RateWindow
from baton_kafka.agents.testing.standin.weak import WeakStyle
from baton_kafka.agents.testing.standin.wires import Wires


class StandIn:
    """The stand-in server: ``async with StandIn() as s`` serves the API on ``s.base_url``.

    A message batch ends ``batch_delay_s`` after it was created; its requests not answered
    within ``batch_expire_s`` expire. ``stats()`` counts batches (``batches``,
    ``batch_requests``) and their requests by stage and fault, not as ``calls``.

    Answers (faulty ones included) wait ``latency`` ± uniform ``jitter`` seconds; API errors are
    immediate, as the real API's usually are. With a ``rate_limit`` every answer carries the
    ``anthropic-ratelimit-*`` headers and a call past the budget gets a 429. Token counts
    (``/v1/messages/count_tokens``) are the deterministic estimate of the system and message
    text, and fail with a 500 while ``count_tokens_fails`` is set.
    """

    def __init__(
        self,
        *,
        latency: float = 0.0,
        jitter: float = 0.0,
        responder: Responder | None = None,
        retry_after: float = 1.0,
        hang_s: float = 3600.0,
        batch_delay_s: float = 0.0,
        batch_expire_s: float = 2.0,
        min_cache_tokens: int | None = 0,
        host: str = "127.0.0.1",
        port: int = 0,
        seed: int = 0,
        rate_limit: RateBudget | None = None,
        style: WeakStyle | None = None,
        chat_json_schema: bool = True,
    ) -> None:
        self.latency, self.jitter, self.hang_s = latency, jitter, hang_s
        # A weak model's habits (None: a healthy model's answers).
        self.style = style
        # False: /v1/chat/completions refuses a JSON-schema response_format, as a server
        # without that mode does.
        self.chat_json_schema = chat_json_schema
        self.wires = Wires(self._messages, self._count_tokens, lambda: self.chat_json_schema)
        self.retry_after = retry_after
        self.cache = PromptCache(min_cache_tokens)
        self.faults = FaultPlan()
        self.rate_limit = RateWindow(rate_limit) if rate_limit else None
        self.count_tokens_fails = False
        self._started = time.monotonic()
        self.responder: Responder = responder or echo_responder
        self.host, self.port, self.base_url = host, port, ""
        self._random = random.Random(seed)
        # Handlers run on the server's loop while stats() may be called from another thread.
        self._lock = threading.Lock()
        self._runner: web.AppRunner | None = None
        # A batch's requests go through the very handler of POST /v1/messages.
        self.batches = BatchDesk(
            lambda body: self._answer(Posted.of(body)),
            delay_s=batch_delay_s,
            expire_s=batch_expire_s,
            base_url=lambda: self.base_url,
        )
        self._clear()

    def _clear(self) -> None:
        self._calls, self._in_flight, self._max_in_flight = 0, 0, 0
        self._answered = 0
        self.wires.refused = 0
        self._counts = 0
        self._request_ids: deque[str] = deque(maxlen=10_000)
        self._by_stage: Counter[str] = Counter()
        self._by_fault: Counter[str] = Counter()
        self._requests: deque[dict[str, Any]] = deque(maxlen=10_000)

    async def start(self) -> str:
        """Bind and serve; return the base URL."""
        app = web.Application(client_max_size=8 * 1024 * 1024)
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/messages/count_tokens", self._count_tokens)
        # Claude on Amazon Bedrock and Vertex AI, and an OpenAI-compatible server.
        self.wires.routes(app)
        app.router.add_post("/_control/faults", self._control_faults)
        app.router.add_post("/_control/reset", self._control_reset)
        app.router.add_get("/_control/stats", self._control_stats)
        self.batches.routes(app)
        # Cancelling a handler whose client hung up ends a [[fault:hang]] with its caller.
        self._runner = web.AppRunner(
            app, handler_cancellation=True, access_log=None, shutdown_timeout=0.5
        )
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, self.port).start()
        host, port = self._runner.addresses[0][:2]
        self.base_url = f"http://{host}:{port}"
        return self.base_url

    async def stop(self) -> None:
        """Stop serving, cancelling calls in flight."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> StandIn:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def add_faults(self, rules: Iterable[FaultRule | Mapping[str, Any]]) -> None:
        """Queue fault rules; each call takes the first rule that matches and still has uses."""
        self.faults.add(rules)

    def reset(self) -> None:
        """Forget faults, directive counts, the prompt cache and the stats."""
        with self._lock:
            self._clear()
        self.faults.clear()
        self.cache.clear()
        self.batches.clear()

    def stats(self) -> dict[str, Any]:
        """Counts of calls (total, by stage, by fault), concurrency, token counts, one summary
        and the ``request-id`` sent per call."""
        with self._lock:
            return {
                **self.batches.stats(),
                "calls": self._calls,
                "by_stage": dict(self._by_stage),
                "by_fault": dict(self._by_fault)
                | ({"json_schema_refused": self.wires.refused} if self.wires.refused else {}),
                "in_flight": self._in_flight,
                "max_in_flight": self._max_in_flight,
                "token_counts": self._counts,
                "request_ids": list(self._request_ids),
                "requests": [dict(r) for r in self._requests],
            }

    def _note(self, summary: dict[str, Any], **values: Any) -> None:
        with self._lock:
            summary.update(values)

    def _output(self, request: Request, fault: str | None) -> str:
        if fault == "invalid_json":
            return NOT_JSON
        if fault == "refusal":
            return ""
        answer = self.responder(request)
        if self.style is not None:
            answer = self.style.answer(request, answer)
        if isinstance(answer, BaseModel):
            text = answer.model_dump_json()
        else:
            text = answer if isinstance(answer, str) else orjson.dumps(dict(answer)).decode()
        text = spoil(text, fault, request.stage, request.schema)
        if self.style is not None and fault != "max_tokens":
            text = self.style.wrap_text(request, text)
        return text

    async def _messages(
        self, http: web.Request, wire: Mapping[str, Any] | None = None
    ) -> web.Response:
        with self._lock:
            self._calls += 1
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
        response: web.Response | None = None
        try:
            response = await self._answer(http, wire)
            return response
        finally:
            with self._lock:
                self._in_flight -= 1
                if response is not None and "request-id" in response.headers:
                    self._request_ids.append(response.headers["request-id"])

    async def _count_tokens(self, http: web.Request) -> web.Response:
        with self._lock:
            self._counts += 1
        if self.count_tokens_fails:
            return error_response(
                500, "api_error", "stand-in: token counting is failing on request"
            )
        try:
            system, text = read_count_request(await http.json(loads=orjson.loads))
        except ValueError as exc:
            return error_response(400, "invalid_request_error", str(exc))
        tokens = estimate_tokens(system) + estimate_tokens(text)
        return web.json_response({"input_tokens": tokens}, headers={"request-id": request_id()})

    async def _answer(
        self, http: web.Request, wire: Mapping[str, Any] | None = None
    ) -> web.Response:
        try:
            # orjson: the stand-in's parse of a 30 KB request costs the machine the worker runs on.
            request = read_request(await http.json(loads=orjson.loads))
        except ValueError as exc:
            return error_response(400, "invalid_request_error", str(exc))
        limits: dict[str, str] = {}
        if self.rate_limit is not None:
            tokens = estimate_tokens(request.system) + estimate_tokens(request.text)
            allowed, limits = self.rate_limit.take(tokens)
            if not allowed:
                with self._lock:
                    self._by_fault["rate_limited"] += 1
                    self._requests.append({"stage": request.stage, "status": 429})
                response = error_response(429, "rate_limit_error", "stand-in: rate limit exceeded")
                response.headers.update(limits)
                return response
        response = await self._reply(request, wire)
        response.headers.update(limits)
        return response

    async def _reply(self, request: Request, wire: Mapping[str, Any] | None = None) -> web.Response:
        fault = self.faults.take(request)
        summary: dict[str, Any] = {
            "stage": request.stage,
            "ticket_id": request.facts.ticket_id if request.facts else None,
            "model": request.model,
            "max_tokens": request.max_tokens,
            "fault": fault,
            "status": 200,
            "at": round(time.monotonic() - self._started, 4),
            **(wire or {}),
        }
        with self._lock:
            summary["in_flight"] = self._in_flight
            first = self._answered == 0
            self._answered += 1
            self._by_stage[request.stage] += 1
            if fault:
                self._by_fault[fault] += 1
            self._requests.append(summary)
        if fault in API_ERRORS:
            status, kind, text = API_ERRORS[fault]
            self._note(summary, status=status)
            if fault == "spend_limit":
                return error_response(status, kind, text, details={"error_code": SPEND_LIMIT_CODE})
            response = error_response(status, kind, text)
            response.headers["retry-after"] = str(max(1, math.ceil(self.retry_after)))
            response.headers["retry-after-ms"] = str(int(self.retry_after * 1000))
            return response
        if fault == "hang":
            # 499 (client closed request) stays unless the hang outlives its caller.
            self._note(summary, status=499)
            await asyncio.sleep(self.hang_s)
            self._note(summary, status=200)
        spread = self._random.uniform(-self.jitter, self.jitter) if self.jitter else 0.0
        slow = self.style.delay_s(first) if self.style is not None else 0.0
        await asyncio.sleep(max(0.0, self.latency + spread + slow))
        try:
            output = self._output(request, fault)
        except Exception as exc:
            self._note(summary, status=500)
            response = error_response(500, "api_error", f"stand-in responder failed: {exc!r}")
            # A responder bug is not transient: tell the SDK not to retry it.
            response.headers["x-should-retry"] = "false"
            return response
        output_tokens = request.max_tokens if fault == "max_tokens" else None
        usage = self.cache.usage(request, output, output_tokens)
        self._note(summary, **usage)
        stop = fault if fault in ("max_tokens", "refusal") else "end_turn"
        message: dict[str, Any] = {
            "id": f"msg_standin_{uuid.uuid4().hex[:20]}",
            "type": "message",
            "role": "assistant",
            "model": request.model,
            "content": [{"type": "text", "text": output}] if output else [],
            "stop_reason": stop,
            "stop_details": {"type": "refusal"} if stop == "refusal" else None,
            "stop_sequence": None,
            "usage": usage,
        }
        return web.json_response(message, headers={"request-id": request_id()})

    async def _control_faults(self, http: web.Request) -> web.Response:
        try:
            data = await http.json()
            self.add_faults(data if isinstance(data, list) else [data])
        except (ValueError, TypeError) as exc:
            return error_response(400, "invalid_request_error", str(exc))
        return web.json_response({"queued": len(data) if isinstance(data, list) else 1})

    async def _control_reset(self, http: web.Request) -> web.Response:
        self.reset()
        return web.json_response({"reset": True})

    async def _control_stats(self, http: web.Request) -> web.Response:
        return web.json_response(self.stats())


@contextmanager
def run_in_thread(**options: Any) -> Iterator[StandIn]:
    """Serve a ``StandIn(**options)`` from a background thread with its own event loop."""
    standin = StandIn(**options)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="baton-standin", daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(standin.start(), loop).result(timeout=30)
        yield standin
    finally:
        try:
            asyncio.run_coroutine_threadsafe(standin.stop(), loop).result(timeout=30)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=30)
            loop.close()

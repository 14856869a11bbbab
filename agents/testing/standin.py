"""A local stand-in of the Anthropic Messages API: it echoes the prompt's facts and fails on demand.

Faults are deterministic. A customer message may carry directives such as ``[[fault:429]]`` or
``[[fault:invalid_json:understand:2]]`` (fault, then optional stage and count, default any stage
and 1): the first ``count`` calls of each matching stage for that ticket fail, later ones behave.
Tests may instead queue rules through ``StandIn.add_faults`` or ``POST /_control/faults``.

Faults: ``invalid_json`` (not JSON), ``schema`` (a required field missing), ``rule`` (JSON the
wire schema accepts but the business rules do not, see ``RULE_BREAKS``), ``drift`` (strategy
only: a reply that names neither the order nor the product), ``max_tokens`` (cut-off JSON),
``refusal``, ``hang`` (no answer for ``hang_s``), ``429`` / ``529`` / ``500`` (API errors
advertising ``retry_after``) and ``spend_limit`` (a 429 that retrying cannot fix).

Prompt caching follows the API: every system block with ``cache_control`` is a breakpoint; a
call reads the longest cached prefix and writes up to its last breakpoint, for prefixes of at
least ``min_cache_tokens`` (``None``: each model's documented minimum).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import math
import random
import re
import signal
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web
from pydantic import BaseModel

from agents.prompts import Facts, parse_context

STAGE_OF_TITLE = {
    "Understanding": "understand",
    "OrderChoice": "lookup",
    "StrategyDraft": "strategy",
}
# Schema-valid on the wire (bounds only travel as descriptions) but against the business rules.
RULE_BREAKS: dict[str, dict[str, Any]] = {
    "understand": {"product": "Invented Gadget 9000"},
    "lookup": {"order_id": "ORD-INVENTED-0000"},
    "strategy": {"confidence": 1.7},
}
_DIRECTIVE = re.compile(r"\[\[fault:([a-z0-9_]+)((?::[a-z0-9_*]*)*)\]\]")
_CJK = re.compile(
    r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef]"
)
SPEND_LIMIT_CODE = "enforced_spend_limit_reached"
_ERRORS = {
    "429": (429, "rate_limit_error", "Number of request tokens has exceeded your rate limit."),
    "529": (529, "overloaded_error", "Overloaded"),
    "500": (500, "api_error", "Internal server error"),
    "spend_limit": (429, "rate_limit_error", "You have reached your specified API usage limits."),
}
DRIFTED = {
    "solution": "Look into the customer's message.",
    "reply": "Thank you for contacting us. We have received your message and will get back to you.",
}
FAULTS = frozenset(
    {*_ERRORS, "invalid_json", "schema", "rule", "drift", "hang", "max_tokens", "refusal"}
)


@dataclass(frozen=True)
class Request:
    """One Messages call as the stand-in read it; what a responder answers."""

    stage: str
    model: str
    max_tokens: int
    system: str
    cache_breaks: tuple[int, ...]
    text: str
    schema: dict[str, Any]
    facts: Facts | None
    facts_error: str = ""

    @property
    def cache_system(self) -> bool:
        """Whether any system block asked to be cached."""
        return bool(self.cache_breaks)


Responder = Callable[[Request], BaseModel | Mapping[str, Any] | str]


@dataclass
class FaultRule:
    """A queued fault: the next ``times`` calls matching ``match`` and ``stage`` get ``fault``."""

    fault: str
    match: str | None = None
    stage: str | None = None
    times: int = 1

    @classmethod
    def of(cls, rule: FaultRule | Mapping[str, Any]) -> FaultRule:
        data = dict(vars(rule)) if isinstance(rule, FaultRule) else dict(rule)
        made = cls(**data)
        if made.fault not in FAULTS:
            raise ValueError(f"unknown fault {made.fault!r}; known: {sorted(FAULTS)}")
        if not isinstance(made.times, int) or made.times < 1:
            raise ValueError("times must be a positive integer")
        return made


def estimate_tokens(text: str) -> int:
    """Roughly count tokens: one per CJK character, one per four other characters."""
    cjk = len(_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


def directives(message: str) -> list[tuple[str, str | None, int]]:
    """The ``[[fault:NAME[:STAGE][:COUNT]]]`` directives of a message as (fault, stage, count)."""
    found = []
    for match in _DIRECTIVE.finditer(message):
        stage, times = None, 1
        for part in match.group(2).split(":")[1:]:
            if part.isdigit():
                times = int(part)
            elif part not in ("", "any", "*"):
                stage = part
        if match.group(1) in FAULTS:
            found.append((match.group(1), stage, times))
    return found


def echo_responder(request: Request) -> BaseModel:
    """Answer with the offline rules over the facts in the prompt, so it can only repeat them."""
    from agents.rules import offline

    if request.facts is None:
        raise ValueError(f"cannot read the prompt's facts: {request.facts_error}")
    rules: dict[str, Callable[[Facts], BaseModel]] = {
        "understand": offline.understand_rules,
        "lookup": offline.choose_rules,
        "strategy": offline.strategy_rules,
    }
    if request.stage not in rules:
        raise ValueError(f"no rules for stage {request.stage!r}")
    return rules[request.stage](request.facts)


def _cache_breaks(system: Any) -> tuple[int, ...]:
    """Where, in the joined system text, each block marked ``cache_control`` ends."""
    if not isinstance(system, list):
        return ()
    ends, at = [], 0
    for block in system:
        if isinstance(block, dict) and block.get("type") == "text":
            at += len(str(block.get("text", "")))
            if block.get("cache_control"):
                ends.append(at)
    return tuple(ends)


def _text(content: Any, what: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(b, dict) for b in content):
        return "".join(str(b.get("text", "")) for b in content if b.get("type") == "text")
    raise ValueError(f"{what}: expected a string or a list of content blocks")


def read_request(body: Any) -> Request:
    """Validate a Messages request body; raise ``ValueError`` saying what is malformed."""
    if not isinstance(body, dict):
        raise ValueError("body: expected a JSON object")
    model, max_tokens, messages = body.get("model"), body.get("max_tokens"), body.get("messages")
    if not isinstance(model, str) or not model:
        raise ValueError("model: Field required")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise ValueError("max_tokens: Field required (a positive integer)")
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        raise ValueError("messages: Field required (a non-empty list)")
    if messages[-1].get("role") != "user":
        raise ValueError("messages: the last message must have role 'user'")
    text = _text(messages[-1].get("content"), "messages.content")
    system = body.get("system", "")
    config = body.get("output_config")
    fmt = config.get("format") if isinstance(config, dict) else None
    schema = (
        fmt.get("schema") if isinstance(fmt, dict) and fmt.get("type") == "json_schema" else None
    )
    facts: Facts | None = None
    facts_error = ""
    try:
        facts = parse_context(text)
    except ValueError as exc:
        facts_error = str(exc)
    schema = schema if isinstance(schema, dict) else {}
    stage = STAGE_OF_TITLE.get(str(schema.get("title")), facts.stage if facts else "other")
    return Request(
        stage=stage,
        model=model,
        max_tokens=max_tokens,
        system=_text(system, "system"),
        cache_breaks=_cache_breaks(system),
        text=text,
        schema=schema,
        facts=facts,
        facts_error=facts_error,
    )


def _request_id() -> str:
    return f"req_standin_{uuid.uuid4().hex[:20]}"


def _error(status: int, kind: str, message: str, **extra: Any) -> web.Response:
    error: dict[str, Any] = {"type": kind, "message": message, **extra}
    request_id = _request_id()
    body = {"type": "error", "error": error, "request_id": request_id}
    return web.json_response(body, status=status, headers={"request-id": request_id})


class StandIn:
    """The stand-in server: ``async with StandIn() as s`` serves the API on ``s.base_url``.

    Answers (faulty ones included) wait ``latency`` ± uniform ``jitter`` seconds; API errors are
    immediate, as the real API's usually are.
    """

    def __init__(
        self,
        *,
        latency: float = 0.0,
        jitter: float = 0.0,
        responder: Responder | None = None,
        retry_after: float = 1.0,
        hang_s: float = 3600.0,
        min_cache_tokens: int | None = 0,
        host: str = "127.0.0.1",
        port: int = 0,
        seed: int = 0,
    ) -> None:
        self.latency, self.jitter, self.hang_s = latency, jitter, hang_s
        self.retry_after = retry_after
        # The real API caches nothing below a model-specific minimum (1024 to 4096 tokens).
        self.min_cache_tokens = min_cache_tokens
        self._started = time.monotonic()
        self.responder: Responder = responder or echo_responder
        self.host, self.port, self.base_url = host, port, ""
        self._random = random.Random(seed)
        # Handlers run on the server's loop while stats() may be called from another thread.
        self._lock = threading.Lock()
        self._runner: web.AppRunner | None = None
        self._clear()

    def _clear(self) -> None:
        self._rules: list[FaultRule] = []
        self._fired: Counter[tuple[str, str, str]] = Counter()
        self._cached: set[str] = set()
        self._calls, self._in_flight, self._max_in_flight = 0, 0, 0
        self._by_stage: Counter[str] = Counter()
        self._by_fault: Counter[str] = Counter()
        self._requests: deque[dict[str, Any]] = deque(maxlen=10_000)

    async def start(self) -> str:
        """Bind and serve; return the base URL."""
        app = web.Application(client_max_size=8 * 1024 * 1024)
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/_control/faults", self._control_faults)
        app.router.add_post("/_control/reset", self._control_reset)
        app.router.add_get("/_control/stats", self._control_stats)
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
        made = [FaultRule.of(rule) for rule in rules]
        with self._lock:
            self._rules.extend(made)

    def reset(self) -> None:
        """Forget faults, directive counts, the prompt cache and the stats."""
        with self._lock:
            self._clear()

    def stats(self) -> dict[str, Any]:
        """Counts of calls (total, by stage, by fault), concurrency, and one summary per call."""
        with self._lock:
            return {
                "calls": self._calls,
                "by_stage": dict(self._by_stage),
                "by_fault": dict(self._by_fault),
                "in_flight": self._in_flight,
                "max_in_flight": self._max_in_flight,
                "requests": [dict(r) for r in self._requests],
            }

    def _note(self, summary: dict[str, Any], **values: Any) -> None:
        with self._lock:
            summary.update(values)

    def _fault_for(self, request: Request) -> str | None:
        facts = request.facts
        message = facts.message if facts else request.text
        key = facts.ticket_id if facts else hashlib.sha256(message.encode()).hexdigest()
        with self._lock:
            for rule in self._rules:
                if rule.stage not in (None, request.stage) or rule.times < 1:
                    continue
                if rule.match is None or rule.match in request.text:
                    rule.times -= 1
                    return rule.fault
            for fault, stage, times in directives(message):
                if fault == "drift" and request.stage != "strategy":
                    continue
                fired = (key, request.stage, fault)
                if stage in (None, request.stage) and self._fired[fired] < times:
                    self._fired[fired] += 1
                    return fault
        return None

    def _min_cache(self, model: str) -> int:
        if self.min_cache_tokens is None:
            from agents.models.prices import min_cacheable_tokens

            return min_cacheable_tokens(model)
        return max(self.min_cache_tokens, 1)

    def _usage(self, request: Request, output: str, output_tokens: int | None) -> dict[str, int]:
        system, rest = estimate_tokens(request.system), estimate_tokens(request.text)
        minimum = self._min_cache(request.model)
        prefixes = []
        for end in request.cache_breaks:
            tokens = estimate_tokens(request.system[:end])
            if tokens >= minimum:
                key = hashlib.sha256(f"{request.model}\0{request.system[:end]}".encode())
                prefixes.append((key.hexdigest(), tokens))
        read = write = 0
        if prefixes:
            with self._lock:
                read = max((n for key, n in prefixes if key in self._cached), default=0)
                self._cached.update(key for key, _ in prefixes)
            write = prefixes[-1][1] - read
        return {
            "input_tokens": max(0, system - read - write) + rest,
            "output_tokens": output_tokens or max(1, estimate_tokens(output)),
            "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read,
        }

    def _output(self, request: Request, fault: str | None) -> str:
        if fault == "invalid_json":
            return 'Here is the JSON you asked for: {"answer": yes, '
        if fault == "refusal":
            return ""
        answer = self.responder(request)
        if isinstance(answer, BaseModel):
            text = answer.model_dump_json()
        else:
            text = answer if isinstance(answer, str) else orjson.dumps(dict(answer)).decode()
        if fault == "max_tokens":
            return text[: max(1, len(text) // 2)]
        if fault in ("schema", "rule", "drift"):
            data = orjson.loads(text)
            if fault == "drift":
                data.update(DRIFTED if request.stage == "strategy" else {})
            elif fault == "rule":
                data.update(RULE_BREAKS.get(request.stage, {}))
            else:
                for name in list(request.schema.get("required") or data)[:1]:
                    data.pop(name, None)
            text = orjson.dumps(data).decode()
        return text

    async def _messages(self, http: web.Request) -> web.Response:
        with self._lock:
            self._calls += 1
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
        try:
            return await self._answer(http)
        finally:
            with self._lock:
                self._in_flight -= 1

    async def _answer(self, http: web.Request) -> web.Response:
        try:
            request = read_request(await http.json())
        except ValueError as exc:
            return _error(400, "invalid_request_error", str(exc))
        fault = self._fault_for(request)
        summary: dict[str, Any] = {
            "stage": request.stage,
            "ticket_id": request.facts.ticket_id if request.facts else None,
            "model": request.model,
            "max_tokens": request.max_tokens,
            "fault": fault,
            "status": 200,
            "at": round(time.monotonic() - self._started, 4),
        }
        with self._lock:
            summary["in_flight"] = self._in_flight
            self._by_stage[request.stage] += 1
            if fault:
                self._by_fault[fault] += 1
            self._requests.append(summary)
        if fault in _ERRORS:
            status, kind, text = _ERRORS[fault]
            self._note(summary, status=status)
            if fault == "spend_limit":
                return _error(status, kind, text, details={"error_code": SPEND_LIMIT_CODE})
            response = _error(status, kind, text)
            response.headers["retry-after"] = str(max(1, math.ceil(self.retry_after)))
            response.headers["retry-after-ms"] = str(int(self.retry_after * 1000))
            return response
        if fault == "hang":
            # 499 (client closed request) stays unless the hang outlives its caller.
            self._note(summary, status=499)
            await asyncio.sleep(self.hang_s)
            self._note(summary, status=200)
        spread = self._random.uniform(-self.jitter, self.jitter) if self.jitter else 0.0
        await asyncio.sleep(max(0.0, self.latency + spread))
        try:
            output = self._output(request, fault)
        except Exception as exc:
            self._note(summary, status=500)
            response = _error(500, "api_error", f"stand-in responder failed: {exc!r}")
            # A responder bug is not transient: tell the SDK not to retry it.
            response.headers["x-should-retry"] = "false"
            return response
        usage = self._usage(request, output, request.max_tokens if fault == "max_tokens" else None)
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
        return web.json_response(message, headers={"request-id": _request_id()})

    async def _control_faults(self, http: web.Request) -> web.Response:
        try:
            data = await http.json()
            self.add_faults(data if isinstance(data, list) else [data])
        except (ValueError, TypeError) as exc:
            return _error(400, "invalid_request_error", str(exc))
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


async def _serve(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    options = {"latency": args.latency, "jitter": args.jitter, "retry_after": args.retry_after}
    async with StandIn(host=args.host, port=args.port, seed=args.seed, **options) as standin:
        print(standin.base_url, flush=True)
        await stop.wait()


def main(argv: list[str] | None = None) -> None:
    """Run the stand-in until interrupted, printing its base URL first."""
    parser = argparse.ArgumentParser(prog="python -m agents.testing.standin", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per answer")
    parser.add_argument("--jitter", type=float, default=0.0, help="± uniform seconds")
    parser.add_argument("--retry-after", type=float, default=1.0, help="seconds, on 429/529/500")
    parser.add_argument("--seed", type=int, default=0)
    asyncio.run(_serve(parser.parse_args(argv)))


if __name__ == "__main__":
    main()

"""The LLM protocol over the Anthropic Messages API: structured output, retries, caching, prices.

Transient failures (429, 529, 5xx, connection errors, timeouts) are retried here, not by the
SDK: ``max_retries`` times with jittered exponential backoff that never comes sooner than the
server's ``retry-after``, and never past the ticket's model time budget (``ticket_budget_s``,
all calls of one ticket together, waiting for a slot included). Calls in flight are bounded by
an AIMD limit that halves when the API says it is overloaded (429, 529) and grows back as calls
succeed, so an overload slows the worker down instead of piling retries onto it. A spend-limit
429 is never retried and is logged at ERROR at most once a minute.

Calls are costed with ``agents.models.prices``, updated by the constructor's ``prices``. Every
response's ``anthropic-ratelimit-*`` headers feed ``agents.models.ratelimits``, which holds new
calls before a budget runs out; every call's ``request-id`` is kept in its usage, its failure and
its log line. A model with no price costs unknown (``cost_usd`` None), not 0.

The request follows the provider's ``capabilities``: without structured output the answer's
schema goes into the system prompt, without caching no breakpoints are sent; the answer is read
tolerantly either way (``agents.models.parsing``). Subclasses change the client
(``_make_client``: Bedrock, Vertex AI) or the wire (``_call``: an OpenAI-compatible server);
``LatencyWatch`` times the first calls against the limits.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar

import anthropic
import httpx2
import orjson
from anthropic.types import Message
from opentelemetry import trace
from pydantic import BaseModel

from baton_kafka.agents.models import genai
from baton_kafka.agents.models.api_errors import Attempt, attempt_failure, retry_cause
from baton_kafka.agents.models.capabilities import FIRST_PARTY, Capabilities, StructuredOutput
from baton_kafka.agents.models.latency import LatencyWatch
from baton_kafka.agents.models.llm import (
    Answer,
    ModelFailure,
    OutputInvalid,
    Prompt,
    Refused,
    SpendLimit,
    TimedOut,
    Truncated,
    Unavailable,
)
from baton_kafka.agents.models.message_body import NotAMessage, read_message
from baton_kafka.agents.models.pacing import (
    AdaptiveLimit,
    Clock,
    Throttle,
    TicketClock,
    retry_delay_s,
)
from baton_kafka.agents.models.parsing import parse_output
from baton_kafka.agents.models.prices import PRICES, Price, cost, min_cacheable_tokens, price_for
from baton_kafka.agents.models.ratelimits import RateLimitPacer
from baton_kafka.agents.models.request_shape import messages_request
from baton_kafka.agents.models.tokens import ApiCounter, Counter, Estimator, TokenCount
from baton_kafka.schemas.records import CallUsage, StageName

T = TypeVar("T", bound=BaseModel)

log = logging.getLogger(__name__)

SPEND_ALARM_INTERVAL_S = 60.0
MESSAGES_PATH = "/v1/messages"


class OutOfTime(TimedOut):
    """The ticket's model time budget ran out: no further call for it."""


def sdk_spans(provider: trace.TracerProvider) -> Literal[False] | None:
    """The SDK's OpenTelemetry option: its own settings where a tracer provider is set, else off.

    Without a provider (OpenTelemetry's default proxy) the SDK's spans record nothing but still
    build their attributes on every call (1.6 % of a busy worker's profile samples).
    """
    return False if isinstance(provider, trace.ProxyTracerProvider) else None


def _tracer_provider() -> trace.TracerProvider:
    try:
        return trace.get_tracer_provider()
    except Exception:
        # A provider named by OTEL_PYTHON_TRACER_PROVIDER that cannot load: the SDK has no
        # spans then either.
        return trace.ProxyTracerProvider()


class AttemptFailed(Exception):
    """One request of a provider without the SDK's errors failed: how, and its headers."""

    def __init__(self, attempt: Attempt, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(attempt.failure.message)
        self.attempt = attempt
        self.headers = headers


class AnthropicLLM:
    """Claude through the official SDK; one instance per worker, ``concurrency`` calls at most."""

    name = "anthropic"
    # The provider as OpenTelemetry's GenAI conventions name it.
    provider = "anthropic"
    capabilities: Capabilities = FIRST_PARTY
    # A client that reads the typed body to route the call (the cloud platforms put the model
    # in the URL) is sent every request through ``messages.create``; so is any client while a
    # tracer provider is set. Otherwise the request goes as the JSON it already is.
    typed_requests = False

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        model: str = "claude-haiku-4-5",
        stage_models: Mapping[str, str] | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        concurrency: int = 8,
        ticket_budget_s: float = 180.0,
        prices: Mapping[str, Price] | None = None,
        cache_min_tokens: Mapping[str, int] | None = None,
        structured_output: StructuredOutput = "auto",
        ratelimit_reserve: float = 0.05,
        ratelimit_max_wait_s: float = 30.0,
        clock: Clock = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.capabilities = type(self).capabilities.with_structured_output(structured_output)
        self.model = model
        self.stage_models = dict(stage_models or {})
        self.prices = {**PRICES, **(prices or {})}
        self.cache_min_tokens = dict(cache_min_tokens or {})
        # Answers whose JSON was recovered from a fence or prose.
        self.recovered = 0
        self.unpriced: set[str] = set()
        self.timeout_s = timeout_s
        self.max_retries = max(0, max_retries)
        self.limit = AdaptiveLimit(concurrency, clock=clock)
        self.tickets = TicketClock(ticket_budget_s)
        self.latency = LatencyWatch(timeout_s, ticket_budget_s, concurrency)
        self.spend_alarm = Throttle(SPEND_ALARM_INTERVAL_S, clock=clock)
        self.pacer = RateLimitPacer(
            reserve=ratelimit_reserve, max_wait_s=ratelimit_max_wait_s, clock=clock
        )
        self._uncached: set[tuple[str, str]] = set()
        self._clock = clock
        self._rng = rng or random.Random()
        # Optional: called as on_retry(model, cause) before each backoff (the worker's metrics).
        self.on_retry: Callable[[str, str], None] | None = None
        # None lets the SDK read ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL itself; retrying is
        # ours, so the limit and the ticket's time budget see every attempt.
        # The SDK keeps only 100 idle connections: past that, every call would open (and on
        # the real API, handshake) a new one. Keep one per call slot, and never cap below it.
        # The aiohttp transport costs half the CPU per call of httpx's own pool, which scans
        # every pooled connection on each request: with hundreds of calls in flight the HTTP
        # stack was the worker's largest cost.
        limits = httpx2.Limits(
            max_connections=max(1000, concurrency), max_keepalive_connections=max(1, concurrency)
        )
        spans = sdk_spans(_tracer_provider())
        self._client = self._make_client(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout_s,
            max_retries=0,
            http_client=anthropic.DefaultAioHttpClient(limits=limits),
            open_telemetry=spans,
        )
        # The SDK makes its span of each attempt (with the request's attributes) in
        # messages.create: where it may trace, every call goes through it.
        self._typed = self.typed_requests or spans is not False
        self.counter: Counter = (
            ApiCounter(self._client) if self.capabilities.token_counting else Estimator()
        )

    def _make_client(self, **options: Any) -> anthropic.AsyncAnthropic:
        """The SDK client of this provider (Bedrock and Vertex AI have their own)."""
        return anthropic.AsyncAnthropic(**options)

    def model_for(self, stage: StageName) -> str:
        """The stage's own model if configured, else the default model."""
        return self.stage_models.get(stage, self.model)

    async def count_tokens(self, stage: StageName, system: str, context: str) -> TokenCount:
        """Input tokens of a prompt on the stage's model: counted by the API, else estimated."""
        return await self.counter.count(self.model_for(stage), system, context)

    async def ask(
        self, prompt: Prompt[T], *, feedback: str | None = None, max_tokens: int | None = None
    ) -> Answer[T]:
        """Ask, retrying transient errors within the ticket's budget; raise a ``ModelFailure``."""
        model = self.model_for(prompt.stage)
        ticket = getattr(prompt.facts, "ticket_id", None)
        request = self.request(prompt, model, feedback, max_tokens or prompt.max_tokens)
        with genai.chat_span(
            model, prompt.stage, request["max_tokens"], provider=self.provider
        ) as span:
            started = self._clock()
            in_flight = self.limit.in_use + 1
            try:
                message = await self._send(model, request, started + self.tickets.left(ticket))
            except SpendLimit:
                self._sound_spend_alarm(model)
                raise
            except OutOfTime:
                # What is left is too little for a retry, so too little for the next stage's call.
                self.tickets.exhaust(ticket)
                self.latency.observe(self._clock() - started, budget_spent=True)
                raise
            except TimedOut:
                self.latency.observe(self._clock() - started, timed_out=True, in_flight=in_flight)
                raise
            finally:
                self.tickets.spend(ticket, self._clock() - started)
            self.latency.observe(self._clock() - started, in_flight=in_flight)
            genai.record_response(span, message)
            return self._answer(prompt, model, message)

    def request(
        self, prompt: Prompt[T], model: str, feedback: str | None, max_tokens: int
    ) -> dict[str, Any]:
        """The Messages request of ``prompt``, shaped by the provider's capabilities."""
        return messages_request(prompt, model, feedback, max_tokens, self.capabilities)

    async def _call(
        self, request: dict[str, Any], timeout_s: float
    ) -> tuple[Message, Mapping[str, str]]:
        """One request: the answer and its headers; an SDK error or ``AttemptFailed``."""
        if self._typed:
            raw = await self._client.messages.with_raw_response.create(**request, timeout=timeout_s)
            body, headers = await raw.read(), raw.headers
        else:
            # The request is plain JSON already: encoded once here, it skips the SDK's copy of
            # the whole body and its JSON encoding (together about 0.9 ms of a 2 ms call), and
            # still goes through the SDK's client, headers, errors and HTTP stack.
            response = await self._client.post(
                MESSAGES_PATH,
                content=orjson.dumps(request),
                cast_to=httpx2.Response,
                options={"timeout": timeout_s},
            )
            body, headers = response.content, response.headers
        try:
            return read_message(body, headers.get("request-id")), headers
        except NotAMessage as exc:
            model = request.get("model")
            failure = Unavailable(f"{model} failed: {exc}", request_id=headers.get("request-id"))
            raise AttemptFailed(Attempt(failure, retryable=True), headers) from None

    async def _send(self, model: str, request: dict[str, Any], deadline: float) -> Message:
        last: ModelFailure | None = None
        attempts = 0
        while True:
            left = deadline - self._clock()
            if left <= 0:
                raise self._out_of_time(model, last, attempts)
            admitted = False
            try:
                # Waiting for the rate limits and for a slot is model time too: an overloaded
                # worker must not let tickets queue past their budget.
                async with asyncio.timeout(left):
                    await self.pacer.admit(model)
                    admitted = True
                    await self.limit.acquire()
            except BaseException as exc:
                if admitted:
                    self.pacer.finished(model, None)
                if isinstance(exc, TimeoutError):
                    raise self._out_of_time(model, last, attempts) from None
                raise
            attempts += 1
            timeout_s = min(self.timeout_s, max(0.001, deadline - self._clock()))
            headers: Mapping[str, str] | None = None
            try:
                message, headers = await self._call(request, timeout_s)
            except anthropic.AnthropicError as exc:
                if isinstance(exc, anthropic.APIStatusError):
                    headers = exc.response.headers
                attempt = attempt_failure(model, exc, timeout_s)
            except AttemptFailed as exc:
                headers, attempt = exc.headers, exc.attempt
            else:
                self.limit.succeeded()
                return message
            finally:
                self.limit.release()
                self.pacer.finished(model, headers)
            if attempt.overloaded and self.limit.overloaded():
                log.warning("%s is overloaded: %d calls in flight at most", model, self.limit.slots)
            ids = {"request_id": attempt.failure.request_id}
            if not attempt.retryable:
                # A spent limit fails every call: the alarm speaks for those, once a minute.
                level = (
                    logging.DEBUG if isinstance(attempt.failure, SpendLimit) else logging.WARNING
                )
                log.log(level, "%s: %s", model, attempt.failure.message, extra=ids)
                raise attempt.failure
            last = attempt.failure
            if attempts > self.max_retries:
                last.message = f"{last.message} (gave up after {attempts} attempts)"
                log.warning("%s: %s", model, last.message, extra=ids)
                raise last
            delay = retry_delay_s(attempts - 1, attempt.retry_after_s, rng=self._rng)
            if self._clock() + delay >= deadline:
                raise self._out_of_time(model, last, attempts)
            log.info("%s: %s; retrying in %.2f s", model, last.message, delay, extra=ids)
            if self.on_retry is not None:
                self.on_retry(model, retry_cause(attempt))
            await asyncio.sleep(delay)

    def _out_of_time(self, model: str, last: ModelFailure | None, attempts: int) -> OutOfTime:
        budget = f"the ticket's model time budget of {self.tickets.budget_s:g} s is spent"
        if last is None:
            return OutOfTime(f"{model}: {budget}")
        return OutOfTime(
            f"{model}: {budget} after {attempts} attempts; last: {last.message}",
            request_id=last.request_id,
        )

    def _sound_spend_alarm(self, model: str) -> None:
        swallowed = self.spend_alarm.ready()
        if swallowed is not None:
            log.error(
                "MODEL SPEND LIMIT REACHED (%s): every model call fails until the limit is "
                "raised; tickets are handed to people (%d more hits not logged since the last "
                "alarm)",
                model,
                swallowed,
            )

    def _answer(self, prompt: Prompt[T], model: str, message: Message) -> Answer[T]:
        usage = self._usage(prompt.stage, model, message)
        text = "".join(block.text for block in message.content if block.type == "text")
        stop = message.stop_reason or "end_turn"
        if stop == "refusal":
            explanation = message.stop_details.explanation if message.stop_details else None
            raise Refused(
                f"{model} refused: {explanation or 'no explanation'}",
                text,
                [usage],
                usage.request_id,
            )
        if stop in ("max_tokens", "model_context_window_exceeded"):
            raise Truncated(
                f"{model} stopped at {stop} ({usage.output_tokens})",
                text,
                [usage],
                usage.request_id,
            )
        try:
            value, recovered = parse_output(text, prompt.output_type)
        except OutputInvalid as exc:
            raise OutputInvalid(exc.message, text, [usage], usage.request_id) from None
        if recovered:
            self.recovered += 1
            log.debug("%s: the answer's JSON was recovered from around it", model)
        return Answer(value=value, usage=usage, raw=text, stop_reason=stop)

    def _usage(self, stage: StageName, model: str, message: Message) -> CallUsage:
        reported = message.usage
        usage = CallUsage(
            stage=stage,
            model=model,
            input_tokens=reported.input_tokens,
            output_tokens=reported.output_tokens,
            cache_read_tokens=reported.cache_read_input_tokens or 0,
            cache_write_tokens=reported.cache_creation_input_tokens or 0,
            # A message from a batch's results came with no HTTP response, so no request id.
            request_id=getattr(message, "_request_id", None),
        )
        if self.capabilities.caching and not (usage.cache_read_tokens or usage.cache_write_tokens):
            self._warn_uncached(stage, model, usage.input_tokens)
        price = price_for(model, self.prices)
        if price is None:
            if model not in self.unpriced:
                self.unpriced.add(model)
                log.warning(
                    "no price for model %s: its calls' cost is unknown (set BATON_PRICES)", model
                )
            return usage.model_copy(update={"cost_usd": None})
        return usage.model_copy(update={"cost_usd": cost(usage, price)})

    def _warn_uncached(self, stage: StageName, model: str, input_tokens: int) -> None:
        if (stage, model) in self._uncached:
            return
        self._uncached.add((stage, model))
        log.warning(
            "%s on %s: nothing was cached (%d input tokens); %s caches prefixes of %d tokens "
            "or more, so the static prompt may be too short for it",
            stage,
            model,
            input_tokens,
            model,
            min_cacheable_tokens(model, self.cache_min_tokens),
        )

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()

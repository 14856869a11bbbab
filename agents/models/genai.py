"""One OpenTelemetry span per model call, named and attributed per the GenAI semantic conventions,
and the conventions' client metrics: ``gen_ai.client.token.usage`` and
``gen_ai.client.operation.duration``.

The span is a child of whatever span is current (the stage's agent span in the worker), and
the SDK's own per-request spans, where it makes them, are children of it: one call, many
attempts. Without a meter provider configured the metrics cost a no-op call.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from anthropic.types import Message
from opentelemetry import metrics, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

PROVIDER = "anthropic"
TOKEN_USAGE = "gen_ai.client.token.usage"
OPERATION_DURATION = "gen_ai.client.operation.duration"
# The bucket boundaries the conventions advise for each metric.
TOKEN_BUCKETS = [4.0**i for i in range(14)]
DURATION_BUCKETS = [0.01 * 2**i for i in range(14)]

# The conversation (baton's session) the calls of the current stage run belong to.
_CONVERSATION: ContextVar[str | None] = ContextVar("gen_ai_conversation", default=None)


# The tracer of the current tracer provider, made once per provider: a provider set after
# import is used from then on, and a call does not make a tracer of its own.
_TRACER: list[tuple[object, trace.Tracer]] = []


def _tracer() -> trace.Tracer:
    provider = trace.get_tracer_provider()
    if _TRACER and _TRACER[0][0] is provider:
        return _TRACER[0][1]
    tracer = trace.get_tracer("baton.models", tracer_provider=provider)
    _TRACER[:] = [(provider, tracer)]
    return tracer


@dataclass
class _Instruments:
    tokens: Any
    duration: Any


# One pair of instruments per meter provider (a provider set after import gets its own).
_INSTRUMENTS: dict[int, tuple[object, _Instruments]] = {}


def _instruments() -> _Instruments:
    provider = metrics.get_meter_provider()
    found = _INSTRUMENTS.get(id(provider))
    if found is not None and found[0] is provider:
        return found[1]
    meter = metrics.get_meter("baton.models", meter_provider=provider)
    made = _Instruments(
        tokens=meter.create_histogram(
            TOKEN_USAGE,
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        ),
        duration=meter.create_histogram(
            OPERATION_DURATION,
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        ),
    )
    _INSTRUMENTS[id(provider)] = (provider, made)
    return made


@contextmanager
def conversation(conversation_id: str) -> Iterator[None]:
    """Model calls made inside belong to ``conversation_id`` (``gen_ai.conversation.id``)."""
    token = _CONVERSATION.set(conversation_id)
    try:
        yield
    finally:
        _CONVERSATION.reset(token)


@dataclass
class Call:
    """One chat call in progress: its span and what its metrics are attributed with."""

    span: Span
    attributes: dict[str, str] = field(default_factory=dict)


@contextmanager
def chat_span(
    model: str, stage: str, max_tokens: int, *, provider: str = PROVIDER
) -> Iterator[Call]:
    """The current span of one chat call; a failure leaves ``error.type`` and an error status.

    Its duration, retries included, is recorded as ``gen_ai.client.operation.duration``.
    """
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        # The older name, which many backends still read.
        "gen_ai.system": provider,
        "gen_ai.request.model": model,
        "gen_ai.request.max_tokens": max_tokens,
        "baton.stage": stage,
    }
    if (conversation_id := _CONVERSATION.get()) is not None:
        attributes["gen_ai.conversation.id"] = conversation_id
    started = time.perf_counter()
    with _tracer().start_as_current_span(
        f"chat {model}",
        kind=SpanKind.CLIENT,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        call = Call(
            span,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": provider,
                "gen_ai.request.model": model,
            },
        )
        try:
            yield call
        except Exception as exc:
            if span.is_recording():
                span.set_attribute("error.type", type(exc).__name__)
                span.set_status(Status(StatusCode.ERROR, str(exc)[:300]))
            failed = call.attributes | {"error.type": type(exc).__name__}
            _instruments().duration.record(time.perf_counter() - started, failed)
            raise
        _instruments().duration.record(time.perf_counter() - started, call.attributes)


def record_response(call: Call, message: Message) -> None:
    """Id, model, finish reason and token counts of the answer on the call's span, and its
    input and output tokens as ``gen_ai.client.token.usage``.

    ``gen_ai.usage.input_tokens`` counts every input token, cached ones included, as the
    conventions ask; Anthropic's own ``input_tokens`` leaves out the cache reads and writes.
    """
    usage = message.usage
    cache_read = usage.cache_read_input_tokens or 0
    cache_write = usage.cache_creation_input_tokens or 0
    input_tokens = usage.input_tokens + cache_read + cache_write
    call.attributes["gen_ai.response.model"] = message.model
    tokens = _instruments().tokens
    tokens.record(input_tokens, call.attributes | {"gen_ai.token.type": "input"})
    tokens.record(usage.output_tokens, call.attributes | {"gen_ai.token.type": "output"})
    span = call.span
    if not span.is_recording():
        return
    span.set_attributes(
        {
            "gen_ai.response.id": message.id,
            "gen_ai.response.model": message.model,
            "gen_ai.response.finish_reasons": [message.stop_reason or "end_turn"],
            "gen_ai.usage.input_tokens": input_tokens,
            "gen_ai.usage.output_tokens": usage.output_tokens,
            "gen_ai.usage.cache_read.input_tokens": cache_read,
            "gen_ai.usage.cache_creation.input_tokens": cache_write,
        }
    )

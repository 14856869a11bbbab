"""One OpenTelemetry span per model call, named and attributed per the GenAI semantic conventions.

The span is a child of whatever span is current (the stage span of the worker), and the SDK's
own per-request spans, where it makes them, are children of it: one call, many attempts.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from anthropic.types import Message
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

PROVIDER = "anthropic"


def _tracer() -> trace.Tracer:
    # Looked up per span, not cached: a provider set after import is used from then on.
    return trace.get_tracer("baton.models")


@contextmanager
def chat_span(
    model: str, stage: str, max_tokens: int, *, provider: str = PROVIDER
) -> Iterator[Span]:
    """The current span of one chat call; a failure leaves ``error.type`` and an error status."""
    with _tracer().start_as_current_span(
        f"chat {model}",
        kind=SpanKind.CLIENT,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            # The older name, which many backends still read.
            "gen_ai.system": provider,
            "gen_ai.request.model": model,
            "gen_ai.request.max_tokens": max_tokens,
            "baton.stage": stage,
        },
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except Exception as exc:
            if span.is_recording():
                span.set_attribute("error.type", type(exc).__name__)
                span.set_status(Status(StatusCode.ERROR, str(exc)[:300]))
            raise


def record_response(span: Span, message: Message) -> None:
    """Id, model, finish reason and token counts of the answer on ``span``.

    ``gen_ai.usage.input_tokens`` counts every input token, cached ones included, as the
    conventions ask; Anthropic's own ``input_tokens`` leaves out the cache reads and writes.
    """
    if not span.is_recording():
        return
    usage = message.usage
    cache_read = usage.cache_read_input_tokens or 0
    cache_write = usage.cache_creation_input_tokens or 0
    span.set_attributes(
        {
            "gen_ai.response.id": message.id,
            "gen_ai.response.model": message.model,
            "gen_ai.response.finish_reasons": [message.stop_reason or "end_turn"],
            "gen_ai.usage.input_tokens": usage.input_tokens + cache_read + cache_write,
            "gen_ai.usage.output_tokens": usage.output_tokens,
            "gen_ai.usage.cache_read.input_tokens": cache_read,
            "gen_ai.usage.cache_creation.input_tokens": cache_write,
        }
    )

"""OpenTelemetry tracing of a ticket: one span per stage run, the W3C trace context in headers.

Each stage continues the trace its input record's ``traceparent`` header names (intake starts
one when the published ticket has none) and every record it sends carries its span's context,
so a ticket's stages, model calls, reply and dead letters form one trace across the topics.
Without a tracer provider (only ``opentelemetry-api`` installed, nothing configured) a record
without a ``traceparent`` costs one check and nothing is injected.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Protocol

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from schemas.records import CallUsage, Reply
from streams.kafka.carrier import GETTER, SETTER, Headers

TRACEPARENT = "traceparent"
# Stage outcomes that mean the record was not processed as it should have been.
ERROR_OUTCOMES = frozenset({"failed", "invalid", "refused"})


def _tracer() -> trace.Tracer:
    # Looked up per span, not cached: a provider set after import is used from then on.
    return trace.get_tracer("baton")


_w3c = TraceContextTextMapPropagator()
_OFF: AbstractContextManager[None] = nullcontext()


class Where(Protocol):
    """Where a record was read from (``streams.runtime.dead_letters.Source``)."""

    @property
    def topic(self) -> str | None: ...
    @property
    def partition(self) -> int | None: ...
    @property
    def offset(self) -> int | None: ...


def enabled() -> bool:
    """Whether a tracer provider is set (the default proxy provider makes no spans)."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def _carries_context(headers: Headers | None) -> bool:
    return bool(headers) and any(k.lower() == TRACEPARENT for k, _ in headers or ())


def stage_span(
    stage: str, headers: Headers | None, source: Where | None = None
) -> AbstractContextManager[None]:
    """The current span while ``stage`` runs on one record, a child of the record's context."""
    if not _carries_context(headers) and not enabled():
        return _OFF
    return _stage_span(stage, headers, source)


@contextmanager
def _stage_span(stage: str, headers: Headers | None, source: Where | None) -> Iterator[None]:
    parent = propagate.extract(headers or [], getter=GETTER)
    attributes: dict[str, str | int] = {
        "baton.stage": stage,
        "messaging.system": "kafka",
        "messaging.operation.type": "process",
    }
    if source is not None and source.topic is not None:
        attributes["messaging.destination.name"] = source.topic
    if source is not None and source.partition is not None:
        attributes["messaging.destination.partition.id"] = str(source.partition)
    if source is not None and source.offset is not None:
        attributes["messaging.kafka.offset"] = source.offset
    with _tracer().start_as_current_span(
        f"baton.stage {stage}", context=parent, kind=SpanKind.CONSUMER, attributes=attributes
    ):
        yield


def annotate(ticket_id: str, session_id: str) -> None:
    """Name the ticket the current stage span is about."""
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attributes({"baton.ticket_id": ticket_id, "baton.session_id": session_id})


def inject(headers: Headers | None) -> Headers | None:
    """``headers`` plus the current trace context; unchanged when no valid span is current."""
    if not trace.get_current_span().get_span_context().is_valid:
        return headers
    out = list(headers or [])
    propagate.inject(out, setter=SETTER)
    return out


def current_trace_id() -> str | None:
    """The current span's trace id (32 hex digits), or None when no valid span is current."""
    ctx = trace.get_current_span().get_span_context()
    return trace.format_trace_id(ctx.trace_id) if ctx.is_valid else None


def trace_id_of(headers: Headers) -> str | None:
    """The trace id a record's ``traceparent`` header names, or None without a valid one."""
    if not _carries_context(headers):
        return None
    ctx = trace.get_current_span(_w3c.extract(headers, Context(), GETTER)).get_span_context()
    return trace.format_trace_id(ctx.trace_id) if ctx.is_valid else None


class TracingObserver:
    """Writes the pipeline's events onto the current stage span: outcome, context, dead letters."""

    def record_in(self, stage: str) -> None:
        pass

    def stage_done(self, stage: str, outcome: str, seconds: float) -> None:
        span = trace.get_current_span()
        if not span.is_recording():
            return
        span.set_attribute("baton.outcome", outcome)
        if outcome in ERROR_OUTCOMES:
            span.set_status(Status(StatusCode.ERROR, f"{stage} {outcome}"))

    def dead_letter(self, stage: str, reason: str) -> None:
        span = trace.get_current_span()
        if span.is_recording():
            span.add_event("baton.dead_letter", {"baton.stage": stage, "baton.reason": reason})

    def model_calls(self, calls: list[CallUsage]) -> None:
        pass

    def context(self, stage: str, level: str) -> None:
        span = trace.get_current_span()
        if span.is_recording():
            span.set_attribute("baton.context_level", level)

    def reply(self, reply: Reply, end_to_end_s: float | None) -> None:
        span = trace.get_current_span()
        if span.is_recording():
            span.set_attribute("baton.reply.status", reply.status)

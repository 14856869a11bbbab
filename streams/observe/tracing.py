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
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from baton_kafka.agents.models import genai
from baton_kafka.schemas.records import CallUsage, Reply
from baton_kafka.streams.kafka.carrier import GETTER, SETTER, Headers

TRACEPARENT = "traceparent"
# Stage outcomes that mean the record was not processed as it should have been.
ERROR_OUTCOMES = frozenset({"failed", "invalid", "refused"})


def _tracer() -> trace.Tracer:
    # Looked up per span, not cached: a provider set after import is used from then on.
    return trace.get_tracer("baton")


_w3c = TraceContextTextMapPropagator()
_OFF: AbstractContextManager[None] = nullcontext()


class Where(Protocol):
    """Where a record was read from (``streams.runtime.records.dead_letters.Source``)."""

    @property
    def topic(self) -> str | None: ...
    @property
    def partition(self) -> int | None: ...
    @property
    def offset(self) -> int | None: ...
    @property
    def key(self) -> str | None: ...


@dataclass(frozen=True)
class Consumer:
    """Who reads: the consumer group and the first bootstrap server (messaging attributes)."""

    group: str | None = None
    server: str | None = None
    port: int | None = None

    @classmethod
    def of(cls, group: str, broker: str) -> Consumer:
        """The group's consumer of a ``kafka://h1:p1;h2:p2`` broker URL (its first server)."""
        first = broker.removeprefix("kafka://").split(";")[0]
        host, _, port = first.rpartition(":")
        return cls(group=group, server=host or first, port=int(port) if port.isdigit() else None)


# The span of the stage run in progress: the pipeline's events are written on it, and the
# records it sends name it, whichever span (agent, model call) is current below it.
_STAGE: ContextVar[Span | None] = ContextVar("baton_stage_span", default=None)


def enabled() -> bool:
    """Whether a tracer provider is set (the default proxy provider makes no spans)."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def _carries_context(headers: Headers | None) -> bool:
    return bool(headers) and any(k.lower() == TRACEPARENT for k, _ in headers or ())


def stage_span(
    stage: str,
    headers: Headers | None,
    source: Where | None = None,
    consumer: Consumer | None = None,
    *,
    traced: bool | None = None,
) -> AbstractContextManager[None]:
    """The current span while ``stage`` runs on one record, a child of the record's context
    (``traced``: ``enabled()`` as read for this record, read here when None)."""
    if not _carries_context(headers) and not (enabled() if traced is None else traced):
        return _OFF
    return _stage_span(stage, headers, source, consumer or Consumer())


def messaging_attributes(source: Where | None, consumer: Consumer) -> dict[str, str | int]:
    """The Kafka conventions' attributes of processing one record."""
    attributes: dict[str, str | int] = {
        "messaging.system": "kafka",
        "messaging.operation.name": "process",
        "messaging.operation.type": "process",
    }
    if consumer.group:
        attributes["messaging.consumer.group.name"] = consumer.group
    if consumer.server:
        attributes["server.address"] = consumer.server
    if consumer.port is not None:
        attributes["server.port"] = consumer.port
    if source is None:
        return attributes
    if source.topic is not None:
        attributes["messaging.destination.name"] = source.topic
    if source.partition is not None:
        attributes["messaging.destination.partition.id"] = str(source.partition)
    if source.offset is not None:
        attributes["messaging.kafka.offset"] = source.offset
    key = getattr(source, "key", None)
    if key:
        attributes["messaging.kafka.message.key"] = key
    return attributes


@contextmanager
def _stage_span(
    stage: str, headers: Headers | None, source: Where | None, consumer: Consumer
) -> Iterator[None]:
    parent = propagate.extract(headers or [], getter=GETTER)
    attributes = {"baton.stage": stage, **messaging_attributes(source, consumer)}
    topic = source.topic if source is not None and source.topic else stage
    with _tracer().start_as_current_span(
        f"process {topic}", context=parent, kind=SpanKind.CONSUMER, attributes=attributes
    ) as span:
        token = _STAGE.set(span)
        try:
            yield
        finally:
            _STAGE.reset(token)


def stage_span_now() -> Span:
    """The span of the stage run in progress (the current span outside of one)."""
    return _STAGE.get() or trace.get_current_span()


def agent_span(
    stage: str, session_id: str, provider: str, *, traced: bool | None = None
) -> AbstractContextManager[None]:
    """The GenAI conventions' ``invoke_agent`` span of one stage's run on a ticket.

    The session is the conversation: its id is ``gen_ai.conversation.id`` here and on the
    model calls below. A child of the stage's ``process`` span, in-process (``INTERNAL``).
    ``traced``: ``enabled()`` as read for this record (read here when None).
    """
    if not (enabled() if traced is None else traced):
        return _OFF
    return _agent_span(stage, session_id, provider)


@contextmanager
def _agent_span(stage: str, session_id: str, provider: str) -> Iterator[None]:
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": provider,
        "gen_ai.agent.name": stage,
        "gen_ai.conversation.id": session_id,
        "baton.stage": stage,
    }
    with (
        _tracer().start_as_current_span(
            f"invoke_agent {stage}", kind=SpanKind.INTERNAL, attributes=attributes
        ),
        genai.conversation(session_id),
    ):
        yield


def annotate(ticket_id: str, session_id: str) -> None:
    """Name the ticket the current stage span is about."""
    span = stage_span_now()
    if span.is_recording():
        span.set_attributes({"baton.ticket_id": ticket_id, "baton.session_id": session_id})


def inject(headers: Headers | None) -> Headers | None:
    """``headers`` plus the trace context of the stage run (of the current span outside one);
    unchanged when there is no valid span."""
    span = stage_span_now()
    if not span.get_span_context().is_valid:
        return headers
    out = list(headers or [])
    propagate.inject(out, context=trace.set_span_in_context(span), setter=SETTER)
    return out


def current_trace_id() -> str | None:
    """The current span's trace id (32 hex digits), or None when no valid span is current."""
    ctx = trace.get_current_span().get_span_context()
    return trace.format_trace_id(ctx.trace_id) if ctx.is_valid else None


def current_span_ids() -> tuple[str, str] | None:
    """The current span's (trace id, span id) in hex, or None when no valid span is current."""
    ctx = trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return None
    return trace.format_trace_id(ctx.trace_id), trace.format_span_id(ctx.span_id)


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
        span = stage_span_now()
        if not span.is_recording():
            return
        span.set_attribute("baton.outcome", outcome)
        if outcome in ERROR_OUTCOMES:
            span.set_status(Status(StatusCode.ERROR, f"{stage} {outcome}"))

    def dead_letter(self, stage: str, reason: str) -> None:
        span = stage_span_now()
        if span.is_recording():
            span.add_event("baton.dead_letter", {"baton.stage": stage, "baton.reason": reason})

    def model_calls(self, calls: list[CallUsage]) -> None:
        pass

    def context(self, stage: str, level: str) -> None:
        span = stage_span_now()
        if span.is_recording():
            span.set_attribute("baton.context_level", level)

    def reply(self, reply: Reply, end_to_end_s: float | None) -> None:
        span = stage_span_now()
        if span.is_recording():
            span.set_attribute("baton.reply.status", reply.status)

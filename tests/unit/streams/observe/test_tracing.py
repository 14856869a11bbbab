"""Tracing: one trace per ticket across every hop, continued from the publisher, off by default."""

from __future__ import annotations

import io
import itertools
import logging
from collections.abc import AsyncIterator

import orjson
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from baton_kafka.agents.models.claude import AnthropicLLM
from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.agents.testing import StandIn
from baton_kafka.schemas import StageRecord, Ticket, dumps
from baton_kafka.streams.kafka.carrier import GETTER, SETTER
from baton_kafka.streams.observe import tracing
from baton_kafka.streams.observe.logs import JsonFormatter, LoggingObserver
from baton_kafka.streams.observe.observer import CountingObserver, Fanout, Observer
from baton_kafka.streams.runtime.pipeline import Pipeline
from baton_kafka.streams.runtime.records.dead_letters import Source
from tests.fixtures.agents import MODEL, client, prompt, respond
from tests.fixtures.data import ticket
from tests.fixtures.pipelines import in_memory

USER_TRACE = "0af7651916cd43dd8448eb211c80319c"
USER_SPAN = "b7ad6b7169203331"
USER_PARENT = f"00-{USER_TRACE}-{USER_SPAN}-01".encode()
HOPS = [("understand", "sessions"), ("lookup", "understood"), ("strategy", "matched")]


def traced_pipeline(store: SQLiteOrderStore, *more: Observer) -> Pipeline:
    """``in_memory``'s pipeline, reporting to the tracing observer (and ``more``) too."""
    p = in_memory(store)
    observer = Fanout(CountingObserver(), tracing.TracingObserver(), *more)
    return Pipeline(p.settings, p.llm, p.store, p.sink, p.state, observer=observer)


async def drive(p: Pipeline, t: Ticket | bytes, headers: list[tuple[str, bytes]]) -> None:
    """Publish one ticket with ``headers`` and feed each hop's new records, with their headers."""
    n = p.topics
    s = p.sink
    start = {topic: len(s.sent[topic]) for topic in n.all()}
    await p.intake(t if isinstance(t, bytes) else dumps(t), Source(n.tickets, 0, 0), headers)
    for stage, attr in HOPS:
        topic = getattr(n, attr)
        records = list(zip(s.sent[topic], s.headers[topic], strict=True))[start[topic] :]
        for i, ((_, value), heads) in enumerate(records):
            await p.run_stage(stage, value, Source(topic, 0, start[topic] + i), heads)  # type: ignore[arg-type]


def parent_of(headers: list[tuple[str, bytes]]) -> tuple[str, str]:
    """(trace id, span id) of a record's traceparent header."""
    [value] = [v for k, v in headers if k == "traceparent"]
    _, trace_id, span_id, _ = value.decode().split("-")
    return trace_id, span_id


def ids(span: ReadableSpan) -> tuple[str, str]:
    ctx = span.get_span_context()
    assert ctx is not None
    return trace.format_trace_id(ctx.trace_id), trace.format_span_id(ctx.span_id)


def stage_spans(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    """Each stage's ``process`` span (the consumer span of the record it read), by stage."""
    return {
        str((s.attributes or {})["baton.stage"]): s
        for s in exporter.get_finished_spans()
        if s.name.startswith("process ")
    }


async def test_every_hop_of_a_ticket_is_one_trace(
    store: SQLiteOrderStore, spans: InMemorySpanExporter
) -> None:
    p = traced_pipeline(store)
    await drive(p, ticket("t1", "My kettle is leaking, I want a refund."), [])
    by_stage = stage_spans(spans)
    assert list(by_stage) == ["intake", "understand", "lookup", "strategy"]
    trace_ids = {ids(s)[0] for s in by_stage.values()}
    assert len(trace_ids) == 1
    # Each stage's parent is the stage that sent its record, through the record's header.
    chain = list(by_stage.values())
    assert chain[0].parent is None
    for before, after in itertools.pairwise(chain):
        assert after.parent is not None and after.parent.is_remote
        assert after.parent.span_id == before.get_span_context().span_id  # type: ignore[union-attr]
    n = p.topics
    for (_, attr), span in zip(HOPS, chain, strict=False):
        assert parent_of(p.sink.headers[getattr(n, attr)][0]) == ids(span)
    assert parent_of(p.sink.headers[n.replies][0]) == ids(chain[-1])
    understand = by_stage["understand"]
    assert understand.kind is SpanKind.CONSUMER
    assert (
        dict(understand.attributes or {}).items()
        >= {
            "baton.stage": "understand",
            "baton.ticket_id": "t1",
            "baton.session_id": "S1",
            "baton.outcome": "ok",
            "baton.context_level": "full",
            "messaging.destination.name": n.sessions,
        }.items()
    )
    assert by_stage["strategy"].attributes["baton.reply.status"] == "answered"  # type: ignore[index]


async def test_two_tickets_are_two_traces(
    store: SQLiteOrderStore, spans: InMemorySpanExporter
) -> None:
    p = traced_pipeline(store)
    await drive(p, ticket("t1", "My kettle is leaking, I want a refund."), [])
    await drive(p, ticket("t2", "How long will that take?"), [])
    replies = p.sink.headers[p.topics.replies]
    assert len(replies) == 2
    assert parent_of(replies[0])[0] != parent_of(replies[1])[0]


async def test_a_published_traceparent_is_continued(
    store: SQLiteOrderStore, spans: InMemorySpanExporter
) -> None:
    p = traced_pipeline(store)
    headers = [("traceparent", USER_PARENT), ("tracestate", b"vendor=abc")]
    await drive(p, ticket("t1", "My kettle is leaking, I want a refund."), headers)
    intake = stage_spans(spans)["intake"]
    assert intake.parent is not None
    assert (trace.format_span_id(intake.parent.span_id), ids(intake)[0]) == (USER_SPAN, USER_TRACE)
    reply_headers = p.sink.headers[p.topics.replies][0]
    assert parent_of(reply_headers)[0] == USER_TRACE
    assert ("tracestate", b"vendor=abc") in reply_headers


async def test_dead_letters_carry_the_tickets_trace(
    store: SQLiteOrderStore, spans: InMemorySpanExporter
) -> None:
    p = traced_pipeline(store)
    n = p.topics
    await p.intake(b"{not json", Source(n.tickets, 0, 0), [("traceparent", USER_PARENT)])
    # A record that lost its understanding: the look-up dead-letters it (context_broken).
    record = StageRecord(ticket=ticket("t2", "Where is my order?"))
    other = f"00-{'1' * 32}-{'2' * 16}-01".encode()
    await p.run_stage("lookup", dumps(record), Source(n.understood, 0, 0), [("traceparent", other)])
    invalid, broken = p.sink.headers[n.dead_letters][:2]
    assert parent_of(invalid)[0] == USER_TRACE
    assert parent_of(broken)[0] == "1" * 32
    # The Kafka Connect style headers are still there.
    assert any(k == "baton.reason" and v == b"context_broken" for k, v in broken)
    lookup = stage_spans(spans)["lookup"]
    assert [e.name for e in lookup.events] == ["baton.dead_letter"]
    # Its degraded reply is in the same trace.
    assert parent_of(p.sink.headers[n.replies][0])[0] == "1" * 32


async def test_a_shed_tickets_dead_letter_carries_its_trace(
    store: SQLiteOrderStore, spans: InMemorySpanExporter
) -> None:
    p = traced_pipeline(store)
    n = p.topics
    record = dumps(StageRecord(ticket=ticket("t9", "My kettle is leaking.")))
    await p.shed("understand", record, Source(n.sessions, 0, 7), [("traceparent", USER_PARENT)])
    [letter] = p.sink.headers[n.dead_letters]
    assert parent_of(letter) == (USER_TRACE, ids(stage_spans(spans)["understand"])[1])
    assert any(k == "baton.reason" and v == b"session_flood" for k, v in letter)


async def test_log_lines_of_a_ticket_name_its_trace(
    store: SQLiteOrderStore, spans: InMemorySpanExporter
) -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("baton.events")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        p = traced_pipeline(store, LoggingObserver())
        await drive(p, ticket("t1", "My kettle is leaking, I want a refund."), [])
        logger.info("between tickets")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
    lines = [orjson.loads(line) for line in out.getvalue().splitlines()]
    trace_id = parent_of(p.sink.headers[p.topics.replies][0])[0]
    during, after = lines[:-1], lines[-1]
    assert len(during) >= 4
    assert {line.get("trace_id") for line in during} == {trace_id}
    assert "trace_id" not in after


async def test_without_a_provider_no_header_is_added(store: SQLiteOrderStore) -> None:
    assert not tracing.enabled()
    p = traced_pipeline(store)
    await drive(p, ticket("t1", "My kettle is leaking, I want a refund."), [])
    await p.intake(b"{not json", Source(p.topics.tickets, 0, 1), [])
    sent = {topic: heads for topic, heads in p.sink.headers.items() if heads}
    assert len(sent) >= 5  # the three hops, the reply, the dead letter, the index
    for heads in sent.values():
        assert all(k not in ("traceparent", "tracestate") for h in heads for k, _ in h)


async def test_without_a_provider_a_published_context_passes_through(
    store: SQLiteOrderStore,
) -> None:
    p = traced_pipeline(store)
    await drive(
        p, ticket("t1", "My kettle is leaking, I want a refund."), [("traceparent", USER_PARENT)]
    )
    assert parent_of(p.sink.headers[p.topics.replies][0]) == (USER_TRACE, USER_SPAN)


@pytest.fixture
def responder() -> object:
    return respond


@pytest.fixture
async def claude(own_standin: StandIn, spans: InMemorySpanExporter) -> AsyncIterator[AnthropicLLM]:
    llm = client(own_standin)  # made with the provider set: the SDK makes its own spans too
    yield llm
    await llm.aclose()


async def test_a_model_call_is_a_genai_span_under_the_stage(
    claude: AnthropicLLM, spans: InMemorySpanExporter
) -> None:
    with tracing.stage_span("understand", []):
        stage = trace.get_current_span().get_span_context()
        answer = await claude.ask(prompt("understand"))
    [chat] = [s for s in spans.get_finished_spans() if s.name == f"chat {MODEL}"]
    assert chat.kind is SpanKind.CLIENT
    assert chat.parent is not None and chat.parent.span_id == stage.span_id
    attrs = dict(chat.attributes or {})
    usage = answer.usage
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == attrs["gen_ai.system"] == "anthropic"
    assert attrs["gen_ai.request.model"] == MODEL
    assert attrs["gen_ai.usage.output_tokens"] == usage.output_tokens > 0
    assert attrs["gen_ai.usage.input_tokens"] == (
        usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    )
    assert attrs["gen_ai.usage.cache_read.input_tokens"] == usage.cache_read_tokens
    assert attrs["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert str(attrs["gen_ai.response.id"]).startswith("msg")
    # The SDK's span of the HTTP request is a child of the call's span.
    sdk = [s for s in spans.get_finished_spans() if s.name == "anthropic.messages.create"]
    assert sdk
    assert all(s.parent is not None and s.parent.span_id == chat.context.span_id for s in sdk)


def test_the_carrier_reads_ascii_values_and_replaces_on_write() -> None:
    headers = [("TraceParent", b"\xff"), ("traceparent", b"00-abc"), ("other", b"x")]
    assert GETTER.get(headers, "traceparent") == ["00-abc"]
    assert GETTER.get(headers, "tracestate") is None
    SETTER.set(headers, "traceparent", "00-new")
    assert headers == [("other", b"x"), ("traceparent", b"00-new")]


def test_the_trace_id_of_headers() -> None:
    assert tracing.trace_id_of([("traceparent", USER_PARENT)]) == USER_TRACE
    assert tracing.trace_id_of([("traceparent", b"garbage")]) is None
    assert tracing.trace_id_of([]) is None

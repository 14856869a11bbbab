"""Telemetry by the OpenTelemetry conventions: Kafka consumer spans, GenAI agent spans and client
metrics, trace exemplars on the latency histograms and span ids in the logs."""

from __future__ import annotations

import io
import logging
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from prometheus_client.exposition import choose_encoder
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from baton_kafka.agents.models.claude import AnthropicLLM
from baton_kafka.agents.models.llm import ModelFailure
from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.agents.testing import StandIn
from baton_kafka.schemas import dumps
from baton_kafka.streams.observe import tracing
from baton_kafka.streams.observe.logs import JsonFormatter
from baton_kafka.streams.observe.metrics import PrometheusObserver
from baton_kafka.streams.observe.observer import CountingObserver, Fanout
from baton_kafka.streams.runtime.pipeline import Pipeline
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.placement import session_partition
from tests.fixtures.agents import MODEL, client, prompt, respond
from tests.fixtures.data import ticket
from tests.fixtures.pipelines import in_memory

OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"
AGENTS = ("understand", "lookup", "strategy")


def traced(store: SQLiteOrderStore, *more: Any) -> Pipeline:
    p = in_memory(store, broker="kafka://k1.example:9093;k2.example:9093")
    observer = Fanout(CountingObserver(), tracing.TracingObserver(), *more)
    return Pipeline(p.settings, p.llm, p.store, p.sink, p.state, observer=observer)


async def answer_one(p: Pipeline) -> None:
    n = p.topics
    value = dumps(ticket("t1", "My kettle is leaking, I want a refund.", session="S7"))
    await p.intake(value, Source(n.tickets, 2, 40, key="S7", raw_key=b"S7"), [])
    for stage, topic in zip(AGENTS, (n.sessions, n.understood, n.matched), strict=True):
        pending = p.sink.sent.pop(topic, [])
        heads = p.sink.headers.pop(topic, [])
        for i, ((key, value), h) in enumerate(zip(pending, heads, strict=True)):
            at = session_partition(key, p.settings.partitions) if key else 1
            source = Source(topic, at, i, key=key, raw_key=key.encode() if key else None)
            await p.run_stage(stage, value, source, h)  # type: ignore[arg-type]


async def test_each_record_is_a_kafka_process_span_with_the_required_attributes(
    store: SQLiteOrderStore, spans: InMemorySpanExporter
) -> None:
    p = traced(store)
    await answer_one(p)
    n = p.topics
    process = {
        s.attributes["baton.stage"]: s  # type: ignore[index]
        for s in spans.get_finished_spans()
        if s.name.startswith("process ")
    }
    assert list(process) == ["intake", *AGENTS]
    intake = process["intake"]
    assert intake.name == f"process {n.tickets}" and intake.kind is SpanKind.CONSUMER
    assert (
        dict(intake.attributes or {}).items()
        >= {
            "messaging.system": "kafka",
            "messaging.operation.name": "process",
            "messaging.operation.type": "process",
            "messaging.destination.name": n.tickets,
            "messaging.destination.partition.id": "2",
            "messaging.kafka.offset": 40,
            "messaging.consumer.group.name": "baton-u",
            "messaging.kafka.message.key": "S7",
            "server.address": "k1.example",
            "server.port": 9093,
        }.items()
    )
    assert process["lookup"].name == f"process {n.understood}"


async def test_each_stage_is_an_agent_span_in_the_session_s_conversation(
    store: SQLiteOrderStore, spans: InMemorySpanExporter
) -> None:
    p = traced(store)
    await answer_one(p)
    finished = spans.get_finished_spans()
    process = {s.attributes["baton.stage"]: s for s in finished if s.name.startswith("process ")}  # type: ignore[index]
    agents = {s.name: s for s in finished if s.name.startswith("invoke_agent ")}
    assert sorted(agents) == sorted(f"invoke_agent {a}" for a in AGENTS)
    for stage in AGENTS:
        span = agents[f"invoke_agent {stage}"]
        assert span.kind is SpanKind.INTERNAL
        assert span.parent is not None
        assert span.parent.span_id == process[stage].context.span_id
        assert (
            dict(span.attributes or {}).items()
            >= {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": stage,
                "gen_ai.conversation.id": "S7",
                "gen_ai.provider.name": "offline",
            }.items()
        )
    # The outcome stays on the process span, and the next hop's record names that span.
    assert process["understand"].attributes["baton.outcome"] == "ok"  # type: ignore[index]


@pytest.fixture
def responder() -> object:
    return respond


@pytest.fixture
async def claude(own_standin: StandIn, spans: InMemorySpanExporter) -> AsyncIterator[AnthropicLLM]:
    llm = client(own_standin)
    yield llm
    await llm.aclose()


def points(reader: InMemoryMetricReader, name: str) -> list[HistogramDataPoint]:
    data = reader.get_metrics_data()
    assert data is not None
    found: list[HistogramDataPoint] = []
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    found += [
                        p for p in metric.data.data_points if isinstance(p, HistogramDataPoint)
                    ]
    return found


async def test_a_model_call_records_the_genai_client_metrics_and_the_conversation(
    claude: AnthropicLLM, spans: InMemorySpanExporter, meter: InMemoryMetricReader
) -> None:
    with tracing.stage_span("understand", []), tracing.agent_span("understand", "S7", "anthropic"):
        answer = await claude.ask(prompt("understand"))
    usage_points = points(meter, "gen_ai.client.token.usage")
    tokens = {dict(p.attributes or {})["gen_ai.token.type"]: p for p in usage_points}
    usage = answer.usage
    assert tokens["output"].sum == usage.output_tokens > 0
    assert tokens["input"].sum == (
        usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    )
    assert dict(tokens["input"].attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": MODEL,
        "gen_ai.response.model": MODEL,
        "gen_ai.token.type": "input",
    }
    (duration,) = points(meter, "gen_ai.client.operation.duration")
    assert duration.count == 1 and duration.sum > 0
    assert "error.type" not in dict(duration.attributes or {})
    assert duration.explicit_bounds[:3] == (0.01, 0.02, 0.04)
    (chat,) = [s for s in spans.get_finished_spans() if s.name == f"chat {MODEL}"]
    assert chat.attributes["gen_ai.conversation.id"] == "S7"  # type: ignore[index]


async def test_a_failed_model_call_records_its_duration_with_the_error_type(
    meter: InMemoryMetricReader,
) -> None:
    llm = client("http://127.0.0.1:9", max_retries=0, timeout_s=1.0)
    try:
        with pytest.raises(ModelFailure):
            await llm.ask(prompt("understand"))
    finally:
        await llm.aclose()
    (duration,) = points(meter, "gen_ai.client.operation.duration")
    attrs = dict(duration.attributes or {})
    assert attrs["error.type"] and attrs["gen_ai.request.model"] == MODEL
    assert points(meter, "gen_ai.client.token.usage") == []


async def test_openmetrics_scrapes_carry_the_trace_of_a_latency_observation(
    store: SQLiteOrderStore, spans: InMemorySpanExporter
) -> None:
    metrics = PrometheusObserver()
    p = traced(store, metrics)
    await answer_one(p)
    strategy = next(
        s for s in spans.get_finished_spans() if s.name == f"process {p.topics.matched}"
    )
    encode, content_type = choose_encoder(OPENMETRICS)
    assert content_type.startswith("application/openmetrics-text")
    exemplars: dict[str, list[Any]] = {}
    for family in text_string_to_metric_families(encode(metrics.registry).decode()):
        for sample in family.samples:
            if sample.exemplar is not None:
                exemplars.setdefault(family.name, []).append(sample)
    trace_id = trace.format_trace_id(strategy.context.trace_id)
    for name in ("baton_stage_latency_seconds", "baton_end_to_end_latency_seconds"):
        assert name in exemplars, sorted(exemplars)
        assert all(s.exemplar.labels["trace_id"] == trace_id for s in exemplars[name])
    # The 0.0.4 text format a plain scrape gets has no exemplars.
    encode, content_type = choose_encoder("")
    assert content_type.startswith("text/plain; version=0.0.4")
    assert b"trace_id" not in encode(metrics.registry)


def test_a_log_line_in_a_span_names_its_trace_and_span(spans: InMemorySpanExporter) -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    log = logging.getLogger("baton.test.conventions")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        with tracing.stage_span("intake", []):
            ctx = trace.get_current_span().get_span_context()
            log.info("inside")
    finally:
        log.removeHandler(handler)
    line = orjson.loads(out.getvalue())
    assert line["trace_id"] == trace.format_trace_id(ctx.trace_id)
    assert line["span_id"] == trace.format_span_id(ctx.span_id)


def test_without_a_provider_there_are_no_agent_spans() -> None:
    with tracing.agent_span("understand", "S1", "offline"):
        assert not trace.get_current_span().get_span_context().is_valid

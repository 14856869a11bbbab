"""A record's spans follow the one reading of ``tracing.enabled`` its stage gives them."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.schemas import dumps
from baton_kafka.streams.observe import tracing
from baton_kafka.streams.runtime.records.dead_letters import Source
from tests.fixtures.data import ticket
from tests.fixtures.pipelines import in_memory


def names(spans: InMemorySpanExporter) -> list[str]:
    return [s.name for s in spans.get_finished_spans()]


def test_a_reading_given_is_followed_instead_of_a_lookup(spans: InMemorySpanExporter) -> None:
    with (
        tracing.stage_span("understand", [], traced=True),
        tracing.agent_span("understand", "S1", "offline", traced=True),
    ):
        assert trace.get_current_span().get_span_context().is_valid
    with (
        tracing.stage_span("lookup", [], traced=False),
        tracing.agent_span("lookup", "S1", "offline", traced=False),
    ):
        assert not trace.get_current_span().get_span_context().is_valid
    assert names(spans) == ["invoke_agent understand", "process understand"]


def test_without_a_reading_each_span_looks_the_provider_up(spans: InMemorySpanExporter) -> None:
    with tracing.stage_span("understand", []), tracing.agent_span("understand", "S1", "offline"):
        pass
    assert names(spans) == ["invoke_agent understand", "process understand"]


async def test_the_pipeline_reads_it_once_per_record(
    store: SQLiteOrderStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = in_memory(store)
    reads: list[bool] = []

    def enabled() -> bool:
        reads.append(False)
        return False

    monkeypatch.setattr(tracing, "enabled", enabled)
    n = p.topics
    value = dumps(ticket("t1", "My kettle is leaking, I want a refund.", session="S7"))
    await p.intake(value, Source(n.tickets, 0, 0))
    assert len(reads) == 1
    [(_, record)] = p.sink.sent.pop(n.sessions)
    await p.run_stage("understand", record, Source(n.sessions, 0, 0))
    assert len(reads) == 2  # the stage span and the agent span share the record's reading
    assert p.sink.sent[n.understood]

"""Erasure requests inside the worker: a customer's batons and index entry are tombstoned."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from baton_kafka.agents import history, memory
from baton_kafka.schemas import Erasure, IndexUpdate, StageRecord, dumps
from baton_kafka.schemas.records import utcnow
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.session import erasure
from baton_kafka.streams.testing import TestPipeline
from tests.fixtures.data import ticket


async def erase(p: TestPipeline, customer: str, session: str | None) -> None:
    request = dumps(Erasure(request_id="r1", customer_id=customer, session_id=session))
    if session is None:
        await p.apply_index(request, erasure.headers())
    else:
        await p.run_stage("understand", request, Source(), erasure.headers())


async def test_a_session_and_the_index_entry_are_tombstoned(pipeline: TestPipeline) -> None:
    await pipeline.send(ticket("a1", "My kettle is leaking.", "S1"))
    await pipeline.send(ticket("a2", "My controller drifts.", "S2"))
    tables = pipeline.state
    assert {"S1", "S2"} <= set(tables.batons.data) and "C1" in tables.customers.data

    await erase(pipeline, "C1", "S1")
    await erase(pipeline, "C1", "S2")
    await erase(pipeline, "C1", None)
    assert tables.batons.data == {} and tables.batons.tombstones == ["S1", "S2"]
    # The index entry is replaced by the mark of the erasure: no session, no order, the time.
    mark = pipeline.batons.index("C1")
    assert mark is not None and mark.sessions == [] and mark.orders == [] and mark.erased_at

    replies = await pipeline.send(
        ticket("a3", "What happened with the order I asked about yesterday?", "S3")
    )
    assert replies[-1].ticket_id == "a3" and replies[-1].order_id is None


async def test_a_request_for_another_customer_erases_nothing(pipeline: TestPipeline) -> None:
    await pipeline.send(ticket("a1", "My kettle is leaking.", "S1"))
    await erase(pipeline, "C2", "S1")
    await erase(pipeline, "C2", None)
    tables = pipeline.state
    assert set(tables.batons.data) == {"S1"} and tables.batons.tombstones == []
    held = pipeline.batons.index("C1")
    assert held is not None and held.sessions and held.erased_at is None


async def test_an_erasure_waits_for_the_ticket_in_flight(pipeline: TestPipeline) -> None:
    await pipeline.send(ticket("a1", "My kettle is leaking.", "S1"))
    await pipeline.gate.enter("S1", "a2", lambda: None)
    waiting = asyncio.create_task(erase(pipeline, "C1", "S1"))
    await asyncio.sleep(0.05)
    assert not waiting.done() and "S1" in pipeline.state.batons.data
    pipeline.gate.leave("S1", "a2")
    await waiting
    assert pipeline.state.batons.tombstones == ["S1"]


def test_only_the_marked_records_are_requests() -> None:
    assert erasure.requested(erasure.headers())
    assert not erasure.requested(None) and not erasure.requested([("baton-control", b"x")])


async def test_an_erasure_is_never_shed_with_a_flooding_sessions_tickets(
    pipeline: TestPipeline,
) -> None:
    await pipeline.send(ticket("a1", "My kettle is leaking.", "S1"))
    request = dumps(Erasure(request_id="r2", customer_id="C1", session_id="S1"))
    await pipeline.shed("understand", request, Source(), erasure.headers())
    assert pipeline.state.batons.tombstones == ["S1"]


async def forget_all(p: TestPipeline, customer: str, sessions: list[str]) -> None:
    for session in sessions:
        await erase(p, customer, session)
    await erase(p, customer, None)


async def test_records_written_before_an_erasure_bring_nothing_back(pipeline: TestPipeline) -> None:
    n = pipeline.topics
    written = utcnow() - timedelta(minutes=5)
    old = ticket("a1", "My kettle is leaking, I live at 5 Elm Road.", "S1")
    await pipeline.send(old)
    # The session's summary as the index topic held it.
    baton = pipeline.baton("S1")
    update = dumps(
        IndexUpdate(
            customer_id="C1",
            summary=memory.summarize(baton, "a1"),
            orders=history.orders_discussed(baton),
        )
    )
    await forget_all(pipeline, "C1", ["S1"])
    pipeline.sink.sent.clear()

    # An offset reset or a re-processing reads the same records again, with their old times.
    await pipeline.intake(dumps(old), Source(n.tickets, 0, 0, timestamp=written))
    record = dumps(StageRecord(ticket=old))
    await pipeline.run_stage("understand", record, Source(n.sessions, 0, 0, timestamp=written))
    await pipeline.shed("understand", record, Source(n.sessions, 0, 1, timestamp=written))
    await pipeline.apply_index(update)
    assert all(not records for records in pipeline.sink.sent.values()), pipeline.sink.sent
    assert pipeline.batons.get("S1") is None
    mark = pipeline.batons.index("C1")
    assert mark is not None and mark.sessions == [] and mark.orders == []

    # The customer's tickets written after the erasure are answered as a new customer's.
    replies = await pipeline.send(ticket("a2", "My controller drifts.", "S2"))
    assert [r.ticket_id for r in replies] == ["a2"]
    index = pipeline.batons.index("C1")
    assert index is not None and [s.session_id for s in index.sessions] == ["S2"]
    assert index.erased_at == mark.erased_at


async def test_the_mark_of_an_erasure_is_kept_for_the_index_retention(
    pipeline: TestPipeline,
) -> None:
    await pipeline.send(ticket("a1", "My kettle is leaking.", "S1"))
    await forget_all(pipeline, "C1", ["S1"])
    await pipeline.sweep_index()
    assert pipeline.batons.erased_at("C1") is not None
    later = utcnow() + timedelta(days=pipeline.settings.index_retention_days + 1)
    swept = await pipeline.sweep_index(later)
    assert swept.customers == 1 and pipeline.batons.index("C1") is None

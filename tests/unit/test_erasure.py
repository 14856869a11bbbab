"""Erasure requests inside the worker: a customer's batons and index entry are tombstoned."""

from __future__ import annotations

import asyncio

from schemas import Erasure, dumps
from streams.runtime import erasure
from streams.runtime.dead_letters import Source
from streams.runtime.pipeline import Pipeline
from tests.fixtures.data import ticket
from tests.fixtures.pipelines import run, state


async def erase(p: Pipeline, customer: str, session: str | None) -> None:
    request = dumps(Erasure(request_id="r1", customer_id=customer, session_id=session))
    if session is None:
        await p.apply_index(request, erasure.headers())
    else:
        await p.run_stage("understand", request, Source(), erasure.headers())


async def test_a_session_and_the_index_entry_are_tombstoned(pipeline: Pipeline) -> None:
    await run(pipeline, ticket("a1", "My kettle is leaking.", "S1"))
    await run(pipeline, ticket("a2", "My controller drifts.", "S2"))
    tables = state(pipeline)
    assert {"S1", "S2"} <= set(tables.batons.data) and "C1" in tables.customers.data

    await erase(pipeline, "C1", "S1")
    await erase(pipeline, "C1", "S2")
    await erase(pipeline, "C1", None)
    assert tables.batons.data == {} and tables.batons.tombstones == ["S1", "S2"]
    assert tables.customers.data == {} and tables.customers.tombstones == ["C1"]

    replies = await run(
        pipeline, ticket("a3", "What happened with the order I asked about yesterday?", "S3")
    )
    assert replies[-1].ticket_id == "a3" and replies[-1].order_id is None


async def test_a_request_for_another_customer_erases_nothing(pipeline: Pipeline) -> None:
    await run(pipeline, ticket("a1", "My kettle is leaking.", "S1"))
    await erase(pipeline, "C2", "S1")
    await erase(pipeline, "C2", None)
    tables = state(pipeline)
    assert set(tables.batons.data) == {"S1"} and tables.batons.tombstones == []
    assert set(tables.customers.data) == {"C1"} and tables.customers.tombstones == []


async def test_an_erasure_waits_for_the_ticket_in_flight(pipeline: Pipeline) -> None:
    await run(pipeline, ticket("a1", "My kettle is leaking.", "S1"))
    await pipeline.gate.enter("S1", "a2", lambda: None)
    waiting = asyncio.create_task(erase(pipeline, "C1", "S1"))
    await asyncio.sleep(0.05)
    assert not waiting.done() and "S1" in state(pipeline).batons.data
    pipeline.gate.leave("S1", "a2")
    await waiting
    assert state(pipeline).batons.tombstones == ["S1"]


def test_only_the_marked_records_are_requests() -> None:
    assert erasure.requested(erasure.headers())
    assert not erasure.requested(None) and not erasure.requested([("baton-control", b"x")])


async def test_an_erasure_is_never_shed_with_a_flooding_sessions_tickets(
    pipeline: Pipeline,
) -> None:
    await run(pipeline, ticket("a1", "My kettle is leaking.", "S1"))
    request = dumps(Erasure(request_id="r2", customer_id="C1", session_id="S1"))
    await pipeline.shed("understand", request, Source(), erasure.headers())
    assert state(pipeline).batons.tombstones == ["S1"]

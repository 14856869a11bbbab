"""The expiry sweeps: they let other work run, and bound the customer index in time and size."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest

from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.schemas import Baton, IndexUpdate, MemoryIndex, SessionSummary, dumps
from baton_kafka.schemas.records import utcnow
from baton_kafka.streams.runtime.session.expiry import YIELD_EVERY, IndexSweep
from baton_kafka.streams.settings import Settings
from baton_kafka.streams.testing import MemorySink, TestPipeline

NOW = utcnow()
DAY = timedelta(days=1)


@pytest.fixture
def pipeline(store: SQLiteOrderStore) -> TestPipeline:
    settings = Settings(namespace="u", session_ttl_s=7 * 86400, index_retention_days=30)
    return TestPipeline(orders=store, settings=settings)


def put_baton(p: TestPipeline, session: str, idle: timedelta, customer: str = "C1") -> Baton:
    baton = Baton(session_id=session, customer_id=customer, updated_at=NOW - idle)
    p.state.batons.put(session, dumps(baton))
    return baton


def summary(session: str, age: timedelta, expired: bool = False) -> SessionSummary:
    return SessionSummary(session_id=session, core_problem="x", at=NOW - age, expired=expired)


def put_index(p: TestPipeline, customer: str, *summaries: SessionSummary) -> None:
    index = MemoryIndex(key=customer, sessions=list(summaries))
    p.state.customers.put(customer, dumps(index))


def index_of(p: TestPipeline, customer: str) -> list[str]:
    index = p.batons.index(customer)
    return [s.session_id for s in index.sessions] if index else []


@contextmanager
def ticking() -> Iterator[list[int]]:
    """Counts the turns another task gets on the event loop while the block runs."""
    ticks = [0]

    async def tick() -> None:
        while True:
            ticks[0] += 1
            await asyncio.sleep(0)

    task = asyncio.get_running_loop().create_task(tick())
    try:
        yield ticks
    finally:
        task.cancel()


async def test_a_sweep_of_many_batons_lets_other_tasks_run(pipeline: TestPipeline) -> None:
    for i in range(1000):
        put_baton(pipeline, f"S{i}", idle=8 * DAY if i % 2 else DAY)
    with ticking() as ticks:
        await asyncio.sleep(0)
        ticks[0] = 0
        expired = await pipeline.expire_sessions(lambda sid: True, now=NOW)
        during = ticks[0]
    assert expired == 500 and len(pipeline.state.batons.data) == 500
    # One turn at least every YIELD_EVERY batons; the sweep used to hold the loop throughout.
    assert during >= 1000 // YIELD_EVERY - 1


async def test_a_session_that_takes_a_ticket_during_the_sweep_is_not_expired(
    pipeline: TestPipeline,
) -> None:
    for i in range(3 * YIELD_EVERY):
        put_baton(pipeline, f"S{i:03d}", idle=8 * DAY)
    last = f"S{3 * YIELD_EVERY - 1:03d}"

    async def new_ticket() -> None:
        baton = pipeline.batons.get(last)
        assert baton is not None
        pipeline.batons.save(baton.model_copy(update={"updated_at": utcnow(), "version": 1}))

    # Runs at the sweep's first pause, after the sweep listed the batons.
    task = asyncio.get_running_loop().create_task(new_ticket())
    expired = await pipeline.expire_sessions(lambda sid: True, now=NOW)
    await task
    assert expired == 3 * YIELD_EVERY - 1
    assert list(pipeline.state.batons.data) == [last]


async def test_an_expired_sessions_summary_is_kept_for_the_retention_then_dropped(
    pipeline: TestPipeline,
) -> None:
    put_baton(pipeline, "OLD", idle=8 * DAY)
    put_baton(pipeline, "NEW", idle=DAY)
    assert await pipeline.expire_sessions(lambda sid: True, now=NOW) == 1
    await pipeline.index()
    index = pipeline.batons.index("C1")
    assert index is not None and [(s.session_id, s.expired) for s in index.sessions] == [
        ("OLD", True)
    ]
    # "The order I asked about before" still finds the expired session...
    assert [s.session_id for s in pipeline.batons.earlier("C1", "NEW")] == ["OLD"]
    assert await pipeline.sweep_index(now=NOW) == IndexSweep()
    # ...until its last ticket is older than the retention: then the customer's key goes.
    assert await pipeline.sweep_index(now=NOW + 23 * DAY) == IndexSweep(sessions=1, customers=1)
    assert pipeline.batons.index("C1") is None
    assert pipeline.state.customers.tombstones == ["C1"]


async def test_the_index_sweep_keeps_recent_sessions_and_lets_other_tasks_run(
    pipeline: TestPipeline,
) -> None:
    put_index(pipeline, "C1", summary("S2", DAY), summary("S1", 40 * DAY))
    for i in range(1000):
        put_index(pipeline, f"gone-{i}", summary(f"G{i}", 31 * DAY, expired=True))
    with ticking() as ticks:
        await asyncio.sleep(0)
        ticks[0] = 0
        swept = await pipeline.sweep_index(now=NOW)
        during = ticks[0]
    assert swept == IndexSweep(sessions=1001, customers=1000)
    assert index_of(pipeline, "C1") == ["S2"] and list(pipeline.state.customers.data) == ["C1"]
    assert during >= 1000 // YIELD_EVERY - 1


async def test_an_update_older_than_the_retention_is_not_indexed(pipeline: TestPipeline) -> None:
    late = IndexUpdate(customer_id="C9", summary=summary("S1", 31 * DAY, expired=True))
    await pipeline.apply_index(dumps(late))
    assert pipeline.batons.index("C9") is None and pipeline.state.customers.tombstones == []
    put_index(pipeline, "C9", summary("S2", 40 * DAY))
    await pipeline.apply_index(dumps(late))
    assert pipeline.batons.index("C9") is None and pipeline.state.customers.tombstones == ["C9"]


async def test_the_index_keeps_the_configured_number_of_sessions(store: SQLiteOrderStore) -> None:
    pipeline = TestPipeline(orders=store, settings=Settings(namespace="u", index_keep=3))
    for i in range(5):
        update = IndexUpdate(customer_id="C1", summary=summary(f"S{i}", (10 - i) * DAY))
        await pipeline.apply_index(dumps(update))
    assert index_of(pipeline, "C1") == ["S4", "S3", "S2"]


async def test_a_baton_erased_during_the_sweep_sends_no_summary(pipeline: TestPipeline) -> None:
    for i in range(3 * YIELD_EVERY):
        put_baton(pipeline, f"S{i:03d}", idle=8 * DAY, customer="C1" if i else "C-erased")
    for i in range(3 * YIELD_EVERY - 1, 2 * YIELD_EVERY, -1):
        put_baton(pipeline, f"S{i:03d}", idle=8 * DAY, customer="C-erased")

    async def forget() -> None:
        # `baton forget` arrives while the sweep pauses: the batons go, then the index entry.
        for session, raw in list(pipeline.state.batons.data.items()):
            if raw is not None and Baton.model_validate_json(raw).customer_id == "C-erased":
                pipeline.batons.delete(session)

    task = asyncio.get_running_loop().create_task(forget())
    await pipeline.expire_sessions(lambda sid: True, now=NOW)
    await task
    assert isinstance(pipeline.sink, MemorySink)
    sent = [
        IndexUpdate.model_validate_json(v)
        for _, v in pipeline.sink.take(pipeline.topics.memory_index)
    ]
    erased = [u for u in sent if u.customer_id == "C-erased"]
    # Only the one swept before the pause had its summary sent; the erased ones sent none.
    assert len(erased) == 1 and erased[0].summary.session_id == "S000"
    assert {u.customer_id for u in sent} == {"C1", "C-erased"}

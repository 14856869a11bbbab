"""SQLite reads on the event loop: the thread's answers; the thread when the loop would wait."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.agents.orders import sqlite as sqlite_store
from baton_kafka.agents.orders.table import SELECT, from_row
from baton_kafka.schemas.records import Order
from baton_kafka.streams.bench.load import Workload
from tests.fixtures.data import order

FOR_CUSTOMER = f"{SELECT} WHERE customer_id = ? ORDER BY ordered_at DESC, order_id DESC LIMIT ?"


class Counted(SQLiteOrderStore):
    """The store, counting the calls that went to its thread."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.on_thread = 0

    async def _run(self, sql: str, params: Any = (), many: bool = False) -> list[Any]:
        self.on_thread += 1
        return await super()._run(sql, params, many)


class RollbackJournal(Counted):
    """A store whose file stayed in rollback-journal mode (as where WAL is not available):
    another connection's write lock keeps its readers out."""

    def _connect(self) -> sqlite3.Connection:
        conn = super()._connect()
        conn.execute("PRAGMA journal_mode=DELETE")
        return conn


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Counted]:
    made = Counted(tmp_path / "orders.sqlite3")
    try:
        yield made
    finally:
        await made.close()


def _many(customer: str, n: int) -> list[Order]:
    first = order("O-0", customer_id=customer)
    return [
        first.model_copy(
            update={"order_id": f"O-{i}", "ordered_at": first.ordered_at + timedelta(minutes=i)}
        )
        for i in range(n)
    ]


async def test_every_read_on_the_loop_is_the_threads_read(store: Counted) -> None:
    orders = Workload("cpu", 40, 5).orders()
    await store.upsert(orders)
    ids = [*sorted({o.customer_id for o in orders}), "nobody"]
    for customer in ids:
        before = store.on_thread
        for limit in (0, 1, 2, 50):
            plain = [from_row(r) for r in await store._run(FOR_CUSTOMER, (customer, limit))]
            store.on_thread -= 1
            assert await store.for_customer(customer, limit) == plain
        assert store.on_thread == before  # answered on the loop, not by the thread
    for o in [*orders[:20], order("O-missing")]:
        rows = await store._run(f"{SELECT} WHERE order_id = ?", (o.order_id,))
        assert await store.get(o.order_id) == (from_row(rows[0]) if rows else None)
    assert await store.count() == len(orders)


async def test_a_long_query_is_interrupted_and_finished_by_the_thread(store: Counted) -> None:
    orders = _many("C-big", 600)
    await store.upsert(orders)
    interrupted = []
    step = store._step

    def watched() -> int:
        stop = step()
        interrupted.append(stop)
        return stop

    store._step = watched  # type: ignore[method-assign]
    before = store.on_thread
    got = await store.for_customer("C-big", 600)
    want = sorted(orders, key=lambda o: (o.ordered_at, o.order_id), reverse=True)
    assert [o.order_id for o in got] == [o.order_id for o in want]
    assert interrupted[-1] == 1 and store.on_thread == before + 1
    # A short read is still answered on the loop afterwards.
    assert len(await store.for_customer("C-big", 5)) == 5
    assert store.on_thread == before + 1


async def test_a_locked_database_is_read_by_the_thread_and_the_loop_goes_on(
    tmp_path: Path,
) -> None:
    path = tmp_path / "orders.sqlite3"
    store = RollbackJournal(path)
    try:
        await store.upsert([order("O-1", customer_id="C1")])
        assert len(await store.for_customer("C1")) == 1  # opens the loop's connection
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")
        other.execute(
            "INSERT INTO orders SELECT 'O-2', customer_id, product_name, status, amount, currency,"
            " ordered_at, delivered_at, carrier, tracking_no, items, refunded FROM orders"
        )
        before = store.on_thread
        read = asyncio.ensure_future(store.for_customer("C1"))
        began = time.monotonic()
        await asyncio.sleep(0.05)
        # The loop was not held by the lock: the read waits on the thread instead.
        assert time.monotonic() - began < 2.0
        assert not read.done() and store.on_thread == before + 1
        other.execute("COMMIT")
        other.close()
        assert sorted(o.order_id for o in await read) == ["O-1", "O-2"]
    finally:
        await store.close()


async def test_a_read_never_overtakes_a_write_asked_before_it(store: Counted) -> None:
    await store.upsert([order("O-1", customer_id="C1")])
    assert len(await store.for_customer("C1")) == 1
    write = asyncio.ensure_future(store.upsert([order("O-2", customer_id="C1")]))
    await asyncio.sleep(0)  # the write is queued on the thread
    assert len(await store.for_customer("C1")) == 2
    await write


async def test_a_reader_that_cannot_open_is_not_tried_again(
    store: Counted, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.upsert([order("O-1", customer_id="C1")])

    def refuse(*_: Any, **__: Any) -> sqlite3.Connection:
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(sqlite_store.sqlite3, "connect", refuse)
    before = store.on_thread
    assert len(await store.for_customer("C1")) == 1
    assert len(await store.for_customer("C1")) == 1
    assert store.on_thread == before + 2 and store._reader_broken


async def test_the_loop_reads_the_file_the_store_opened_wherever_the_process_moves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "b")
    other = SQLiteOrderStore("orders.sqlite3")  # another store at the same relative name
    await other.upsert([order("O-B", customer_id="C1")])
    await other.close()
    monkeypatch.chdir(tmp_path / "a")
    store = Counted(Path("orders.sqlite3"))
    try:
        await store.upsert([order("O-A", customer_id="C1")])
        monkeypatch.chdir(tmp_path / "b")
        before = store.on_thread
        assert [o.order_id for o in await store.for_customer("C1")] == ["O-A"]
        assert store.on_thread == before  # on the loop, from the store's own file
    finally:
        await store.close()


async def test_an_in_memory_store_is_read_by_its_thread() -> None:
    store = Counted(Path(":memory:"))
    try:
        await store.upsert([order("O-1", customer_id="C1")])
        before = store.on_thread
        assert [o.order_id for o in await store.for_customer("C1")] == ["O-1"]
        assert store.on_thread == before + 1
    finally:
        await store.close()

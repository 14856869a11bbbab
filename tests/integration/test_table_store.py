"""The RocksDB table store: a restarted worker keeps its batons and reads only what it lacks."""

from __future__ import annotations

import time

import pytest

from streams.kafka.topics import BATON_TABLE, CUSTOMER_TABLE
from tests.fixtures import delivery
from tests.fixtures.data import conversations, orders_of
from tests.fixtures.deployments import Deployment, WorkerProcess
from tests.fixtures.observability import health_until_ready, scrape, total

pytestmark = pytest.mark.integration

SESSIONS = 8
READ = "baton_changelog_records_read_total"


def changelog(deployment: Deployment, table: str) -> str:
    return f"baton-{deployment.namespace}-{table}-changelog"


async def changelog_size(deployment: Deployment, table: str) -> int:
    """Records in the table's changelog now (no compaction runs in a test this short)."""
    return len(await delivery.drain(deployment, changelog(deployment, table), namespaced=False))


async def restart(deployment: Deployment, **env: str) -> tuple[WorkerProcess, dict[str, float]]:
    """Start a worker, wait until it is ready (its tables recovered); what it read, by table."""
    started = time.monotonic()
    worker = deployment.start_worker(**env)
    await health_until_ready(worker, timeout=120)
    samples = await scrape(worker)
    read = {t: total(samples, READ, table=t) for t in (BATON_TABLE, CUSTOMER_TABLE)}
    return worker, {**read, "ready_s": round(time.monotonic() - started, 1)}


@pytest.mark.timeout(420)
async def test_a_worker_restarted_on_its_rocksdb_store_reads_only_what_it_missed(
    deployment: Deployment,
) -> None:
    prefix = deployment.namespace
    store_dir = deployment.data_dir / "store-w1"
    rocksdb = {"BATON_STORE": "rocksdb", "BATON_STORE_DIR": str(store_dir)}
    tickets, expected_order = conversations(prefix, SESSIONS)
    turns = [[t for t in tickets if t["ticket_id"].endswith(f"-{n}")] for n in range(3)]
    deployment.import_orders(o for i in range(SESSIONS) for o in orders_of(f"{prefix}c{i}"))

    worker, first_start = await restart(deployment, **rocksdb)
    await deployment.publish_tickets(turns[0])
    await delivery.replies(deployment, len(turns[0]))
    worker.stop()
    at_stop = await changelog_size(deployment, BATON_TABLE)
    assert at_stop >= 3 * len(turns[0]), "fewer baton writes than stages: the test proves nothing"
    assert list(store_dir.glob(f"{BATON_TABLE}-*.db")), f"no RocksDB files in {store_dir}"

    # Meanwhile a worker on the memory store takes over the sessions: it reads the whole
    # changelog at its start, and adds to it.
    worker, memory = await restart(deployment, BATON_STORE="memory")
    assert memory[BATON_TABLE] == at_stop, (memory, at_stop)
    await deployment.publish_tickets(turns[1])
    before = await delivery.replies(deployment, len(turns[0]) + len(turns[1]))
    worker.stop()
    now = await changelog_size(deployment, BATON_TABLE)
    assert now > at_stop

    # (b) The RocksDB worker's store holds the changelog offset it has the batons up to: it
    # reads only the records written while it was away, not the whole changelog.
    worker, back = await restart(deployment, **rocksdb)
    assert back[BATON_TABLE] == now - at_stop, (back, at_stop, now)

    # (a) The batons are intact: each follow-up (it names no product, and the customer has two
    # orders) is answered about the session's order, one baton version after the last.
    await deployment.publish_tickets(turns[2])
    everything = await delivery.replies(deployment, len(tickets))
    delivery.Tally(delivery.sessions(tickets), everything).assert_exactly_once_in_order()
    previous = {r.session_id: r for r in before if r.ticket_id.endswith("-1")}
    for reply in (r for r in everything if r.ticket_id.endswith("-2")):
        order_id = expected_order[reply.session_id]
        assert reply.order_id == order_id and order_id in reply.reply, reply
        assert reply.baton_version == previous[reply.session_id].baton_version + 3, reply
    worker.stop()

    # Stopped cleanly and restarted with nothing new: nothing to read at all.
    written = await changelog_size(deployment, BATON_TABLE)
    worker, again = await restart(deployment, **rocksdb)
    assert again[BATON_TABLE] == 0, (again, written)
    worker.stop()
    delivery.figures(
        f"table store restarts, {deployment.broker.kind}",
        baton_changelog_records=written,
        first_start=first_start,
        memory_start_after_rocksdb=memory,
        rocksdb_restart_after_memory=back,
        rocksdb_clean_restart=again,
    )

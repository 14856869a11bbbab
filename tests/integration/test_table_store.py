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
async def test_a_worker_restarted_on_its_rocksdb_store_keeps_its_batons_and_reads_no_changelog(
    deployment: Deployment,
) -> None:
    prefix = deployment.namespace
    store_dir = deployment.data_dir / "store-w1"
    deployment.env_extra.update(BATON_STORE="rocksdb", BATON_STORE_DIR=str(store_dir))
    tickets, expected_order = conversations(prefix, SESSIONS)
    first = [t for t in tickets if not t["ticket_id"].endswith("-2")]
    follow = [t for t in tickets if t["ticket_id"].endswith("-2")]
    deployment.import_orders(o for i in range(SESSIONS) for o in orders_of(f"{prefix}c{i}"))

    worker, _ = await restart(deployment)
    await deployment.publish_tickets(first)
    before = await delivery.replies(deployment, len(first))
    assert len(before) == len(first)
    worker.stop()
    written = await changelog_size(deployment, BATON_TABLE)
    assert written >= 3 * len(first), "fewer baton writes than stages: the test proves nothing"
    assert list(store_dir.glob(f"{BATON_TABLE}-*.db")), f"no RocksDB files in {store_dir}"

    # (b) The store holds the batons and the changelog offset it has them up to: nothing to read.
    worker, rocksdb = await restart(deployment)
    assert rocksdb[BATON_TABLE] == 0, (rocksdb, written)

    # (a) The batons are intact: each follow-up (it names no product, and the customer has two
    # orders) is answered about the session's order, one baton version after the last.
    await deployment.publish_tickets(follow)
    everything = await delivery.replies(deployment, len(tickets))
    tally = delivery.Tally(delivery.sessions(tickets), everything)
    tally.assert_exactly_once_in_order()
    previous = {r.session_id: r for r in before if r.ticket_id.endswith("-1")}
    for reply in (r for r in everything if r.ticket_id.endswith("-2")):
        order_id = expected_order[reply.session_id]
        assert reply.order_id == order_id and order_id in reply.reply, reply
        assert reply.baton_version == previous[reply.session_id].baton_version + 3, reply
    worker.stop()

    # The memory store, for comparison, reads every record of the changelog at each start.
    written = await changelog_size(deployment, BATON_TABLE)
    worker, memory = await restart(deployment, BATON_STORE="memory")
    assert memory[BATON_TABLE] == written, (memory, written)
    worker.stop()
    delivery.figures(
        f"table store restart, {deployment.broker.kind}",
        baton_changelog_records=written,
        read_by_rocksdb_restart=rocksdb,
        read_by_memory_restart=memory,
    )

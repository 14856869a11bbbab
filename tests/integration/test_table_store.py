"""The RocksDB table store: a restarted worker keeps its batons and reads only what it lacks."""

from __future__ import annotations

import time

import pytest

from baton_kafka.agents.testing.standin import run_in_thread
from baton_kafka.streams.kafka.topics import BATON_TABLE, CUSTOMER_TABLE
from tests.fixtures import delivery
from tests.fixtures.data import conversations, orders_of
from tests.fixtures.deployments import Deployment, WorkerProcess
from tests.fixtures.observability import health_until_ready, scrape, total

# The RocksDB store is what a production worker restarts on: its recovery is measured on the
# Apache Kafka leg only (the store itself does not depend on the broker).
pytestmark = [pytest.mark.integration, pytest.mark.production_leg]

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


@pytest.mark.timeout(420)
async def test_a_rocksdb_worker_killed_mid_stream_loses_and_repeats_no_reply(
    deployment: Deployment,
) -> None:
    """After ``kill -9`` the store may hold writes the changelog never acknowledged; the
    redelivered records settle them like any entry in flight: one reply per ticket, in order."""
    prefix = deployment.namespace
    store_dir = deployment.data_dir / "store-w1"
    deployment.env_extra.update(BATON_STORE="rocksdb", BATON_STORE_DIR=str(store_dir))
    tickets, expected_order = conversations(prefix, 12)
    deployment.import_orders(o for i in range(12) for o in orders_of(f"{prefix}c{i}"))
    with run_in_thread(latency=0.3, jitter=0.1) as slow:
        deployment.env_extra["ANTHROPIC_BASE_URL"] = slow.base_url
        worker, _ = await restart(deployment)
        await deployment.publish_tickets(tickets)
        await deployment.read("support.replies", lambda vs: len(vs) >= 12, timeout=150)
        worker.kill()
        at_kill = await changelog_size(deployment, BATON_TABLE)
        # Four baton writes per ticket: fewer means tickets were still in flight at the kill.
        assert at_kill < 4 * len(tickets), "the kill came after the last ticket: proves nothing"
        worker, back = await restart(deployment)
        try:
            replies = await delivery.replies(deployment, len(tickets))
        except AssertionError as exc:
            # Which tickets lack a reply and why: lost (no reply will come) or late.
            why = await delivery.unanswered(deployment, tickets)
            raise AssertionError(f"{exc}\n{why}") from None
    delivery.Tally(delivery.sessions(tickets), replies).assert_exactly_once_in_order()
    for reply in (r for r in replies if r.ticket_id.endswith("-2")):
        assert reply.order_id == expected_order[reply.session_id], reply
    assert back[BATON_TABLE] < at_kill, (back, at_kill)
    worker.stop()
    delivery.figures(
        f"table store kill -9, {deployment.broker.kind}",
        baton_changelog_records_at_kill=at_kill,
        read_by_rocksdb_restart=back,
        replies=len(replies),
    )


@pytest.mark.timeout(420)
async def test_two_rocksdb_workers_of_one_data_dir_hand_their_sessions_over_and_back(
    deployment: Deployment,
) -> None:
    """Each worker gets a store directory of its own under the shared data dir; sessions move
    to the other worker and back through rebalances, their batons with them."""
    prefix = deployment.namespace
    deployment.env_extra["BATON_STORE"] = "rocksdb"
    tickets, expected_order = conversations(prefix, 12)
    turns = [[t for t in tickets if t["ticket_id"].endswith(f"-{n}")] for n in range(3)]
    deployment.import_orders(o for i in range(12) for o in orders_of(f"{prefix}c{i}"))
    a, b = deployment.start_worker(), deployment.start_worker()
    await delivery.settled([a, b])
    await deployment.publish_tickets(turns[0])
    await delivery.replies(deployment, len(turns[0]))
    dirs = sorted((deployment.data_dir / "store" / f"baton-{prefix}").iterdir())
    assert [d.name.rsplit("-", 1)[1] for d in dirs] == sorted([str(a.web_port), str(b.web_port)])

    a.stop()  # b takes every session
    at_stop = await changelog_size(deployment, BATON_TABLE)
    await deployment.publish_tickets(turns[1])
    before = await delivery.replies(deployment, len(turns[0]) + len(turns[1]))
    away = await changelog_size(deployment, BATON_TABLE) - at_stop
    assert away > 0

    dir_a = next(d for d in dirs if d.name.endswith(f"-{a.web_port}"))
    back = deployment.start_worker(BATON_STORE_DIR=str(dir_a))
    await health_until_ready(back, timeout=120)
    await delivery.settled([b, back])
    read = total(await scrape(back), READ, table=BATON_TABLE)
    # What it read: at most what was written while it was away, not the whole changelog.
    assert 0 < read <= away, (read, away, at_stop)

    await deployment.publish_tickets(turns[2])
    everything = await delivery.replies(deployment, len(tickets))
    delivery.Tally(delivery.sessions(tickets), everything).assert_exactly_once_in_order()
    previous = {r.session_id: r for r in before if r.ticket_id.endswith("-1")}
    for reply in (r for r in everything if r.ticket_id.endswith("-2")):
        assert reply.order_id == expected_order[reply.session_id], reply
        assert reply.baton_version == previous[reply.session_id].baton_version + 3, reply
    delivery.figures(
        f"table store, two workers, one away and back, {deployment.broker.kind}",
        baton_changelog_records=at_stop + away,
        written_while_away=away,
        read_by_returning_worker=read,
    )

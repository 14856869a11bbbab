"""Scale-out: three workers share twelve partitions; the load spreads, the guarantees hold."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from baton_kafka.agents.testing.standin import StandIn, run_in_thread
from tests.fixtures import delivery
from tests.fixtures.data import conversations, orders_of
from tests.fixtures.delivery import Tally, figures, settled, synced_generation
from tests.fixtures.deployments import Deployment

pytestmark = pytest.mark.integration

WORKERS = 3
SESSIONS = 30


@pytest.fixture
def models() -> Iterator[list[StandIn]]:
    """One stand-in per worker: which one a ticket's calls reach tells which worker ran it."""
    with ExitStack() as stack:
        yield [stack.enter_context(run_in_thread(latency=0.1)) for _ in range(WORKERS)]


@pytest.mark.timeout(400)
async def test_three_workers_share_twelve_partitions(
    deployment: Deployment, models: list[StandIn]
) -> None:
    prefix = deployment.namespace
    deployment.import_orders(o for i in range(SESSIONS) for o in orders_of(f"{prefix}c{i}"))
    workers = [
        deployment.start_worker(BATON_PARTITIONS="12", ANTHROPIC_BASE_URL=m.base_url)
        for m in models
    ]
    await settled(workers)
    generation = synced_generation(workers[0].log)
    tickets, _ = conversations(prefix, SESSIONS)
    started = time.monotonic()
    await deployment.publish_tickets(tickets)
    tally = Tally(delivery.sessions(tickets), await delivery.replies(deployment, len(tickets)))
    elapsed = time.monotonic() - started
    tally.assert_exactly_once_in_order()

    ids = {t["ticket_id"] for t in tickets}
    handled = [{r["ticket_id"] for r in m.stats()["requests"]} & ids for m in models]
    assert all(handled), f"a worker processed nothing: {[len(h) for h in handled]}"
    assert set().union(*handled) == ids
    if all(synced_generation(w.log) == generation for w in workers):
        # No rebalance during the run: each session, so each ticket, stayed on one worker.
        assert sum(len(h) for h in handled) == len(ids), [len(h) for h in handled]
    figures(
        "three workers, 12 partitions",
        tickets=len(tickets),
        lost=len(tally.lost),
        duplicates=len(tally.duplicates),
        reordered_sessions=len(tally.out_of_order()),
        tickets_per_worker=[len(h) for h in handled],
        seconds=round(elapsed, 1),
    )

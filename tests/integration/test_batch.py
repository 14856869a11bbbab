"""``--batch`` end to end: the same scores as the live eval, the same diff as a live replay."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from baton_kafka.agents.testing.standin import StandIn
from baton_kafka.schemas.records import Reply
from baton_kafka.streams.kafka.reader import read_topics
from baton_kafka.streams.kafka.topics import TopicNames
from tests.fixtures.brokers import Broker
from tests.fixtures.deployments import Deployment, recorded_deployment, settings_of
from tests.fixtures.evals import eval_report

pytestmark = [pytest.mark.integration, pytest.mark.timeout(660)]

# Report fields that differ between two runs of the same set by design.
RUN_FIELDS = ("elapsed_s", "batch")


def test_batch_eval_scores_as_the_liveeval_report() -> None:
    live = eval_report()
    batch = eval_report("--batch", "--batch-poll", "0.1")
    assert "batch" not in live
    figures = batch["batch"]
    assert figures["live_calls"] == 0 and figures["created"] == figures["batches"] > 0
    assert figures["cost_usd"] == pytest.approx(figures["live_run_cost_usd"] / 2, rel=1e-3)
    assert {k: v for k, v in batch.items() if k not in RUN_FIELDS} == {
        k: v for k, v in live.items() if k not in RUN_FIELDS
    }


@pytest.fixture(scope="module")
def run(
    broker: Broker, standin: StandIn, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    """A finished production run: two sessions, one ticket handed off after invalid strategy
    output (the stand-in fails its first two strategy calls only); its worker is stopped."""
    with recorded_deployment(broker, standin.base_url, tmp_path_factory.mktemp("batch")) as d:
        yield d


def replay(d: Deployment, *args: str) -> dict[str, Any]:
    done = d.baton("replay", *args, "--json", timeout=280)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    doc: dict[str, Any] = orjson.loads(done.stdout)
    return doc


async def test_replay_batch_gives_the_diff_a_live_replay_gives(
    run: Deployment, standin: StandIn
) -> None:
    ns = run.namespace
    live = replay(run, "--namespace", f"{ns}-live")
    before = standin.stats()["batches"]
    batch = replay(run, "--namespace", f"{ns}-batch", "--batch", "--batch-poll", "0.1")
    assert batch["batch"]["live_calls"] == 0
    assert standin.stats()["batches"] - before == batch["batch"]["created"] > 0
    assert (batch["replayed"], batch["same"], batch["changed"], batch["failed"]) == (
        live["replayed"],
        live["same"],
        live["changed"],
        0,
    )
    assert batch["changed"] == 1
    assert sorted(batch["tickets"], key=lambda t: t["ticket_id"]) == sorted(
        live["tickets"], key=lambda t: t["ticket_id"]
    )

    # The namespace holds the replies and tickets as if its worker had answered them, so
    # running the command again sends nothing and shows the same diff.
    replica = settings_of(run, BATON_NAMESPACE=f"{ns}-batch")
    names = TopicNames.of(replica)
    read = await read_topics(replica, [names.replies, names.tickets])
    replies = [Reply.model_validate_json(m.value or b"") for m in read[names.replies]]
    assert sorted(r.ticket_id for r in replies) == [f"{ns}-a1", f"{ns}-a2", f"{ns}-b1"]
    assert len(read[names.tickets]) == 3
    again = replay(run, "--namespace", f"{ns}-batch", "--batch", "--batch-poll", "0.1")
    assert standin.stats()["batches"] - before == batch["batch"]["created"]
    assert "batch" not in again and again["tickets"] == batch["tickets"]

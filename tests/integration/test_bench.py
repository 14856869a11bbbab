"""``baton bench`` end to end on the shared broker: small runs complete with nothing lost."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from baton_kafka.streams.bench.breakdown import PHASES
from tests.fixtures.brokers import Broker, legs
from tests.fixtures.paths import ROOT

pytestmark = pytest.mark.integration


def bench(broker: Broker, tmp_path: Path, *args: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BATON_", "ANTHROPIC_"))}
    env.update(BATON_BROKER=broker.url, BATON_DATA_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "baton_kafka.streams", "bench", *args, "--json"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        timeout=280,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-4000:]
    result: dict[str, Any] = orjson.loads(done.stdout)
    return result


def assert_delivered(row: dict[str, Any], tickets: int) -> None:
    assert row["tickets"] == tickets
    assert row["complete"] is True
    assert (row["lost"], row["duplicates"], row["order_violations"]) == (0, 0, 0)
    assert row["sessions_split_over_partitions"] == 0


# A smoke test of the bench itself on one leg; `baton bench --broker both` measures both.
@pytest.mark.one_broker
@pytest.mark.timeout(300)
def test_latency_smoke_answers_every_ticket_once_in_order(broker: Broker, tmp_path: Path) -> None:
    result = bench(
        broker,
        tmp_path,
        "--workload",
        "latency",
        "--tickets",
        "40",
        "--sessions",
        "8",
        "--latency",
        "0.2",
    )
    (row,) = result["rows"]
    assert row["workload"] == "latency"
    assert_delivered(row, 40)
    assert row["cpu_ms_per_ticket"] > 0
    assert sum(row["statuses"].values()) == 40
    # The breakdown comes from the records read back: every part of every ticket's path.
    parts = row["overhead_ms"]
    for part in ("intake_hop", "wait_before_lookup", "work_understand", "end_to_end"):
        assert parts[part]["p50"] is not None, part
    assert parts["model_understand"]["p50"] == 200.0
    assert parts["publish_to_reply"]["p50"] > parts["work_understand"]["p50"] >= 200.0
    cost = row["cost_per_ticket"]
    assert cost["tickets"] == 40
    assert cost["by_stage"]["understand"]["calls"] == 1.0
    assert cost["total"]["calls"] == pytest.approx(row["calls_per_ticket"], abs=0.01)
    assert cost["total"]["cost_usd"] > 0
    # Every ticket needs the understand and strategy calls, through the stand-in.
    assert row["calls_per_ticket"] >= 2
    assert row["model_calls_seen_by_standin"] >= 80
    assert row["prompt"]["minimal_tokens"] > 0
    assert row["baton_bytes"]["tickets_per_session"] == 5
    assert result["machine"]["nproc"] == os.cpu_count()


# CPU per ticket is the worker's, not the broker's: one leg (the bench runs both on demand).
@pytest.mark.one_broker
@pytest.mark.timeout(300)
def test_cpu_smoke_runs_the_pipeline_and_both_reference_chains(
    broker: Broker, tmp_path: Path
) -> None:
    result = bench(broker, tmp_path, "--workload", "cpu", "--tickets", "20", "--sessions", "4")
    rows = {r["workload"]: r for r in result["rows"]}
    assert set(rows) == {"cpu", "cpu: bare Faust chain", "cpu: plain aiokafka chain"}
    for row in rows.values():
        assert_delivered(row, 20)
    assert rows["cpu"]["calls_per_ticket"] >= 2
    split = rows["cpu"]["cpu_split_ms_per_ticket"]
    assert split["in_process_replies"] == 20
    assert split["model"] > 0 and split["stages_without_model"] > 0


# The bench starts the three-node cluster itself (three JVMs, replication 3, acks=all).
@pytest.mark.timeout(600)
def test_overhead_on_the_three_node_cluster_reports_tails(tmp_path: Path) -> None:
    if "kafka" not in legs():
        pytest.skip("the Apache Kafka leg is not among BATON_TEST_BROKERS")
    if shutil.which("java") is None and os.environ.get("CI") != "true":
        pytest.skip("Apache Kafka needs java")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BATON_", "ANTHROPIC_"))}
    env.update(BATON_DATA_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "baton_kafka.streams",
            "bench",
            "--broker",
            "kafka-cluster",
            "--workload",
            "overhead",
            "--sessions",
            "4",
            "--bursts",
            "2",
            "--warm-broker",
            "2",
            "--json",
        ],
        env=env,
        cwd=ROOT,
        capture_output=True,
        timeout=580,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-4000:]
    result = orjson.loads(done.stdout)
    assert result["broker"]["nodes"] == 3
    # Warmed first: records written with acks=all and read back over the three nodes.
    warmed = result["broker"]["warmed"]
    assert warmed["seconds"] == 2 and warmed["records_written"] > 0 and warmed["records_read"] > 0
    assert (result["broker"]["replication"], result["broker"]["acks"]) == (3, "all")
    # The JVM's own compilers unless told; the filesystem its data was on, read from the mounts.
    assert result["broker"]["jit"] == "tiered"
    assert isinstance(result["broker"]["storage"], str) and result["broker"]["storage"]
    assert result["settings"]["replication_factor"] == 3
    assert result["settings"]["producer_acks"] == "all"
    rows = {r["workload"]: r for r in result["rows"]}
    assert set(rows) == {"overhead: one at a time", "overhead: burst of 4"}
    # Two bursts of four, each over four new sessions, one after the other.
    burst = rows["overhead: burst of 4"]
    assert burst["bursts"]["bursts"] == 2 and len(burst["bursts"]["p50_ms"]) == 2
    # Each burst's waits and work, read back from the topics: one value a burst for each part.
    by_phase = burst["bursts"]["phases_p50_ms"]
    assert set(by_phase) == set(PHASES) and all(len(v) == 2 for v in by_phase.values())
    assert all(v is not None and v >= 0 for v in by_phase["wait_before_understand"])
    assert burst["sessions"] == 8
    for row, tickets in ((rows["overhead: one at a time"], 4), (burst, 8)):
        assert_delivered(row, tickets)
        assert 0 < row["p50_s"] <= row["p95_s"] <= row["p99_s"] <= row["max_s"]
        reply = row["overhead_ms"]["publish_to_reply"]
        assert 0 < reply["p50"] <= reply["p95"] <= reply["p99"] <= reply["max"]
        # Every topic of the run, the workers' changelogs too, has three replicas.
        assert row["topic_replicas"]["min"] == 3 and row["topic_replicas"]["topics"] >= 8

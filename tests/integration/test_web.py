"""The worker's HTTP port on the embedded broker: /metrics after a known run, /health, auth."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import orjson
import pytest

from baton_kafka.agents.testing.standin import StandIn
from tests.fixtures.data import ORDERS_HEADPHONES_SHIPPED
from tests.fixtures.deployments import Deployment
from tests.fixtures.observability import (
    by_label,
    get,
    health_until_ready,
    known_run,
    scrape_settled,
    total,
)
from tests.fixtures.paths import ROOT

# What the HTTP port serves does not depend on the broker: one leg is enough.
pytestmark = [pytest.mark.integration, pytest.mark.one_broker]

API_KEY = "sk-test-not-a-real-key"
TOKEN = "web-token-for-tests-0123456789"
DESK_TOKEN = "desk-token-for-tests-9876543210"


@pytest.mark.timeout(240)
async def test_metrics_and_health_after_a_known_run(
    deployment: Deployment, standin: StandIn, namespace: str
) -> None:
    deployment.import_orders(ORDERS_HEADPHONES_SHIPPED)
    # The stand-in files a call under the ticket its facts name; the reader's call carries only
    # the reply, so the calls are matched without it (test_reader.py counts the reader's).
    worker = deployment.start_worker(BATON_READER="off")
    seen = await health_until_ready(worker)
    # The web port answers before the consumer joined its group: not ready, with a reason.
    first_status, first_body = seen[0]
    assert first_status == 503, seen[:3]
    assert orjson.loads(first_body)["status"] == "not_ready"
    assert orjson.loads(first_body)["reason"]
    assert orjson.loads(seen[-1][1]) == {"status": "ready"}

    run = await known_run(deployment, standin, namespace)
    assert len(run.replies) == 5
    samples = await scrape_settled(worker, len(run.replies))

    assert total(samples, "baton_records_in_total", stage="intake") == 6
    assert total(samples, "baton_stage_outputs_total", stage="intake", outcome="ok") == 5
    assert total(samples, "baton_stage_outputs_total", stage="intake", outcome="invalid") == 1
    for stage in ("understand", "lookup", "strategy"):
        assert total(samples, "baton_records_in_total", stage=stage) == 5

    statuses = Counter(r.status for r in run.replies)
    assert by_label(samples, "baton_replies_total", "status") == dict(statuses)
    assert statuses["degraded"] >= 1
    assert total(samples, "baton_end_to_end_latency_seconds_count") == 5

    letters = Counter((dl.stage, dl.reason) for dl in run.dead_letters)
    assert letters[("intake", "invalid_input")] == 1
    assert letters[("understand", "model_error")] == 1
    got = Counter(
        {
            (labels["stage"], labels["reason"]): int(v)
            for labels, v in samples["baton_dead_letters_total"]
        }
    )
    assert got == letters

    # Every answered model call, as the stand-in served them and as the replies account them.
    assert total(samples, "baton_model_calls_total") == run.model_calls
    assert run.model_calls == sum(r.usage.calls for r in run.replies)
    assert total(samples, "baton_model_tokens_total", kind="input") == sum(
        r.usage.input_tokens for r in run.replies
    )
    # 500 three times on one understand call (two retries), 429 once on one strategy call.
    assert by_label(samples, "baton_model_retries_total", "cause") == {
        "unavailable": 2,
        "overloaded": 1,
    }
    assert total(samples, "baton_tables_recovered") == 1
    assert total(samples, "baton_partitions_assigned") > 0
    assert "baton_consumer_lag" in samples
    assert total(samples, "baton_stage_in_flight") == 0

    status, _, body = await get(worker, "/health")
    assert (status, orjson.loads(body)) == (200, {"status": "ready"})
    # Faust's own views are off: no baton (with the ticket's text) by session over HTTP.
    for path in (f"/table/batons/{namespace}-s1/", "/table/", "/router/", "/"):
        status, _, body = await get(worker, path)
        assert status == 404 and namespace.encode() not in body, path

    # The worker logged one JSON line per event, with ids, and never the key.
    log = worker.log.read_text()
    assert API_KEY not in log
    events = [
        orjson.loads(line)
        for line in log.splitlines()
        if line.startswith("{") and '"baton.events"' in line
    ]
    first = [e for e in events if e.get("ticket_id") == f"{namespace}-1"]
    assert {(e["stage"], e["outcome"]) for e in first} >= {
        ("intake", "ok"),
        ("understand", "ok"),
        ("lookup", "ok"),
        ("strategy", "ok"),
        ("reply", "answered"),
    }
    assert all(e["session_id"] == f"{namespace}-s1" for e in first)
    assert any(e["outcome"] == "dead_letter" and e["stage"] == "understand" for e in events)


@pytest.mark.timeout(180)
async def test_an_openmetrics_scrape_links_a_latency_to_the_tickets_trace(
    deployment: Deployment, namespace: str
) -> None:
    """Scraped as Prometheus does with exemplars on: the latency histograms name the trace a
    published ``traceparent`` started (the worker has no SDK: the context is passed on)."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    parent = f"00-{trace_id}-00f067aa0ba902b7-01".encode()
    deployment.import_orders(ORDERS_HEADPHONES_SHIPPED)
    worker = deployment.start_worker()
    await health_until_ready(worker)
    text = "My headphones arrived broken, I want a refund."
    record = orjson.dumps(
        {"ticket_id": f"{namespace}-om", "session_id": "s-om", "customer_id": "c-ana", "text": text}
    )
    await deployment.publish([("s-om", record)], headers=[("traceparent", parent)])
    await deployment.replies(1)
    await scrape_settled(worker, 1)

    accept = "application/openmetrics-text; version=1.0.0,text/plain;version=0.0.4;q=0.5"
    status, content_type, body = await get(worker, "/metrics", accept=accept)
    assert status == 200
    assert content_type.startswith("application/openmetrics-text; version=1.0.0")
    exemplars: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            if sample.exemplar is not None:
                exemplars.setdefault(family.name, set()).add(sample.exemplar.labels["trace_id"])
    assert exemplars.get("baton_stage_latency_seconds") == {trace_id}
    assert exemplars.get("baton_end_to_end_latency_seconds") == {trace_id}


def test_non_loopback_bind_without_token_does_not_start(deployment: Deployment) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "baton_kafka.streams", "worker"],
        env=deployment.env(BATON_WEB_BIND="0.0.0.0"),
        capture_output=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 2
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "0.0.0.0" in lines[0] and "BATON_WEB_TOKEN" in lines[0]


@pytest.mark.timeout(180)
async def test_token_protects_every_view(deployment: Deployment) -> None:
    worker = deployment.start_worker(
        BATON_WEB_TOKEN=TOKEN, BATON_DESK_TOKEN=DESK_TOKEN, BATON_LOG_FORMAT="text"
    )
    await health_until_ready(worker, TOKEN)
    for path in (
        "/metrics",
        "/dashboard/data.json",
        "/dashboard/queue.json",
        "/router/",
        "/table/",
    ):
        status, _, _ = await get(worker, path)
        assert status == 401, path
        status, _, _ = await get(worker, path, token="not-the-token")
        assert status == 401, path
    # A liveness probe needs no token and learns nothing but the status.
    for token in (None, "not-the-token"):
        status, _, body = await get(worker, "/health", token)
        assert status == 200 and orjson.loads(body) == {"status": "ready"}
    for path in ("/router/", "/table/", "/table/batons/", "/"):
        status, _, _ = await get(worker, path, TOKEN)
        assert status == 404, path
    status, content_type, _ = await get(worker, "/metrics", TOKEN)
    assert status == 200 and content_type.startswith("text/plain")
    # The page holds no data: it opens without a token, and its script signs in.
    status, content_type, page = await get(worker, "/dashboard")
    assert status == 200 and content_type.startswith("text/html")
    assert b"/dashboard/data.json" in page and b"/dashboard/login" in page
    status, _, data = await get(worker, "/dashboard/data.json", TOKEN)
    assert status == 200 and orjson.loads(data)["health"]["ready"] is True
    assert orjson.loads(data)["ids_shown"] is False
    # A token in a URL counts for nothing; the metrics token never reaches the desk.
    assert (await get(worker, f"/dashboard/data.json?token={TOKEN}"))[0] == 401
    assert (await get(worker, "/dashboard/queue.json", TOKEN))[0] == 403
    status, _, data = await get(worker, "/dashboard/queue.json", DESK_TOKEN)
    assert status == 200 and orjson.loads(data)["open"] == 0
    status, _, data = await get(worker, "/dashboard/data.json", DESK_TOKEN)
    assert status == 200 and orjson.loads(data)["ids_shown"] is True
    # Text logs were asked for: readable lines, no JSON objects, and never the token.
    log = worker.log.read_text()
    assert TOKEN not in log and DESK_TOKEN not in log
    assert not [line for line in log.splitlines() if line.startswith("{")]
    assert any(" INFO    faust." in line for line in log.splitlines())

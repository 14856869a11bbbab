"""A worker on another model provider, end to end: ``BATON_LLM=openai`` (an OpenAI-compatible
server), ``bedrock`` and ``vertex``, each served by the stand-in over HTTP answering as a weak
model does; the replies, the wire each call came on, the ledger and the worker's own lines."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from baton_kafka.agents.testing.standin import WEAK, StandIn, run_in_thread
from tests.fixtures.brokers import Broker
from tests.fixtures.data import ORDERS, ticket_record
from tests.fixtures.deployments import Deployment
from tests.fixtures.evals import eval_report

pytestmark = pytest.mark.integration

TICKETS = [
    ("p1", "s-ana", "c-ana", "My kettle is leaking, I want a refund."),
    ("p2", "s-li", "c-li", "我的水壶漏水了，想退款"),
]


@pytest.fixture
def weak_server() -> Iterator[StandIn]:
    """A stand-in of this test's own that answers as a weak model does, its first call slow."""
    with run_in_thread(style=replace(WEAK, first_call_s=1.2)) as server:
        yield server


def _deployment(broker: Broker, namespace: str, tmp_path: Path, env: dict[str, str]) -> Deployment:
    return Deployment(broker=broker, namespace=namespace, data_dir=tmp_path, env_extra=env)


# Which wire a model call takes does not depend on the broker: one leg.
@pytest.mark.one_broker
@pytest.mark.parametrize("provider", ["openai", "bedrock", "vertex"])
async def test_a_worker_answers_through_another_provider(
    provider: str, broker: Broker, namespace: str, weak_server: StandIn, tmp_path: Path
) -> None:
    url = weak_server.base_url + ("/v1" if provider == "openai" else "")
    env = {
        "BATON_LLM": provider,
        "BATON_MODEL": "qwen2.5-1.5b-instruct" if provider == "openai" else "claude-haiku-4-5",
        "BATON_MODEL_URL": url,
        "BATON_MODEL_API_KEY": "self-hosted-key",
        "AWS_REGION": "eu-west-1",
        "CLOUD_ML_REGION": "europe-west4",
        "ANTHROPIC_VERTEX_PROJECT_ID": "shop-support",
        "BATON_MODEL_MAX_RETRIES": "2",
        "BATON_MODEL_TIMEOUT": "2",
    }
    d = _deployment(broker, namespace, tmp_path, env)
    try:
        d.import_orders(ORDERS)
        worker = d.start_worker()
        await d.publish_tickets([ticket_record(*t) for t in TICKETS])
        replies = {r.ticket_id: r for r in await d.replies(2)}
    finally:
        d.stop()
    assert replies["p1"].status == replies["p2"].status == "answered"
    assert replies["p1"].order_id == "O-1001" and "O-1001" in replies["p1"].reply
    assert replies["p2"].order_id == "O-2001" and "水壶" in replies["p2"].reply
    calls = [r for r in weak_server.stats()["requests"] if r.get("ticket_id") in replies]
    wire = {"openai": "chat", "bedrock": "bedrock", "vertex": "vertex"}[provider]
    assert calls and {c["wire"] for c in calls} == {wire}
    assert {c["auth"] for c in calls} == {"bearer"}
    assert all(r.llm == provider for r in replies.values())
    log = worker.log.read_text(errors="replace")
    # Every answer came wrapped in prose or a fence, and none was rejected for it.
    assert "Invalid JSON" not in log and "self-hosted-key" not in log
    # The slow first call was said once, with the setting to raise.
    slow = [line for line in log.splitlines() if "model calls are slow for the limits" in line]
    assert len(slow) == 1 and "raise BATON_MODEL_TIMEOUT" in slow[0], log[-3000:]
    said = "caching, token counting; no structured output" if provider == "vertex" else "structured"
    assert f"baton: model provider {provider} ({said}" in log
    # The timeout was set; the rest are the provider's own defaults.
    limits = "1200 s per ticket, 4 calls" if provider == "openai" else "180 s per ticket, 256 calls"
    assert f"2 s per call, {limits} in flight at most" in log
    if provider == "openai":
        # A self-hosted model has no price: its cost is unknown, not 0.
        assert all(r.usage.unpriced_calls == r.usage.calls > 0 for r in replies.values())
        assert "its calls' cost is unknown" in log
    else:
        assert all(r.usage.unpriced_calls == 0 and r.usage.cost_usd > 0 for r in replies.values())


@pytest.mark.timeout(660)
def test_baton_eval_with_the_weak_stand_in_scores_as_the_eval_doc_says() -> None:
    report = eval_report(llm="weak")
    summary = report["summary"]
    assert report["llm"] == "weak" and summary["tickets"] == 144
    assert summary["amnesia_rate"] == 0.0 and summary["order_accuracy"] == 1.0
    assert summary["invented_orders"] == 0 and summary["leaks"] == 0
    # As many answered as with the healthy stand-in (docs/eval.md's table).
    assert sum(summary["statuses"].values()) == 144
    assert summary["statuses"].get("answered", 0) >= 141

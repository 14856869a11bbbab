"""The shipped stage of the shop's own (examples/stages/priority.py) in a worker built in code,
on both brokers: its own topic, its result in the replies, the trace and the dashboard; and
named in ``BATON_STAGES``, run by ``baton worker`` and traced by ``baton trace``."""

from __future__ import annotations

import asyncio
import json
import os
import urllib.request
from typing import Any

import pytest

from baton_kafka.schemas import StageRecord
from baton_kafka.streams.cli.main import dispatch
from baton_kafka.streams.debug.trace import collect, render
from baton_kafka.streams.runtime import Chain
from examples.stages.priority import PRIORITY
from tests.fixtures.data import ORDERS, ticket_record
from tests.fixtures.deployments import Deployment, settings_of
from tests.fixtures.paths import ROOT

pytestmark = pytest.mark.integration

EXAMPLE = ROOT / "examples" / "stages" / "priority.py"


def dashboard(web_port: int) -> dict[str, Any]:
    """The worker's dashboard data, as its page reads it."""
    url = f"http://127.0.0.1:{web_port}/dashboard/data.json"
    with urllib.request.urlopen(url, timeout=10) as answer:
        data: dict[str, Any] = json.loads(answer.read())
    return data


async def test_the_priority_stage_runs_between_understand_and_lookup(
    deployment: Deployment,
) -> None:
    deployment.import_orders(ORDERS)
    worker = deployment.start_worker(str(EXAMPLE), BATON_LLM="offline")
    p = deployment.namespace
    await deployment.publish_tickets(
        [
            ticket_record(
                f"{p}-1", f"{p}-s1", "c-ana", "My kettle is leaking!! Unacceptable, refund now."
            ),
            ticket_record(f"{p}-2", f"{p}-s2", "c-li", "我的水壶漏水了，想退款"),
        ]
    )
    replies = {r.ticket_id: r for r in await deployment.replies(2)}
    angry, calm = replies[f"{p}-1"], replies[f"{p}-2"]
    assert angry.order_id == "O-1001" and angry.status == "answered"
    assert angry.stages["priority"]["level"] == "urgent"
    assert angry.stages["priority"]["sentiment"] == "angry"
    assert calm.order_id == "O-2001" and calm.stages["priority"]["level"] == "high"

    # The stage's records went out on its own topic, carrying its result under its name.
    on_topic = [
        StageRecord.model_validate_json(v)
        for v, _ in await deployment.read("support.priority", lambda vs: len(vs) >= 2, 30)
    ]
    assert {r.ticket.ticket_id for r in on_topic} == {f"{p}-1", f"{p}-2"}
    assert all(r.results["priority"]["level"] in ("urgent", "high") for r in on_topic)
    assert all(r.understanding is not None and r.match is None for r in on_topic)

    doc = await collect(settings_of(deployment), f"{p}-s1", Chain.of([PRIORITY]))
    (entry,) = doc["tickets"]
    assert list(entry["stages"])[:3] == ["intake", "understand", "priority"]
    assert entry["stages"]["priority"]["priority"]["level"] == "urgent"
    assert any(e["kind"] == "priority" and "level urgent" in e["decision"] for e in doc["events"])

    data = await asyncio.to_thread(dashboard, worker.web_port)
    assert [s["stage"] for s in data["stages"]][:5] == [
        "intake",
        "understand",
        "priority",
        "lookup",
        "strategy",
    ]
    assert {t["results"]["priority"]["level"] for t in data["tickets"]} == {"urgent", "high"}


@pytest.mark.one_broker
async def test_baton_worker_and_baton_trace_run_the_stage_the_settings_name(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    deployment.import_orders(ORDERS)
    named = {"BATON_STAGES": "examples.stages.priority:PRIORITY"}
    worker = deployment.start_worker(BATON_LLM="offline", **named)
    p = deployment.namespace
    text = "My kettle is leaking!! Unacceptable, refund now."
    await deployment.publish_tickets([ticket_record(f"{p}-1", f"{p}-s1", "c-ana", text)])
    (reply,) = await deployment.replies(1)
    assert reply.order_id == "O-1001" and reply.stages["priority"]["level"] == "urgent"
    data = await asyncio.to_thread(dashboard, worker.web_port)
    assert [s["stage"] for s in data["stages"]][:3] == ["intake", "understand", "priority"]

    # `baton trace` as the command runs it (in this process: a second interpreter would cost
    # seconds), with the deployment's settings and nothing else.
    env = deployment.env(**named)
    for name in [n for n in os.environ if n.startswith(("BATON_", "ANTHROPIC_"))]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        if name.startswith(("BATON_", "ANTHROPIC_")):
            monkeypatch.setenv(name, value)
    monkeypatch.chdir(deployment.data_dir)
    capsys.readouterr()
    assert await asyncio.to_thread(dispatch, ["trace", f"{p}-s1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (entry,) = doc["tickets"]
    assert list(entry["stages"])[:3] == ["intake", "understand", "priority"]
    assert entry["stages"]["priority"]["priority"]["level"] == "urgent"
    # Its timeline, as `baton trace` without --json prints it, names the stage's decision.
    assert any("priority" in line and "level urgent" in line for line in render(doc))

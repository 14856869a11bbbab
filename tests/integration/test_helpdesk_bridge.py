"""``examples/helpdesk_bridge.py`` end to end, as a desk runs it: a parked approval's packet is
POSTed to a desk server over HTTP; the desk's signed webhook approves it; the worker confirms
the offer once, though the desk delivers the webhook twice; forged and malformed webhooks send
nothing."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from baton_kafka.streams.kafka.embedded import free_port, port_open
from tests.fixtures import delivery
from tests.fixtures.data import ticket_record
from tests.fixtures.deployments import Deployment
from tests.fixtures.paths import ROOT
from tests.integration.test_decisions import ALPINE, JACKET, KEYS

# Which Kafka client writes the decision does not depend on the broker: one leg.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(300), pytest.mark.one_broker]

BRIDGE = ROOT / "examples" / "helpdesk_bridge.py"
WEBHOOK_SECRET = b"the-desk-webhook-secret"


class Desk:
    """A helpdesk's API on a local port: what it was sent, in order."""

    def __init__(self) -> None:
        self.received: list[tuple[str, dict]] = []
        self.port = free_port()

    async def handoffs(self, request: web.Request) -> web.Response:
        self.received.append((request.headers.get("Idempotency-Key", ""), await request.json()))
        return web.json_response({"ok": True}, status=201)


@pytest.fixture
async def desk() -> AsyncIterator[Desk]:
    d = Desk()
    app = web.Application()
    app.router.add_post("/api/handoffs", d.handoffs)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", d.port).start()
    try:
        yield d
    finally:
        await runner.cleanup()


@contextmanager
def bridge(deployment: Deployment, desk: Desk, tmp_path: Path) -> Iterator[str]:
    """The bridge as a process of its own; its webhook URL. Started once the worker made the
    topics: a consumer of a missing topic may have a broker create it with other settings."""
    (tmp_path / "desk.secret").write_bytes(WEBHOOK_SECRET)
    (tmp_path / "bridge.key").write_text(KEYS)
    port = free_port()
    log = (tmp_path / "bridge.log").open("wb")
    # fmt: off
    proc = subprocess.Popen(
        [
            sys.executable, str(BRIDGE), "--bootstrap", deployment.broker.bootstrap,
            "--handoffs-topic", deployment.topic("support.handoffs"),
            "--decisions-topic", deployment.topic("support.decisions"),
            "--group", f"{deployment.namespace}-desk",
            "--desk-url", f"http://127.0.0.1:{desk.port}/api/handoffs",
            "--webhook-secret-file", str(tmp_path / "desk.secret"),
            "--signing-key-file", str(tmp_path / "bridge.key"), "--port", str(port),
        ],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
    )
    # fmt: on
    try:
        yield f"http://127.0.0.1:{port}/webhook"
    except AssertionError as failed:
        tail = (tmp_path / "bridge.log").read_text(errors="replace")[-2000:]
        raise AssertionError(f"{failed}\nthe bridge's log:\n{tail}") from None
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


async def until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.3)


async def post(
    url: str, event: dict, secret: bytes = WEBHOOK_SECRET, ago: float = 0.0
) -> tuple[int, dict]:
    body = json.dumps(event).encode()
    at = int(time.time() - ago)
    mac = hmac.new(secret, f"{at}.".encode() + body, hashlib.sha256).hexdigest()
    headers = {"X-Desk-Signature": f"t={at},v1={mac}", "Content-Type": "application/json"}
    async with aiohttp.ClientSession() as s, s.post(url, data=body, headers=headers) as r:
        return r.status, await r.json()


async def test_the_desk_gets_the_packet_and_its_webhook_approves_the_offer_once(
    deployment: Deployment, desk: Desk, tmp_path: Path
) -> None:
    d = deployment
    d.env_extra.update(BATON_POLICY=str(ALPINE), BATON_SIGNING_KEYS=KEYS)
    d.import_orders([JACKET])
    d.start_worker()
    t1 = f"t1-{d.namespace}"
    await d.publish_tickets(
        [ticket_record(t1, "s-desk", "c-ana", "Please cancel my jacket order.")]
    )
    [held] = await delivery.replies(d, 1)
    assert held.status == "handoff" and held.offer is not None
    assert held.offer.state == "needs_approval"

    with bridge(d, desk, tmp_path) as url:
        # Out: the packet reaches the desk over HTTP, with its idempotency key.
        await until(lambda: bool(desk.received), 60, "the packet at the desk")
        [(key, packet)] = desk.received
        assert key == packet["packet_id"] == f"handoff:{t1}"
        assert packet["reason"] == "needs_approval" and packet["ticket_id"] == t1

        host, port = url.split("//")[1].split("/")[0].split(":")
        await until(lambda: port_open(host, int(port)), 30, "the bridge's webhook")
        approve = {
            "event_id": "ev-1",
            "session_id": "s-desk",
            "action": "approve",
            "item": packet["ticket_id"],
            "agent": "ana",
        }
        # In: a forged signature and a body that is no decision send nothing.
        assert (await post(url, approve, secret=b"guessed"))[0] == 401
        status, error = await post(url, {**approve, "action": "refund-everything"})
        assert status == 422 and error["error"].startswith("action:"), error
        # The desk delivers its event twice: one decision id, one confirmation.
        assert await post(url, approve) == (202, {"decision_id": "desk-ev-1"})
        assert await post(url, approve) == (202, {"decision_id": "desk-ev-1"})
        # The same webhook captured and sent again outside the tolerance: refused here.
        assert (await post(url, approve, ago=600))[0] == 401

        after = await delivery.replies(d, 2)
        confirmed = [r for r in after if r.decision_id == "desk-ev-1"]
        assert len(confirmed) == 1, after
        assert confirmed[0].status == "answered" and confirmed[0].offer is not None
        assert (
            confirmed[0].offer.state == "approved" and confirmed[0].offer.total == held.offer.total
        )
        letters = await d.dead_letters(1)
        assert [dl.reason for dl, _ in letters] == ["decision_replayed"]
        decisions = await d.read("support.decisions", lambda vs: len(vs) >= 2)
        # The forged, the malformed and the stale webhook never reached the topic.
        assert len(decisions) == 2
        # A close for a session never handed off: the worker refuses it.
        await d.publish_tickets(
            [ticket_record(f"t9-{d.namespace}", "s-calm", "c-ana", "When does my jacket ship?")]
        )
        [calm] = [r for r in await delivery.replies(d, 3) if r.session_id == "s-calm"]
        assert calm.status != "handoff", calm
        close = {"event_id": "ev-2", "session_id": "s-calm", "action": "close"}
        assert await post(url, close) == (202, {"decision_id": "desk-ev-2"})
        letters = await d.dead_letters(2)
        reasons = sorted(dl.reason for dl, _ in letters)
        assert reasons == ["decision_not_pending", "decision_replayed"], letters
    delivery.figures(
        f"helpdesk bridge, {d.broker.kind}",
        packets_at_desk=len(desk.received),
        webhooks_sent=7,
        decisions_on_topic=len(decisions),
        confirmations=len(confirmed),
    )

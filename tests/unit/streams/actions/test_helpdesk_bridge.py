"""The helpdesk bridge's pieces: its record signature is the one workers verify, its webhook
check refuses what the desk did not sign, and a desk event becomes a decision or one line."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import importlib.util
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import pytest
from aiohttp import web

from baton_kafka.streams.runtime.records.signing import HEADER, Signer
from tests.fixtures.paths import ROOT


def _bridge() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "helpdesk_bridge", ROOT / "examples/helpdesk_bridge.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bridge = _bridge()


@pytest.mark.parametrize("key", ["s-1", "会话-7", ""])
def test_the_bridge_signs_a_decision_as_the_workers_verify_it(key: str) -> None:
    signer = Signer((("k1", "a-signing-secret-of-32-characters"),))
    topic, value = "shop.support.decisions", b'{"decision_id":"desk-1"}'
    signature = bridge.record_signature(
        "k1", "a-signing-secret-of-32-characters", topic, key, value
    )
    assert signer.headers(topic, key, value) == [(HEADER, signature)]
    assert signer.problem(topic, key, value, [(HEADER, signature)]) is None
    # Another topic (or key) than the one signed: refused.
    assert signer.problem("shop.support.replies", key, value, [(HEADER, signature)]) is not None


def test_the_webhook_check_takes_only_the_desk_s_signature() -> None:
    body, now = b'{"event_id":"e1"}', 1_800_000_000
    good = bridge.webhook_signature(b"desk", body, now)
    mac = hmac.new(b"desk", f"{now}.".encode() + body, hashlib.sha256).hexdigest()
    assert good == f"t={now},v1={mac}"
    assert bridge.webhook_signed(b"desk", body, good, now) == now
    assert bridge.webhook_signed(b"desk", body, good, now + 299) == now
    assert bridge.webhook_signed(b"desk", body + b" ", good, now) is None
    assert bridge.webhook_signed(b"other", body, good, now) is None
    assert bridge.webhook_signed(b"desk", body, None, now) is None
    # The body's HMAC alone (the old header) signs no time: refused.
    old = "sha256=" + hmac.new(b"desk", body, hashlib.sha256).hexdigest()
    assert bridge.webhook_signed(b"desk", body, old, now) is None
    # Another time than the one signed, or two times: refused.
    assert (
        bridge.webhook_signed(b"desk", body, good.replace(f"t={now}", f"t={now + 1}"), now) is None
    )
    assert bridge.webhook_signed(b"desk", body, f"t={now + 1},{good}", now) is None


def test_a_captured_webhook_sent_again_later_is_refused() -> None:
    body, at = b'{"event_id":"e1"}', 1_800_000_000
    header = bridge.webhook_signature(b"desk", body, at)
    assert bridge.webhook_signed(b"desk", body, header, at + 301) is None
    assert bridge.webhook_signed(b"desk", body, header, at - 301) is None
    assert bridge.webhook_signed(b"desk", body, header, at + 3_600, tolerance=3_600) == at


@pytest.mark.parametrize("header", ["t=1,v1=ä", "t=١٢,v1=00", "sha256=é", "t=1,v1=\x00"])
def test_a_signature_of_other_than_ascii_is_refused_not_an_error(header: str) -> None:
    assert bridge.webhook_signed(b"desk", b"{}", header, 1) is None


async def test_a_non_ascii_signature_header_is_a_401_over_http(tmp_path: Path) -> None:
    (tmp_path / "desk.secret").write_bytes(b"desk")
    (tmp_path / "bridge.key").write_text("k1:a-signing-secret-of-32-characters")
    args = argparse.Namespace(
        webhook_secret_file=tmp_path / "desk.secret",
        signing_key_file=tmp_path / "bridge.key",
        tolerance=300.0,
    )
    app = web.Application()
    app.router.add_post("/webhook", bridge.Bridge(args).webhook)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        body = b'{"event_id":"e1","session_id":"s","action":"close"}'
        writer.write(
            b"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + "X-Desk-Signature: sha256=\u00e4\u00e4\r\n".encode()
            + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        answer = await reader.read()
        writer.close()
    finally:
        await runner.cleanup()
    status = answer.split(b"\r\n", 1)[0]
    assert status.endswith(b"401 Unauthorized"), answer[:200]
    assert b"bad signature" in answer


def test_a_desk_event_becomes_a_decision_with_the_event_s_id() -> None:
    d = bridge.decision_of(
        {"event_id": "e9", "session_id": "s-1", "action": "approve", "item": "t-1", "agent": "ana"},
        1_800_000_000,
    )
    # Decided when the desk signed it: the worker refuses it once it is too old.
    assert d.decided_at == datetime.fromtimestamp(1_800_000_000, UTC)
    # Whatever else the desk's event carries stays out of the decision.
    other = bridge.decision_of({"event_id": "e1", "session_id": "s-1", "action": "close", "x": 1})
    assert "x" not in other.model_dump()
    assert (d.decision_id, d.session_id, d.action, d.item, d.by) == (
        "desk-e9",
        "s-1",
        "approve",
        "t-1",
        "ana",
    )


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        ([], "a JSON object with an event_id"),
        ({"session_id": "s-1", "action": "close"}, "a JSON object with an event_id"),
        ({"event_id": "e1", "session_id": "s-1", "action": "refund-all"}, "action:"),
        ({"event_id": "e1", "session_id": " s-1\n", "action": "close"}, "session_id:"),
        ({"event_id": "e1", "session_id": "s-1", "action": "approve", "amount": -5}, "amount:"),
        ({"event_id": "e\x00", "session_id": "s-1", "action": "close"}, "decision_id:"),
        ({"event_id": "e1", "session_id": "s-1", "action": "approve", "amount": 1e308}, "amount:"),
        (
            {"event_id": "e1", "session_id": "s", "action": "answer", "text": "x", "offer": [{}]},
            "offer.0.kind:",
        ),
    ],
)
def test_what_is_no_decision_is_one_line(event: object, reason: str) -> None:
    with pytest.raises(ValueError) as caught:
        bridge.decision_of(event)
    assert reason in str(caught.value) and "\n" not in str(caught.value)


def test_a_desk_event_may_carry_an_override_and_a_typed_promise() -> None:
    d = bridge.decision_of(
        {
            "event_id": "e3",
            "session_id": "s-1",
            "action": "answer",
            "text": "40 EUR go back to your card.",
            "offer": [
                {"kind": "refund", "order_id": "", "amount": 40, "channel": "original_payment"}
            ],
            "override": {"role": "lead", "reason": "waited three weeks"},
        }
    )
    assert d.offer[0].amount == 40 and d.override is not None and d.override.role == "lead"

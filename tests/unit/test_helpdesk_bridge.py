"""The helpdesk bridge's pieces: its record signature is the one workers verify, its webhook
check refuses what the desk did not sign, and a desk event becomes a decision or one line."""

from __future__ import annotations

import hashlib
import hmac
import importlib.util
from types import ModuleType

import pytest

from baton_kafka.streams.runtime.signing import HEADER, Signer
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
    body = b'{"event_id":"e1"}'
    good = "sha256=" + hmac.new(b"desk", body, hashlib.sha256).hexdigest()
    assert bridge.webhook_signed(b"desk", body, good)
    assert not bridge.webhook_signed(b"desk", body + b" ", good)
    assert not bridge.webhook_signed(b"other", body, good)
    assert not bridge.webhook_signed(b"desk", body, good.removeprefix("sha256="))
    assert not bridge.webhook_signed(b"desk", body, None)


def test_a_desk_event_becomes_a_decision_with_the_event_s_id() -> None:
    d = bridge.decision_of(
        {"event_id": "e9", "session_id": "s-1", "action": "approve", "item": "t-1", "agent": "ana"}
    )
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
    ],
)
def test_what_is_no_decision_is_one_line(event: object, reason: str) -> None:
    with pytest.raises(ValueError) as caught:
        bridge.decision_of(event)
    assert reason in str(caught.value) and "\n" not in str(caught.value)

"""``baton trace`` on a real pipeline run: each stage, baton version and dead letter."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.fixtures.data import ORDERS, ticket_record
from tests.fixtures.deployments import Deployment

pytestmark = pytest.mark.integration


def _pending(baton: dict[str, Any]) -> bool:
    entry = baton["in_flight"]
    return entry is not None and entry["stage"] == "strategy"


async def test_trace_shows_stages_batons_dead_letters_and_usage(deployment: Deployment) -> None:
    ns = deployment.namespace
    first, second, elsewhere = f"{ns}-a1", f"{ns}-a2", f"{ns}-b1"
    deployment.import_orders(ORDERS)
    deployment.start_worker()
    await deployment.publish_tickets(
        [
            ticket_record(first, "s-trace", "c-ana", "My kettle is leaking, I want a refund."),
            ticket_record(
                second,
                "s-trace",
                "c-ana",
                "Can it be repaired instead? [[fault:invalid_json:understand:9]]",
            ),
            ticket_record(elsewhere, "s-other", "c-li", "我的水壶漏水了"),
        ]
    )
    await deployment.publish([("s-trace", b"not json")])
    replies = {r.ticket_id: r for r in await deployment.replies(3)}
    await deployment.dead_letters(2)

    done = deployment.baton("trace", "s-trace", "--json")
    assert done.returncode == 0, done.stderr.decode()
    doc = orjson.loads(done.stdout)
    assert doc["found"] and doc["session_id"] == "s-trace"
    assert [t["ticket_id"] for t in doc["tickets"]] == [first, second]
    events = doc["events"]
    assert all(e["ticket_id"] != elsewhere for e in events)

    def kinds(tid: str) -> list[str]:
        return [e["kind"] for e in events if e["ticket_id"] == tid and e["kind"] != "baton"]

    assert kinds(first) == ["published", "intake", "understand", "lookup", "reply"]
    # The stage's dead letter is acknowledged before the stage's output is sent.
    assert kinds(second) == ["published", "intake", "dead_letter", "understand", "lookup", "reply"]
    at = {(e["ticket_id"], e["kind"]): e["at"] for e in events}
    # Per-session order: the second ticket is understood only after the first was answered.
    assert at[(first, "reply")] <= at[(second, "understand")]
    letters = {(d["stage"], d["reason"]) for d in doc["dead_letters"]}
    assert letters == {("understand", "validation_failed"), ("intake", "invalid_input")}
    # Every context change is a new version; a reply's pending write keeps its baton's version.
    versions = [b["version"] for b in doc["batons"] if not _pending(b)]
    assert versions == sorted(versions) and len(set(versions)) == len(versions) >= 6
    pending = [b for b in doc["batons"] if _pending(b)]
    assert [b["in_flight"]["ticket_id"] for b in pending] == [first, second]
    assert versions[-1] == replies[second].baton_version
    calls = replies[first].usage.calls + replies[second].usage.calls
    assert doc["usage"]["calls"] == calls > 0
    by_ticket = {t["ticket_id"]: t for t in doc["tickets"]}
    assert by_ticket[second]["reply"]["status"] == "degraded"
    assert by_ticket[first]["stages"]["lookup"]["match"]["order_id"] == "O-1001"

    text = deployment.baton("trace", "s-trace")
    assert text.returncode == 0, text.stderr.decode()
    lines = text.stdout.decode().splitlines()
    assert lines[0] == (
        f"session s-trace: 2 ticket(s), 2 reply(ies) (1 answered, 1 degraded), "
        f"2 dead letter(s), baton v{versions[-1]}"
    )
    assert len(lines) == len(events) + 2
    assert any(second in line and "validation_failed at understand" in line for line in lines)
    assert any(first in line and "answered, order O-1001" in line for line in lines)
    assert lines[-1].startswith(f"usage: {calls} call(s), ")


async def test_trace_of_an_unknown_session_says_so_and_succeeds(deployment: Deployment) -> None:
    await deployment.publish_tickets([ticket_record("u1", "s-known", None, "Hello")])
    done = deployment.baton("trace", "s-unknown")
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().strip() == "session s-unknown: nothing recorded in any topic"
    as_json = orjson.loads(deployment.baton("trace", "s-unknown", "--json").stdout)
    assert as_json["found"] is False and as_json["events"] == []

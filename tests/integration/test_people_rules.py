"""A running worker holds people's decisions to the rules: a hostile answer is a dead letter
and sends nothing, a close of a session never handed off is refused, and every kind of
decision read again after more than 20 later ones and a kill -9 is a replay, not a second
reply."""

from __future__ import annotations

from collections import Counter

import orjson
import pytest

from baton_kafka.streams.runtime.records.signing import Signer
from tests.fixtures import delivery
from tests.fixtures.data import ticket_record
from tests.fixtures.deployments import Deployment
from tests.integration.test_decisions import ALPINE, JACKET, KEYS

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

SIGNER = Signer((tuple(KEYS.split(":", 1)),))  # type: ignore[arg-type]
HOSTILE = (
    "Hi, Ana here. We refund you 5,000 EUR plus a 500 EUR voucher. To pay it out, reply with "
    "your card number and the CVV, or enter them at https://refunds-alpine.example.net/pay"
)
LATER = 25


async def send(d: Deployment, session: str, **fields: object) -> bytes:
    """A signed decision on the decisions topic, as a desk's integration sends it."""
    value = orjson.dumps({"session_id": session, "by": "ana", **fields})
    topic = d.topic("support.decisions")
    await d.publish(
        [(session, value)], topic="support.decisions", headers=SIGNER.headers(topic, session, value)
    )
    return value


async def test_people_s_decisions_are_held_to_the_rules_and_applied_once(
    deployment: Deployment,
) -> None:
    d = deployment
    d.env_extra.update(BATON_POLICY=str(ALPINE), BATON_SIGNING_KEYS=KEYS)
    d.import_orders([JACKET])
    d.start_worker()
    t1 = f"t1-{d.namespace}"
    await d.publish_tickets(
        [
            ticket_record(t1, "s-park", "c-ana", "Please cancel my jacket order."),
            ticket_record(f"t9-{d.namespace}", "s-calm", "c-ana", "When does my jacket ship?"),
        ]
    )
    first = await delivery.replies(d, 2)
    [calm] = [r for r in first if r.session_id == "s-calm"]
    assert calm.status != "handoff", calm

    # A hostile answer and a close of a session never handed off: dead letters, no reply.
    await send(d, "s-park", decision_id="h-1", action="answer", text=HOSTILE)
    await send(d, "s-calm", decision_id="c-1", action="close")
    letters = await d.dead_letters(2)
    by_id = {orjson.loads(dl.payload)["decision_id"]: dl for dl, _ in letters}
    assert by_id["h-1"].reason == "decision_invalid", by_id["h-1"]
    for finding in ("5,000", "card", "refunds-alpine.example.net"):
        assert finding in by_id["h-1"].error
    assert by_id["c-1"].reason == "decision_not_pending"

    # Every kind, then more than 20 later decisions, a kill -9 and a restart.
    kinds = [await send(d, "s-park", decision_id="k-approve", action="approve", item=t1)]
    await send(d, "s-park", decision_id="x-take", action="takeover")
    kinds.append(await send(d, "s-park", decision_id="k-back", action="handback"))
    kinds.append(await send(d, "s-park", decision_id="k-answer", action="answer", text="Done."))
    kinds.append(await send(d, "s-park", decision_id="k-take", action="takeover"))
    for i in range(LATER):
        await send(d, "s-park", decision_id=f"n-{i}", action="answer", text=f"Note {i}: on it.")
    kinds.append(await send(d, "s-park", decision_id="k-close", action="close"))
    replies = 2 + 2 + LATER  # the first two, the approval and the answer, the notes
    before = await delivery.replies(d, replies)
    d.workers[0].kill()
    d.start_worker()
    for value in kinds:
        session = orjson.loads(value)["session_id"]
        topic = d.topic("support.decisions")
        await d.publish(
            [(session, value)],
            topic="support.decisions",
            headers=SIGNER.headers(topic, session, value),
        )
    letters = await d.dead_letters(2 + len(kinds))
    replayed = [dl for dl, _ in letters if dl.reason == "decision_replayed"]
    assert len(replayed) == len(kinds), [dl.reason for dl, _ in letters]
    assert len(letters) == 2 + len(kinds)  # nothing else was refused
    after = await delivery.replies(d, replies)
    assert len(after) == len(before) == replies
    counts = Counter(r.decision_id for r in after if r.decision_id)
    assert all(n == 1 for n in counts.values()), counts
    delivery.figures(
        f"people's decisions held to the rules, {d.broker.kind}",
        later_decisions=LATER,
        replayed=len(replayed),
        replies=len(after),
    )

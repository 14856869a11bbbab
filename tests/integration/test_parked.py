"""Parked sessions on a real broker: an approval nobody decides is escalated once by the worker
that restored the baton, and a rebalance while sessions are parked loses, repeats and reorders
no decision, with the pending state intact for the sessions' later tickets."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from baton_kafka.agents.fixed_texts import fixed
from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.decision import Decision
from baton_kafka.schemas.handoff import HandoffPacket
from baton_kafka.schemas.records import Order
from baton_kafka.streams.runtime.records.signing import Signer
from tests.fixtures import delivery
from tests.fixtures.data import jacket, ticket_record
from tests.fixtures.delivery import figures, settled
from tests.fixtures.deployments import Deployment
from tests.fixtures.observability import scrape, total
from tests.fixtures.paths import ROOT

ALPINE = ROOT / "examples/shops/alpine/policy.toml"
KEY = ("k1", "a-signing-secret-of-32-characters")
CANCEL = "Please cancel my jacket order."
AGAIN = "Please cancel my jacket order, as I said."


def jackets(prefix: str, n: int) -> list[Order]:
    """A 150 EUR jacket per customer ``<prefix>c<i>``, each its own order id (cancelling one
    needs a person's approval in the second shop)."""
    return [jacket(f"{prefix}c{i}").model_copy(update={"order_id": f"5{i:08d}"}) for i in range(n)]


async def decide(d: Deployment, *decisions: Decision) -> None:
    """Send each decision signed, as ``baton decide`` does."""
    topic = d.topic("support.decisions")
    signer = Signer((KEY,))
    for decision in decisions:
        value = dumps(decision)
        headers = signer.headers(topic, decision.session_id, value)
        await d.publish([(decision.session_id, value)], "support.decisions", headers)


@pytest.mark.timeout(240)
async def test_an_approval_nobody_decides_is_escalated_once_by_the_restarted_worker(
    deployment: Deployment,
) -> None:
    started = time.monotonic()
    d, p = deployment, deployment.namespace
    d.env_extra.update(BATON_POLICY=str(ALPINE), BATON_SIGNING_KEYS=":".join(KEY))
    d.import_orders(jackets(p, 1))
    first = d.start_worker()  # the default timeout: it never escalates in this test
    t1, session = f"{p}t1", f"{p}s0"
    await d.publish_tickets([ticket_record(t1, session, f"{p}c0", CANCEL)])
    [held] = await delivery.replies(d, 1, quiet=0.5)
    assert held.offer is not None and held.offer.state == "needs_approval"
    # Parking set the offer's deadline on the worker's clocks (four hours away).
    assert total(await scrape(first), "baton_approval_deadlines") == 1
    first.stop()

    # Its deadline is past for the next worker: only the baton it restores tells it so.
    second = d.start_worker(BATON_APPROVAL_TIMEOUT="1", BATON_EXPIRY_INTERVAL="1")
    _, escalated = await delivery.replies(d, 2, quiet=0.5)
    assert (escalated.ticket_id, escalated.status, escalated.llm) == (t1, "handoff", "escalated")
    assert escalated.reply == fixed("approval_overdue", "en") and escalated.offer is None
    packets = [
        HandoffPacket.model_validate_json(v)
        for v, _ in await d.read("support.handoffs", lambda vs: len(vs) >= 2)
    ]
    assert [(k.packet_id, k.reason, k.urgency) for k in packets] == [
        (f"handoff:{t1}", "needs_approval", "normal"),
        (f"escalation:{t1}", "approval_timeout", "high"),
    ]
    assert packets[1].proposed_offer == held.offer

    # The desk approves too late: a dead letter, and the customer hears nothing more.
    await decide(d, Decision(decision_id="d-late", session_id=session, item=t1, action="approve"))
    [(letter, _)] = await d.dead_letters(1)
    assert letter.reason == "decision_not_pending" and "escalated" in letter.error
    final = await delivery.replies(d, 2)
    assert [(r.ticket_id, r.llm) for r in final] == [(t1, held.llm), (t1, "escalated")]
    assert total(await scrape(second), "baton_approval_escalations_total") == 1
    figures(
        "approval escalated after a restart, embedded",
        escalations=sum(r.llm == "escalated" for r in final),
        late_decisions_dead_lettered=1,
        test_s=round(time.monotonic() - started, 1),
    )


SESSIONS = 3


@pytest.mark.timeout(300)
async def test_a_rebalance_while_sessions_are_parked_loses_and_repeats_no_decision(
    deployment: Deployment, request: pytest.FixtureRequest
) -> None:
    if deployment.broker.kind == "kafka":
        # Not strict: it passes in most runs. When it fails, the first worker is stuck in
        # Faust's table recovery after the second joins and answers nothing more.
        request.applymarker(
            pytest.mark.xfail(
                strict=False,
                reason="a worker can stay in Faust's table recovery after a rebalance on "
                "Apache Kafka (no changelog event reaches it): docs/guarantees.md",
            )
        )
    started = time.monotonic()
    d, p = deployment, deployment.namespace
    d.env_extra.update(BATON_POLICY=str(ALPINE), BATON_SIGNING_KEYS=":".join(KEY))
    d.import_orders(jackets(p, SESSIONS))
    sessions = [f"{p}s{i}" for i in range(SESSIONS)]
    a = d.start_worker()
    await settled([a])
    await d.publish_tickets(
        ticket_record(f"{p}t1-{i}", s, f"{p}c{i}", CANCEL) for i, s in enumerate(sessions)
    )
    parked = await delivery.replies(d, SESSIONS, quiet=0.5)
    assert all(r.offer is not None and r.offer.state == "needs_approval" for r in parked)

    # A second worker joins while every session is parked: the group rebalances.
    b = d.start_worker()
    await settled([a, b])
    await d.publish_tickets(
        ticket_record(f"{p}t2-{i}", s, f"{p}c{i}", AGAIN) for i, s in enumerate(sessions)
    )
    later = [r for r in await delivery.replies(d, 2 * SESSIONS, quiet=0.5) if "t2-" in r.ticket_id]
    # Their later tickets, answered wherever the sessions went, still see the offer pending:
    # each proposes it again, added to the pending item's names, and never approves it.
    assert len(later) == SESSIONS
    assert all(r.offer is not None and r.offer.state == "needs_approval" for r in later), later

    # The first worker leaves; the decisions go out while the group rebalances again. The last
    # session's names its later ticket, which only a worker that kept the pending state knows.
    a.stop()
    await decide(
        d,
        *(
            Decision(
                decision_id=f"d-{i}",
                session_id=s,
                item=f"{p}t{2 if i == SESSIONS - 1 else 1}-{i}",
                action="approve",
                by="ana",
            )
            for i, s in enumerate(sessions)
        ),
    )
    final = await delivery.replies(d, 3 * SESSIONS)
    confirmed = Counter(r.decision_id for r in final if r.decision_id is not None)
    assert confirmed == Counter({f"d-{i}": 1 for i in range(SESSIONS)}), final
    assert all(
        r.status == "answered" and r.offer is not None and r.offer.state == "approved"
        for r in final
        if r.decision_id is not None
    )
    for i, s in enumerate(sessions):
        order = [(r.ticket_id, r.decision_id) for r in final if r.session_id == s]
        assert order == [(f"{p}t1-{i}", None), (f"{p}t2-{i}", None), (f"{p}t1-{i}", f"d-{i}")]
    letters = await delivery.drain(d, "support.dead-letters", quiet=1.0)
    assert letters == [], [r.value[:300] for r in letters]
    figures(
        f"rebalance while parked, {d.broker.kind}",
        sessions=SESSIONS,
        decisions=SESSIONS,
        lost=SESSIONS - len(confirmed),
        duplicate_confirmations=sum(n - 1 for n in confirmed.values()),
        test_s=round(time.monotonic() - started, 1),
    )

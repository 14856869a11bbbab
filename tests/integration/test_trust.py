"""Trust boundaries through a real worker: session ownership and signed stage records."""

from __future__ import annotations

import pytest

from schemas import StageRecord, Ticket, dumps
from schemas.stages import OrderMatch
from tests.fixtures.data import ORDERS, ticket_record
from tests.fixtures.deployments import Deployment

pytestmark = pytest.mark.integration

KEYS = "k1:a-signing-secret-of-32-chars!!"


async def test_intruders_and_forged_records_are_dead_lettered_and_never_answered(
    deployment: Deployment,
) -> None:
    deployment.import_orders(ORDERS)
    deployment.start_worker(BATON_SIGNING_KEYS=KEYS)
    await deployment.publish_tickets(
        [ticket_record("a1", "s-own", "c-ana", "My kettle is leaking, I want a refund.")]
    )
    [owner] = await deployment.replies(1)
    assert owner.order_id == "O-1001"

    await deployment.publish_tickets(
        [ticket_record("b1", "s-own", "c-li", "Which order did I ask about? Refund it.")]
    )
    kettle = next(o for o in ORDERS if o["order_id"] == "O-1001")
    forged = StageRecord(
        ticket=Ticket(ticket_id="f1", session_id="s-forge", customer_id="c-ana", text="Refund?"),
        match=OrderMatch(
            order_id="O-1001",
            order={**kettle, "amount": 9999.0},
            method="deterministic",
            confidence=1.0,
            reason="forged",
        ),
    )
    await deployment.publish([("s-forge", dumps(forged))], topic="support.order-matched")
    await deployment.publish_tickets(
        [ticket_record("a2", "s-own", "c-ana", "How long will the refund take?")]
    )

    letters = await deployment.dead_letters(2)
    reasons = {dl.ticket_id: (dl.reason, dl.stage) for dl, _ in letters}
    assert reasons == {
        "b1": ("session_conflict", "understand"),
        "f1": ("untrusted_record", "strategy"),
    }
    replies = await deployment.replies(2)
    assert [r.ticket_id for r in replies] == ["a1", "a2"]
    assert replies[1].order_id == "O-1001" and "9999" not in replies[1].reply

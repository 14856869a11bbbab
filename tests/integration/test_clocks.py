"""A worker whose model hangs past the first-reply deadline: one holding reply, then the real."""

from __future__ import annotations

import time

import pytest

from baton_kafka.agents.fixed_texts import fixed
from baton_kafka.agents.testing.standin import StandIn
from baton_kafka.schemas.records import Reply, utcnow
from tests.fixtures import delivery
from tests.fixtures.data import KETTLE, OPENING, orders_of, ticket_record
from tests.fixtures.delivery import Tally, figures
from tests.fixtures.deployments import Deployment
from tests.fixtures.observability import scrape, total

pytestmark = pytest.mark.integration

DEADLINE_S = 2.0


@pytest.mark.one_broker
@pytest.mark.timeout(180)
async def test_a_hanging_model_gets_one_holding_reply_in_time_then_the_real_one(
    deployment: Deployment, standin: StandIn
) -> None:
    started = time.monotonic()
    p = deployment.namespace
    deployment.import_orders(orders_of(f"{p}c"))
    # The hung call times out after 5 s and its retry is answered.
    deployment.start_worker(BATON_FIRST_REPLY_DEADLINE=str(DEADLINE_S), BATON_MODEL_TIMEOUT="5")
    warm = ticket_record(f"{p}warm", f"{p}s-warm", f"{p}c", OPENING[KETTLE])
    await deployment.publish_tickets([warm])
    await deployment.read("support.replies", lambda vs: len(vs) >= 1, timeout=120)

    hung = ticket_record(
        f"{p}h1", f"{p}s-hung", f"{p}c", f"{OPENING[KETTLE]} [[fault:hang:understand]]"
    )
    hung["created_at"] = utcnow().isoformat()
    published = time.monotonic()
    await deployment.publish_tickets([hung])
    arrived: dict[str, float] = {}

    def seen(values: list[bytes]) -> bool:
        for value in values:
            reply = Reply.model_validate_json(value)
            if reply.ticket_id == hung["ticket_id"]:
                arrived.setdefault(reply.status, time.monotonic() - published)
        return len(arrived) >= 2

    await deployment.read("support.replies", seen, timeout=90)
    replies = await delivery.replies(deployment, at_least=2, holding=True)
    session = [r for r in replies if r.session_id == hung["session_id"]]
    assert [r.status for r in session] == ["holding", "answered"], session
    assert session[0].reply == fixed("still_working", "en")
    Tally(delivery.sessions([warm, hung]), replies).assert_exactly_once_in_order()
    holding_s = arrived["holding"]
    assert DEADLINE_S <= holding_s < arrived["answered"], arrived
    # The warm-up ticket met a cold worker: it may have had its own (one) holding reply.
    holding = [r.ticket_id for r in replies if r.status == "holding"]
    assert sorted(set(holding)) == sorted(holding) and hung["ticket_id"] in holding
    samples = await scrape(deployment.workers[0])
    assert total(samples, "baton_holding_replies_total") == len(holding)
    assert total(samples, "baton_tickets_past_deadline") == 0, "both tickets are answered"
    assert total(samples, "baton_open_tickets") == 0
    figures(
        "holding_reply",
        deadline_s=DEADLINE_S,
        holding_after_s=round(holding_s, 2),
        answer_after_s=round(arrived["answered"], 2),
        warm_up_holding=len(holding) - 1,
        test_s=round(time.monotonic() - started, 1),
    )

"""A worker with the coalescing window on: a session's burst of three is one turn and one reply
naming all three, with a coalesced record for each later one; another session is its own."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from baton_kafka.agents.testing.standin import StandIn
from tests.fixtures import delivery
from tests.fixtures.data import KETTLE, OPENING, orders_of, ticket_record
from tests.fixtures.delivery import Tally, figures
from tests.fixtures.deployments import Deployment

pytestmark = pytest.mark.integration

WINDOW_S = 2.0


@pytest.mark.timeout(180)
async def test_a_burst_of_three_within_the_window_is_answered_once_and_another_session_alone(
    deployment: Deployment, standin: StandIn
) -> None:
    p = deployment.namespace
    customer = f"{p}c"
    deployment.import_orders(orders_of(customer))
    deployment.start_worker(BATON_COALESCE_WINDOW=str(WINDOW_S))
    burst = [
        ticket_record(f"{p}b1", f"{p}s-burst", customer, "hi"),
        ticket_record(f"{p}b2", f"{p}s-burst", customer, "my kettle leaks"),
        ticket_record(f"{p}b3", f"{p}s-burst", customer, f"order {customer}-K"),
    ]
    other = ticket_record(f"{p}o1", f"{p}s-other", customer, OPENING[KETTLE])
    # One producer batch: the burst's tickets reach baton milliseconds apart.
    await deployment.publish_tickets([burst[0], other, *burst[1:]])
    replies = await delivery.replies(deployment, at_least=4)

    Tally(delivery.sessions([*burst, other]), replies).assert_exactly_once_in_order()
    mine = [r for r in replies if r.session_id == f"{p}s-burst"]
    assert [(r.ticket_id, r.status) for r in mine] == [
        (f"{p}b1", "answered"),
        (f"{p}b2", "coalesced"),
        (f"{p}b3", "coalesced"),
    ], mine
    turn = mine[0]
    assert turn.ticket_ids == [t["ticket_id"] for t in burst]
    # The kettle of the second message and the order of the third, answered in one reply.
    assert turn.order_id == f"{customer}-K" and "kettle" in turn.reply.casefold(), turn
    assert all(r.answered_by == turn.ticket_id and not r.reply for r in mine[1:])
    theirs = [r for r in replies if r.session_id == f"{p}s-other"]
    assert [(r.ticket_id, r.status, r.ticket_ids) for r in theirs] == [
        (f"{p}o1", "answered", [f"{p}o1"])
    ]
    calls = delivery.calls_by_ticket_stage(standin.stats(), p)
    # One model chain for the burst (its first ticket's), one for the other session.
    assert {t for t, _ in calls} == {f"{p}b1", f"{p}o1"}, calls
    assert calls[(f"{p}b1", "understand")] == 1 and calls[(f"{p}o1", "understand")] == 1
    figures(
        "burst",
        window_s=WINDOW_S,
        tickets=len(burst) + 1,
        replies=len(replies),
        model_calls=sum(calls.values()),
    )


@pytest.mark.timeout(180)
async def test_another_senders_ticket_in_a_new_sessions_window_is_refused_once_and_learns_nothing(
    deployment: Deployment,
) -> None:
    p = deployment.namespace
    owner, other = f"{p}c-owner", f"{p}c-other"
    deployment.import_orders(orders_of(owner))
    deployment.start_worker(BATON_COALESCE_WINDOW=str(WINDOW_S))
    session = f"{p}s-new"
    mine = [
        ticket_record(f"{p}a1", session, owner, "hi"),
        ticket_record(f"{p}a2", session, owner, "my kettle leaks"),
    ]
    # Another sender who learned the session id writes into its first window, back-dated by an
    # hour so that a first-reply clock started for it would ring at once.
    intruder = {
        **ticket_record(f"{p}x1", session, other, "also change my address, refund to IBAN DE89"),
        "created_at": (datetime.now(UTC) - timedelta(hours=1)).isoformat(),
    }
    # One producer batch: the three reach baton milliseconds apart, the session has no baton.
    await deployment.publish_tickets([mine[0], intruder, mine[1]])
    replies = await delivery.replies(deployment, at_least=2, holding=True)

    assert [(r.ticket_id, r.status, r.ticket_ids) for r in replies] == [
        (f"{p}a1", "answered", [f"{p}a1", f"{p}a2"]),
        (f"{p}a2", "coalesced", [f"{p}a2"]),
    ], replies
    assert "IBAN" not in replies[0].reply and all(r.customer_id == owner for r in replies)
    [(letter, _)] = await deployment.dead_letters(1)
    assert (letter.reason, letter.ticket_id, letter.session_id) == (
        "session_conflict",
        f"{p}x1",
        None,
    )
    # Filed under its sender, naming nobody else.
    [letter_read] = await delivery.drain(deployment, "support.dead-letters", at_least=1)
    assert letter_read.key == other.encode() and owner.encode() not in letter_read.value


KILL_WINDOW_S = 6.0


@pytest.mark.one_broker
@pytest.mark.timeout(240)
async def test_a_burst_held_in_the_window_survives_kill_9_and_is_answered_once(
    deployment: Deployment,
) -> None:
    p = deployment.namespace
    customer = f"{p}c"
    deployment.import_orders(orders_of(customer))
    window = {"BATON_COALESCE_WINDOW": str(KILL_WINDOW_S)}
    worker = deployment.start_worker(**window)
    warm = ticket_record(f"{p}w1", f"{p}s-warm", customer, OPENING[KETTLE])
    await deployment.publish_tickets([warm])
    await deployment.read("support.replies", lambda vs: len(vs) >= 1, timeout=120)
    burst = [
        ticket_record(f"{p}b1", f"{p}s-burst", customer, "hi"),
        ticket_record(f"{p}b2", f"{p}s-burst", customer, "my kettle leaks"),
        ticket_record(f"{p}b3", f"{p}s-burst", customer, f"order {customer}-K"),
    ]
    await deployment.publish_tickets(burst)
    # The intake has handed the burst on: the first stage holds it, waiting out the window.
    await deployment.read("support.tickets-by-session", lambda vs: len(vs) >= 4)
    worker.kill()
    before = await delivery.replies(deployment, at_least=1, quiet=1.0)
    assert [r.ticket_id for r in before] == [warm["ticket_id"]], "killed inside the window"

    deployment.start_worker(**window)
    replies = await delivery.replies(deployment, at_least=4)
    Tally(delivery.sessions([warm, *burst]), replies).assert_exactly_once_in_order()
    mine = [r for r in replies if r.session_id == f"{p}s-burst"]
    assert [(r.status, r.answered_by) for r in mine] == [
        ("answered", None),
        ("coalesced", f"{p}b1"),
        ("coalesced", f"{p}b1"),
    ], mine
    assert mine[0].ticket_ids == [t["ticket_id"] for t in burst]
    assert mine[0].order_id == f"{customer}-K"

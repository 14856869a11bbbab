"""Faults around approved refunds, by real worker processes against the local payments server
(which ignores idempotency keys, so only the ledger and its look-ups prevent a duplicate): a
webhook delivered twice, late and forged; two workers, one joining while refunds are in
flight and one leaving; on both brokers. A broker restart while a refund is sent and not
confirmed runs on Apache Kafka only: the embedded broker is memory-only and comes back empty."""

from __future__ import annotations

import asyncio
import secrets
import time
from pathlib import Path

import pytest

from baton_kafka.schemas.action import Action, LedgerEntry
from baton_kafka.schemas.records import Reply
from tests.fixtures import delivery
from tests.fixtures.data import ticket_record
from tests.fixtures.deployments import Deployment
from tests.fixtures.payments import Payments, payments, post_webhook
from tests.integration.test_actions import WORDS, actions, kettle, ledger, until, with_executor

__all__ = ["payments"]

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SECRET = "a-webhook-secret-of-32-characters"


def _follow_up(value: bytes) -> bool:
    return b'"status":"action_' in value


async def follow_ups(d: Deployment, at_least: int) -> list[Reply]:
    """Every follow-up on the replies topic once ``at_least`` arrived and 3 s passed without
    a new record (a copy would show up)."""
    records = await delivery.drain(
        d, "support.replies", at_least=at_least, quiet=3.0, counted=_follow_up
    )
    return [Reply.model_validate_json(r.value) for r in records if _follow_up(r.value)]


def server_matches_ledger(
    payments: Payments, requested: list[Action], final: dict[str, LedgerEntry]
) -> bool:
    """Every action requested is confirmed in the ledger with the id of the one refund the
    server holds under its key, and the server holds nothing else."""
    by_key = {r["note"]: str(r["id"]) for r in payments.refunds}
    return (
        len(by_key) == len(payments.refunds)
        and all(
            final[a.idempotency_key].state == "confirmed"
            and final[a.idempotency_key].remote_id == by_key.get(a.idempotency_key)
            for a in requested
        )
        and set(by_key) == {a.idempotency_key for a in requested}
    )


async def test_a_webhook_delivered_twice_late_and_forged_confirms_the_refund_once(
    deployment: Deployment, payments: Payments, tmp_path: Path
) -> None:
    d = deployment
    payments.pending = True
    payments.honour_keys = False
    with_executor(d, payments, tmp_path)
    # No sweep during the test: only the webhook can learn that the pending refund was done.
    d.env_extra.update(BATON_ACTION_WEBHOOK_SECRET=SECRET, BATON_EXPIRY_INTERVAL="3600")
    d.import_orders([kettle("c-w")])
    worker = d.start_worker()
    await d.publish_tickets([ticket_record(f"t-{d.namespace}", "s-w", "c-w", WORDS)])
    [action] = await actions(d, 1)
    await until(lambda: payments.executed() == 1, "the refund accepted as pending", d)
    [pending] = (await ledger(d, 1, "sent")).values()
    url = f"http://127.0.0.1:{worker.web_port}"
    key = action.idempotency_key
    report = {"idempotency_key": key, "remote_id": payments.refunds[0]["id"], "state": "confirmed"}
    unknown = {**report, "idempotency_key": "bt-" + secrets.token_hex(19)[:37]}
    stale_at = int(time.time()) - 600
    refused = [
        (await post_webhook(url, SECRET, report, signed=False))[0],
        (await post_webhook(url, "another-secret-of-32-characters!", report))[0],
        (await post_webhook(url, SECRET, report, at=stale_at))[0],
        (await post_webhook(url, SECRET, unknown))[0],
        (await post_webhook(url, SECRET, {**report, "state": "success"}))[0],
    ]
    payments.settle()
    first, again = await asyncio.gather(
        post_webhook(url, SECRET, report), post_webhook(url, SECRET, report)
    )
    late = await post_webhook(url, SECRET, {**report, "state": "pending"})
    contrary = await post_webhook(url, SECRET, {**report, "state": "failed"})
    told = await follow_ups(d, 1)
    final = {e.idempotency_key: e for e in (await ledger(d, 1, told=True)).values()}
    delivery.figures(
        f"webhook delivered twice, {d.broker.kind}",
        actions_requested=1,
        executed_on_server=payments.executed(),
        duplicates_on_server=payments.duplicates(),
        lost=1 - payments.executed(),
        webhooks_applied=sum(a[1].get("applied") is True for a in (first, again)),
        follow_ups=len(told),
        refused=refused,
    )
    assert pending.state == "sent"
    assert refused == [401, 401, 401, 404, 422]
    assert sorted([first[0], again[0]]) == [200, 200]
    assert sorted(a[1]["applied"] for a in (first, again)) == [False, True]
    assert late[0] == 200 and late[1] == {
        "idempotency_key": key,
        "state": "confirmed",
        "applied": False,
    }
    assert contrary[0] == 409
    assert [(r.status, r.ticket_ids) for r in told] == [("action_confirmed", [action.ticket_id])]
    assert str(payments.refunds[0]["id"]) in told[0].reply
    assert (payments.posts, payments.executed(), payments.duplicates()) == (1, 1, 0)
    assert server_matches_ledger(payments, [action], final) and final[key].told


async def test_two_workers_a_join_and_a_leave_mid_flight_execute_each_refund_once(
    deployment: Deployment, payments: Payments, tmp_path: Path
) -> None:
    d = deployment
    n = 8
    payments.honour_keys = False
    # Every answer held past the executor's timeout (one dropped): refunds stay in flight
    # while the group rebalances, and each is found again only by its look-up.
    payments.slow_s = 2.0
    payments.fail_next("slow", "slow", "drop", *["slow"] * (n - 3))
    with_executor(d, payments, tmp_path, timeout_s=1.0)
    d.import_orders([kettle(f"c-{i}") for i in range(n)])
    tickets = [ticket_record(f"t{i}-{d.namespace}", f"s-{i}", f"c-{i}", WORDS) for i in range(n)]
    first = d.start_worker()
    await d.publish_tickets(tickets[: n // 2])
    await until(lambda: payments.posts >= 1, "the first refund in flight", d)
    second = d.start_worker()  # joins while refunds are in flight
    await delivery.settled(d.workers)
    joined = delivery.synced_generation(second.log)
    at_join = payments.posts
    await d.publish_tickets(tickets[n // 2 :])
    await until(lambda: payments.posts > at_join, "refunds in flight after the join", d)
    at_leave = payments.posts
    first.stop()  # leaves while refunds are in flight
    # A reply resent by the worker that took its session over may write its actions again.
    requested = list({a.idempotency_key: a for a in await actions(d, n)}.values())
    final = await ledger(d, n)
    told = await follow_ups(d, n)
    lost = len({a.idempotency_key for a in requested} - {r["note"] for r in payments.refunds})
    left = delivery.synced_generation(second.log)
    delivery.figures(
        f"two workers, a join and a leave, {d.broker.kind}",
        actions_requested=len(requested),
        executed_on_server=payments.executed(),
        duplicates_on_server=payments.duplicates(),
        lost=lost,
        ledger_equals_server=server_matches_ledger(payments, requested, final),
        posts=payments.posts,
        lookups=payments.lookups,
        follow_ups=len(told),
        follow_up_copies=len(told) - len({r.ticket_id for r in told}),
        posts_at_join=at_join,
        posts_at_leave=at_leave,
        generations=(joined, left),
    )
    assert joined is not None and left is not None and left > joined  # the leave rebalanced
    assert len(requested) == n and payments.executed() == n
    assert payments.duplicates() == 0 and lost == 0
    assert server_matches_ledger(payments, requested, final)
    assert {r.ticket_id for r in told} == {f"action:{a.idempotency_key}" for a in requested}


@pytest.mark.production_leg
async def test_a_broker_restart_while_a_refund_is_sent_not_confirmed_executes_it_once(
    deployment: Deployment, payments: Payments, tmp_path: Path
) -> None:
    d = deployment
    assert d.broker.restart is not None
    payments.honour_keys = False
    # The server commits, then holds its answer while the broker is killed and started again.
    payments.slow_s = 8.0
    payments.fail_next("slow")
    with_executor(d, payments, tmp_path, timeout_s=30.0)
    d.import_orders([kettle("c-r0"), kettle("c-r1")])
    d.start_worker()
    await d.publish_tickets([ticket_record(f"t0-{d.namespace}", "s-r0", "c-r0", WORDS)])
    await until(lambda: payments.executed() == 1, "the refund sent, its answer held", d)
    started = time.monotonic()
    await asyncio.to_thread(d.broker.restart)
    restart_s = round(time.monotonic() - started, 1)
    # The worker goes on after the restart: a new ticket's refund is carried out too.
    await d.publish_tickets([ticket_record(f"t1-{d.namespace}", "s-r1", "c-r1", WORDS)])
    requested = list({a.idempotency_key: a for a in await actions(d, 2)}.values())
    final = await ledger(d, 2)
    told = await follow_ups(d, 2)
    lost = len({a.idempotency_key for a in requested} - {r["note"] for r in payments.refunds})
    delivery.figures(
        f"broker restart while sent, {d.broker.kind}",
        actions_requested=len(requested),
        executed_on_server=payments.executed(),
        duplicates_on_server=payments.duplicates(),
        lost=lost,
        ledger_equals_server=server_matches_ledger(payments, requested, final),
        posts=payments.posts,
        lookups=payments.lookups,
        follow_ups=len(told),
        broker_down_s=restart_s,
    )
    assert len(requested) == 2 and payments.executed() == 2
    assert payments.duplicates() == 0 and lost == 0
    assert server_matches_ledger(payments, requested, final)
    assert {r.ticket_id for r in told} == {f"action:{a.idempotency_key}" for a in requested}

"""An approved refund is carried out exactly once by real worker processes against a real
payments server on loopback: through a kill -9 between send and confirm (reconciled, not
resent) and a 500 after the server committed (looked up, not resent), on both brokers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from baton_kafka.schemas.action import Action, LedgerEntry
from baton_kafka.schemas.handoff import HandoffPacket
from baton_kafka.schemas.records import Reply
from tests.fixtures import delivery
from tests.fixtures.data import KETTLE, days_ago, jacket, order, ticket_record
from tests.fixtures.deployments import Deployment
from tests.fixtures.paths import ROOT
from tests.fixtures.payments import SHOPIFY_MAP, TOKEN, Payments, mapped, payments

__all__ = ["payments"]

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

WORDS = "My kettle is leaking, I want a refund."
ALPINE = ROOT / "examples/shops/alpine/policy.toml"
KEYS = "k1:a-signing-secret-of-32-characters"
JACKET = jacket("c-ana")


def kettle(customer: str) -> object:
    return order(
        f"{customer}-K",
        customer=customer,
        product_name=KETTLE,
        amount=39.9,
        ordered_at=days_ago(20),
        delivered_at=days_ago(17),
    )


def with_executor(d: Deployment, payments: Payments, tmp: Path, timeout_s: float = 2.0) -> None:
    path = tmp / "executor.json"
    path.write_bytes(orjson.dumps(mapped(SHOPIFY_MAP, payments.base(), timeout_s=timeout_s)))
    d.env_extra.update(BATON_EXECUTOR=str(path), SHOP_ADMIN_TOKEN=TOKEN)


async def until(check: Callable[[], bool], what: str, d: Deployment, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            logs = "\n".join(w.tail_log() for w in d.workers)
            raise AssertionError(f"timed out waiting for {what}\n{logs}")
        await asyncio.sleep(0.2)


async def ledger(
    d: Deployment, want: int, state: str = "confirmed", told: bool = False
) -> dict[str, LedgerEntry]:
    """The newest entry of every action in the ledger's changelog, once ``want`` are in
    ``state`` (and recorded as told, with ``told``)."""
    consumer = d.reader(f"baton-{d.namespace}-actions-changelog")
    await consumer.start()
    entries: dict[str, LedgerEntry] = {}
    deadline = time.monotonic() + 60
    try:
        while sum(e.state == state and e.told >= told for e in entries.values()) < want:
            assert time.monotonic() < deadline, f"ledger: {entries}"
            batch = await consumer.getmany(timeout_ms=300)
            for records in batch.values():
                for r in records:
                    if r.value:
                        for key, raw in orjson.loads(r.value).items():
                            entries[key] = LedgerEntry.model_validate(raw)
    finally:
        await consumer.stop()
    return entries


async def actions(d: Deployment, n: int) -> list[Action]:
    records = await d.read("support.actions", lambda vs: len(vs) >= n)
    return [Action.model_validate_json(v) for v, _ in records]


def report(name: str, d: Deployment, payments: Payments, requested: int, final: dict) -> None:
    confirmed = sum(e.state == "confirmed" for e in final.values())
    delivery.figures(
        f"{name}, {d.broker.kind}",
        actions_requested=requested,
        executed_on_server=payments.executed(),
        duplicates_on_server=payments.duplicates(),
        lost=requested - payments.executed(),
        ledger_confirmed=confirmed,
        posts=payments.posts,
        lookups=payments.lookups,
    )


async def test_an_approved_refund_is_executed_exactly_once(
    deployment: Deployment, payments: Payments, tmp_path: Path
) -> None:
    d = deployment
    with_executor(d, payments, tmp_path)
    d.import_orders([kettle(f"c-{n}") for n in range(3)])
    d.start_worker()
    await d.publish_tickets(
        [ticket_record(f"t{n}-{d.namespace}", f"s-{n}", f"c-{n}", WORDS) for n in range(3)]
    )
    replies = await d.replies(3)
    assert all(r.offer is not None and r.offer.state == "approved" for r in replies), replies
    requested = await actions(d, 3)
    await until(lambda: payments.executed() >= 3, "three refunds", d)
    final = await ledger(d, 3)
    await asyncio.sleep(2)  # anything sent twice would arrive now
    report("approved refunds", d, payments, len(requested), final)
    assert len(requested) == 3 and payments.executed() == 3 and payments.duplicates() == 0
    assert {e.remote_id for e in final.values()} == {str(r["id"]) for r in payments.refunds}
    assert {r["note"] for r in payments.refunds} == {a.idempotency_key for a in requested}


async def test_a_worker_killed_between_send_and_confirm_is_reconciled_not_resent(
    deployment: Deployment, payments: Payments, tmp_path: Path
) -> None:
    d = deployment
    # The server commits, then answers after 60 s: the worker is killed while it waits.
    payments.slow_s = 60.0
    payments.honour_keys = False
    payments.fail_next("slow")
    with_executor(d, payments, tmp_path, timeout_s=90.0)
    d.import_orders([kettle("c-k")])
    worker = d.start_worker()
    await d.publish_tickets([ticket_record(f"t-{d.namespace}", "s-k", "c-k", WORDS)])
    await until(lambda: payments.executed() == 1, "the refund committed", d)
    worker.kill()
    d.start_worker()
    final = await ledger(d, 1)
    await asyncio.sleep(2)
    requested = await actions(d, 1)
    report("kill -9 between send and confirm", d, payments, len(requested), final)
    assert (payments.posts, payments.executed(), payments.duplicates()) == (1, 1, 0)
    assert payments.lookups >= 1
    [entry] = final.values()
    assert entry.remote_id == str(payments.refunds[0]["id"]) and entry.attempts == 1


async def test_a_500_after_the_commit_is_looked_up_not_resent(
    deployment: Deployment, payments: Payments, tmp_path: Path
) -> None:
    d = deployment
    payments.honour_keys = False
    payments.fail_next("error")
    with_executor(d, payments, tmp_path)
    d.import_orders([kettle("c-e")])
    d.start_worker()
    await d.publish_tickets([ticket_record(f"t-{d.namespace}", "s-e", "c-e", WORDS)])
    final = await ledger(d, 1)
    await asyncio.sleep(2)
    requested = await actions(d, 1)
    report("500 after commit", d, payments, len(requested), final)
    assert (payments.posts, payments.executed(), payments.duplicates()) == (1, 1, 0)
    assert payments.lookups == 1


async def test_an_offer_approved_by_a_person_is_executed_once_and_a_parked_one_never(
    deployment: Deployment, payments: Payments, tmp_path: Path
) -> None:
    d = deployment
    d.env_extra.update(BATON_POLICY=str(ALPINE), BATON_SIGNING_KEYS=KEYS)
    with_executor(d, payments, tmp_path)
    d.import_orders([JACKET])
    d.start_worker()
    t1 = f"t1-{d.namespace}"
    await d.publish_tickets(
        [ticket_record(t1, "s-park", "c-ana", "Please cancel my jacket order.")]
    )
    [held] = await d.replies(1)
    assert held.offer is not None and held.offer.state == "needs_approval"
    await asyncio.sleep(3)
    assert payments.posts == 0  # parked: nothing is carried out
    done = d.baton("decide", "s-park", t1, "approve", "--by", "ana", "--id", "d-1")
    assert done.returncode == 0, done.stderr.decode()
    await d.replies(2)
    requested = await actions(d, 1)
    money = [a for a in requested if a.amount]
    assert money and all(a.decision_id == "d-1" for a in requested)
    refunds = [a for a in requested if a.kind == "refund"]
    final = await ledger(d, len(refunds)) if refunds else {}
    await asyncio.sleep(2)
    report("approved by a person", d, payments, len(refunds), final)
    assert payments.executed() == len(refunds) and payments.duplicates() == 0


async def test_a_later_session_asking_after_the_refund_is_not_refunded_again(
    deployment: Deployment, payments: Payments, tmp_path: Path
) -> None:
    d = deployment
    with_executor(d, payments, tmp_path)
    d.import_orders([kettle("c-0")])
    d.start_worker()
    await d.publish_tickets([ticket_record(f"t1-{d.namespace}", "s-first", "c-0", WORDS)])
    await d.replies(1)
    final = await ledger(d, 1)
    asking = "Where is my refund for the kettle?"
    await d.publish_tickets([ticket_record(f"t2-{d.namespace}", "s-later", "c-0", asking)])
    replies = await d.replies(2)
    [later] = [r for r in replies if r.session_id == "s-later"]
    # The reply states the agreed refund again; it is not a second refund for the shop.
    assert later.offer is not None and [x.kind for x in later.offer.lines] == ["refund"]
    await asyncio.sleep(3)  # a second refund would be on the server now
    requested = await actions(d, 1)
    report("a later session restating the refund", d, payments, len(requested), final)
    assert len(requested) == 1 and payments.executed() == 1 and payments.duplicates() == 0
    assert later.offer.restated == [0]


def _is_follow_up(value: bytes) -> bool:
    return b'"status":"action_' in value


async def follow_ups(d: Deployment, at_least: int) -> list[Reply]:
    """Every follow-up of an action on the replies topic, read on after ``at_least`` arrived
    so that a copy would show up."""
    records = await delivery.drain(
        d, "support.replies", at_least=at_least, quiet=3.0, counted=_is_follow_up
    )
    return [Reply.model_validate_json(r.value) for r in records if _is_follow_up(r.value)]


async def test_a_confirmed_refund_is_told_once_with_the_systems_reference(
    deployment: Deployment, payments: Payments, tmp_path: Path
) -> None:
    d = deployment
    with_executor(d, payments, tmp_path)
    d.import_orders([kettle("c-t")])
    d.start_worker()
    t = f"t-{d.namespace}"
    await d.publish_tickets([ticket_record(t, "s-t", "c-t", WORDS)])
    [told] = await follow_ups(d, 1)
    [refund] = payments.refunds
    delivery.figures(
        f"confirmed refund told, {d.broker.kind}",
        executed_on_server=payments.executed(),
        follow_ups=1,
    )
    assert told.status == "action_confirmed" and told.session_id == "s-t"
    assert str(refund["id"]) in told.reply and "39.90" in told.reply
    assert told.ticket_ids == [t] and payments.duplicates() == 0


async def test_a_refused_refund_is_an_apology_and_one_packet_for_a_person(
    deployment: Deployment, payments: Payments, tmp_path: Path
) -> None:
    d = deployment
    payments.fail_next("refuse")
    with_executor(d, payments, tmp_path)
    d.import_orders([kettle("c-f")])
    d.start_worker()
    t = f"t-{d.namespace}"
    await d.publish_tickets([ticket_record(t, "s-f", "c-f", WORDS)])
    [told] = await follow_ups(d, 1)
    handed = await delivery.drain(d, "support.handoffs", at_least=1, quiet=3.0)
    packets = [HandoffPacket.model_validate_json(r.value) for r in handed]
    delivery.figures(
        f"refused refund told, {d.broker.kind}",
        executed_on_server=payments.executed(),
        follow_ups=1,
        packets=len(packets),
    )
    assert told.status == "action_failed" and told.ticket_ids == [t]
    assert [(p.reason, p.ticket_id) for p in packets] == [("action_failed", t)]
    assert packets[0].reply == told.reply
    assert (payments.posts, payments.executed()) == (1, 0)
    [entry] = (await ledger(d, 1, "failed", told=True)).values()
    assert entry.detail.startswith("HTTP 422") or "422" in entry.detail


async def test_a_person_carries_out_a_manual_action_and_the_customer_is_told_once(
    deployment: Deployment, tmp_path: Path
) -> None:
    d = deployment
    d.env_extra.update(BATON_EXECUTOR="manual", BATON_SIGNING_KEYS=KEYS)
    d.import_orders([kettle("c-m")])
    d.start_worker()
    t = f"t-{d.namespace}"
    await d.publish_tickets([ticket_record(t, "s-m", "c-m", WORDS)])
    [action] = await actions(d, 1)
    # The hand-off queue gets the action; the customer is told nothing new meanwhile.
    handed = await delivery.drain(d, "support.handoffs", at_least=1, quiet=3.0)
    [packet] = [HandoffPacket.model_validate_json(r.value) for r in handed]
    assert packet.reason == "action_manual" and packet.action == action
    [waiting] = (await ledger(d, 1, "needs_person", told=True)).values()
    assert waiting.handoff == "action_manual"
    key = action.idempotency_key
    decide = ("decide", "s-m", key, "done", "--reference", "RF-77", "--by", "ana")
    done = d.baton(*decide, "--id", "d-done")
    assert done.returncode == 0, done.stderr.decode()
    [told] = await follow_ups(d, 1)
    assert told.status == "action_confirmed" and "RF-77" in told.reply
    assert told.ticket_id == f"action:{key}:d-done" and told.ticket_ids == [t]
    [closed] = (await ledger(d, 1, "confirmed", told=True)).values()
    assert (closed.remote_id, closed.closed_by) == ("RF-77", "d-done")
    # The same decision sent again, and another one on it: neither changes anything.
    again = d.baton(*decide, "--id", "d-done")
    late = d.baton("decide", "s-m", key, "failed", "--by", "bo", "--id", "d-late")
    assert again.returncode == 0 and late.returncode == 0
    letters = await delivery.drain(d, "support.dead-letters", at_least=2, quiet=3.0)
    reasons = sorted(orjson.loads(r.value)["reason"] for r in letters)
    assert reasons == ["decision_not_pending", "decision_replayed"]
    assert len(await follow_ups(d, 1)) == 1
    delivery.figures(
        f"manual action closed by a person, {d.broker.kind}",
        actions_requested=1,
        packets=1,
        follow_ups=1,
        refused_copies=len(letters),
    )

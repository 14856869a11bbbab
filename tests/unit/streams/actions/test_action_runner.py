"""From a ticket to a refund on the shop's system, once: the worker's runner reads the action,
checks it against the session's baton, records it in the ledger and carries it out; a forged
action is refused and never sent; a crash between send and confirm is looked up, not resent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from baton_kafka.agents import prompts
from baton_kafka.agents.orders import OrderSource, SQLiteOrderStore
from baton_kafka.schemas import dumps
from baton_kafka.schemas.action import ACTIONS_KEEP, Action, LedgerEntry, noted
from baton_kafka.schemas.handoff import HandoffPacket
from baton_kafka.schemas.records import Reply
from baton_kafka.schemas.stages import StrategyDraft
from baton_kafka.streams.actions.follow_up import Noting, Teller
from baton_kafka.streams.actions.http import HttpExecutor
from baton_kafka.streams.actions.http_map import ActionMap
from baton_kafka.streams.actions.ledger import Ledger
from baton_kafka.streams.actions.runner import Runner
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.testing import MemoryTable, TestPipeline
from tests.fixtures.data import C1_ORDERS, jacket, ticket
from tests.fixtures.payments import SHOPIFY_MAP, TOKEN, Payments, mapped, payments
from tests.fixtures.pipelines import in_memory
from tests.fixtures.stores import sqlite_store

__all__ = ["payments"]


@pytest.fixture
async def shop(tmp_path: Path) -> AsyncIterator[SQLiteOrderStore]:
    async with sqlite_store(tmp_path / "shop.sqlite3", [*C1_ORDERS, jacket("C1")]) as s:
        yield s


@pytest.fixture
async def executor(
    payments: Payments, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[HttpExecutor]:
    monkeypatch.setenv("SHOP_ADMIN_TOKEN", TOKEN)
    ex = HttpExecutor(ActionMap.parse(mapped(SHOPIFY_MAP, payments.base(), timeout_s=1.0)))
    yield ex
    await ex.close()


def runner_of(p: TestPipeline, executor: HttpExecutor, table: MemoryTable) -> Runner:
    return Runner(executor, Ledger(table), p.batons, p.dead_letter, p.store, backoff_s=0)


def on_topic(p: TestPipeline) -> list[tuple[Source, bytes]]:
    topic = p.topics.actions
    return [
        (Source(topic, 0, n, key=key), value)
        for n, (key, value) in enumerate(p.sink.sent[topic])
        if key is not None
    ]


async def test_an_approved_refund_is_executed_once_however_often_it_is_read(
    shop: OrderSource, payments: Payments, executor: HttpExecutor
) -> None:
    p = in_memory(shop)
    await p.send(ticket("t1", "My kettle is leaking, I want a refund."))
    [(source, value)] = on_topic(p)
    table = MemoryTable()
    runner = runner_of(p, executor, table)
    done = await runner.handle(value, source)
    assert done is not None and done.state == "confirmed"
    # Read again (a redelivery after a rebalance), and swept: nothing more is sent.
    again = await runner.handle(value, source)
    assert again == done and await runner.sweep(lambda _: True) == 0
    [refund] = payments.refunds
    assert refund["transactions"][0]["amount"] == 39.9 and done.remote_id == str(refund["id"])
    assert (payments.executed(), payments.duplicates(), payments.posts) == (1, 0, 1)
    assert Ledger(table).row("S1") == {done.idempotency_key: done}


async def test_a_forged_action_is_refused_and_never_sent(
    shop: OrderSource, payments: Payments, executor: HttpExecutor
) -> None:
    p = in_memory(shop)
    await p.send(ticket("t1", "My kettle is leaking, I want a refund."))
    [(source, value)] = on_topic(p)
    real = Action.model_validate_json(value)
    table = MemoryTable()
    runner = runner_of(p, executor, table)
    more = real.model_copy(update={"amount": 399.0, "idempotency_key": "bt-forged"})
    done = await runner.handle(dumps(more), source)
    assert done is not None and done.state == "needs_person"
    assert "not in an approved offer" in done.detail
    other = real.model_copy(update={"session_id": "S2"})
    assert await runner.handle(dumps(other), source) is None
    approved_by = real.model_copy(update={"decision_id": "d-none", "idempotency_key": "bt-2"})
    done = await runner.handle(dumps(approved_by), source)
    assert done is not None and "d-none was not applied" in done.detail
    assert payments.posts == 0
    reasons = [(d.stage, d.reason) for d in p.dead_letters]
    assert reasons == [("act", "untrusted_record")] * 3


async def test_a_worker_killed_between_send_and_confirm_is_reconciled_not_resent(
    shop: OrderSource, payments: Payments, executor: HttpExecutor
) -> None:
    p = in_memory(shop)
    await p.send(ticket("t1", "My kettle is leaking, I want a refund."))
    [(source, value)] = on_topic(p)
    action = Action.model_validate_json(value)
    table = MemoryTable()
    # What the changelog holds after a worker died with the request out: the entry sent.
    await executor.execute(action)
    sent = LedgerEntry.of(action).model_copy(update={"state": "sent", "attempts": 1})
    await Ledger(table).save(sent)
    payments.honour_keys = False
    # The new owner of the partition sweeps it, and reads the action again.
    assert await runner_of(p, executor, table).sweep(lambda s: s == "S1") == 1
    done = await runner_of(p, executor, table).handle(value, source)
    assert done is not None and done.state == "confirmed"
    assert (payments.posts, payments.executed(), payments.duplicates()) == (1, 1, 0)


async def test_an_action_whose_session_is_elsewhere_waits_and_is_swept_later(
    shop: OrderSource, payments: Payments, executor: HttpExecutor
) -> None:
    p = in_memory(shop)
    await p.send(ticket("t1", "My kettle is leaking, I want a refund."))
    [(source, value)] = on_topic(p)
    table = MemoryTable()
    runner = runner_of(p, executor, table)
    baton = p.batons.get("S1")
    assert baton is not None
    p.state.batons.delete("S1")
    waiting = await runner.handle(value, source)
    assert waiting is not None and waiting.state == "requested" and payments.posts == 0
    await p.batons.save_durably(baton)
    assert await runner.sweep(lambda _: True) == 1
    [entry] = Ledger(table).row("S1").values()
    assert entry.state == "confirmed" and payments.executed() == 1


async def test_money_the_order_no_longer_allows_is_refused_not_sent(
    shop: SQLiteOrderStore, payments: Payments, executor: HttpExecutor
) -> None:
    p = in_memory(shop)
    await p.send(ticket("t1", "My kettle is leaking, I want a refund."))
    [(source, value)] = on_topic(p)
    # The shop refunded part of the order itself after the reply promised the whole.
    [kettle] = [o for o in C1_ORDERS if o.order_id == "O-1"]
    await shop.upsert([kettle.model_copy(update={"refunded": 20.0})])
    done = await runner_of(p, executor, MemoryTable()).handle(value, source)
    assert done is not None and done.state == "needs_person"
    assert "39.90 is more than order O-1 still allows (19.90: paid 39.90, refunded 20.00" in (
        done.detail
    )
    assert payments.posts == 0
    # Another action of the session on the order, still in flight, counts against it too.
    await shop.upsert([kettle])
    table = MemoryTable()
    action = Action.model_validate_json(value)
    first = action.model_copy(update={"idempotency_key": "bt-earlier", "amount": 30.0})
    await Ledger(table).save(LedgerEntry.of(first).model_copy(update={"state": "sent"}))
    runner = runner_of(p, executor, table)
    assert await runner.too_much(action) is not None
    await Ledger(table).save(LedgerEntry.of(first).model_copy(update={"state": "failed"}))
    assert await runner.too_much(action) is None


def telling(p: TestPipeline, executor: HttpExecutor, table: MemoryTable) -> Runner:
    n = p.topics
    teller = Teller(p.out, n.replies, n.handoffs, p.batons, "en", 600)
    noting = Noting(p.batons, p.gate, p.redelivery.unfinished)
    return Runner(
        executor, Ledger(table), p.batons, p.dead_letter, p.store, 0, tell=teller, note=noting
    )


def follow_ups(p: TestPipeline) -> list[Reply]:
    replies = [Reply.model_validate_json(v) for _, v in p.sink.sent[p.topics.replies]]
    return [r for r in replies if r.status.startswith("action_")]


def packets(p: TestPipeline) -> list[HandoffPacket]:
    return [HandoffPacket.model_validate_json(v) for _, v in p.sink.sent[p.topics.handoffs]]


async def test_a_confirmed_refund_is_told_once_with_the_systems_reference(
    shop: OrderSource, payments: Payments, executor: HttpExecutor
) -> None:
    p = in_memory(shop)
    await p.send(ticket("t1", "My kettle is leaking, I want a refund."))
    [(source, value)] = on_topic(p)
    table = MemoryTable()
    runner = telling(p, executor, table)
    done = await runner.handle(value, source)
    assert done is not None and done.state == "confirmed" and done.told
    # Read again and swept: told already, nothing more is written.
    await runner.handle(value, source)
    await runner.sweep(lambda _: True)
    [told] = follow_ups(p)
    [refund] = payments.refunds
    assert told.status == "action_confirmed" and str(refund["id"]) in told.reply
    assert "39.90" in told.reply and told.ticket_ids == ["t1"] and told.session_id == "S1"
    assert packets(p) == []


async def test_a_refused_refund_is_an_apology_and_one_packet_for_a_person(
    shop: OrderSource, payments: Payments, executor: HttpExecutor
) -> None:
    p = in_memory(shop)
    await p.send(ticket("t1", "My kettle is leaking, I want a refund."))
    [(source, value)] = on_topic(p)
    payments.fail_next("refuse")
    runner = telling(p, executor, MemoryTable())
    done = await runner.handle(value, source)
    assert done is not None and done.state == "failed" and payments.executed() == 0
    await runner.handle(value, source)
    await runner.sweep(lambda _: True)
    [told] = follow_ups(p)
    assert told.status == "action_failed" and "O-1" in told.reply
    [handed] = packets(p)
    assert handed.reason == "action_failed" and handed.ticket_id == "t1"
    assert handed.reply == told.reply and "422" in handed.reason_text


async def test_an_ended_action_not_yet_told_is_told_by_the_sweep(
    shop: OrderSource, payments: Payments, executor: HttpExecutor
) -> None:
    p = in_memory(shop)
    await p.send(ticket("t1", "My kettle is leaking, I want a refund."))
    [(source, value)] = on_topic(p)
    table = MemoryTable()
    # A worker died after the ledger recorded the confirmation, before the follow-up.
    done = await runner_of(p, executor, table).handle(value, source)
    assert done is not None and done.state == "confirmed" and not done.told
    assert follow_ups(p) == []
    await telling(p, executor, table).sweep(lambda _: True)
    [told] = follow_ups(p)
    assert told.status == "action_confirmed" and payments.posts == 1
    [entry] = Ledger(table).row("S1").values()
    assert entry.told


async def test_the_next_tickets_prompt_states_the_refund_and_its_reference(
    shop: OrderSource, payments: Payments, executor: HttpExecutor
) -> None:
    p = in_memory(shop)
    await p.send(ticket("t1", "My kettle is leaking, I want a refund."))
    [(source, value)] = on_topic(p)
    done = await telling(p, executor, MemoryTable()).handle(value, source)
    assert done is not None and done.remote_id is not None
    baton = p.batons.get("S1")
    assert baton is not None
    [note] = baton.actions
    assert (note.kind, note.amount, note.state, note.reference) == (
        "refund",
        39.9,
        "confirmed",
        done.remote_id,
    )
    later = ticket("t2", "Where is my refund?")
    prompt = prompts.build("strategy", StrategyDraft, ticket=later, baton=baton, orders=[])
    assert prompt.facts.actions == [note] and "actions" not in prompt.facts.from_customer
    assert f'"reference":"{done.remote_id}"' in prompt.context
    # The baton keeps a few, the newest: the prompt stays bounded.
    many = baton.actions
    for n in range(12):
        many = noted(many, note.model_copy(update={"idempotency_key": f"bt-{n}"}))
    assert len(many) == ACTIONS_KEEP and many[-1].idempotency_key == "bt-11"


async def test_where_is_my_refund_is_answered_with_its_date_and_reference_not_a_new_offer(
    shop: OrderSource, payments: Payments, executor: HttpExecutor
) -> None:
    p = in_memory(shop)
    await p.send(ticket("t1", "My kettle is leaking, I want a refund."))
    [(source, value)] = on_topic(p)
    done = await telling(p, executor, MemoryTable()).handle(value, source)
    assert done is not None and done.remote_id is not None
    replies = await p.send(ticket("t2", "Where is my refund for the kettle?"))
    reply = replies[-1]
    assert reply.ticket_id == "t2", replies
    assert done.remote_id in reply.reply and done.updated_at.date().isoformat() in reply.reply
    assert reply.offer is None or reply.offer.lines == []
    assert len(on_topic(p)) == 1 and payments.posts == 1

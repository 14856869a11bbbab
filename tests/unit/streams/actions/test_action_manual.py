"""Actions a person carries out: the manual executor hands each one over as a packet, and a
person's signed done or failed decision closes it in the ledger once, after which the
customer is told; an action the HTTP executor cannot do is closed the same way."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from baton_kafka.agents.orders import OrderSource, SQLiteOrderStore
from baton_kafka.schemas import dumps
from baton_kafka.schemas.action import Action, LedgerEntry
from baton_kafka.schemas.decision import Decision
from baton_kafka.schemas.handoff import HandoffPacket
from baton_kafka.schemas.records import Reply
from baton_kafka.streams.actions.choose import open_executor
from baton_kafka.streams.actions.closing import Closer
from baton_kafka.streams.actions.executor import Executor, ExecutorRefused, Outcome
from baton_kafka.streams.actions.follow_up import Noting, Teller
from baton_kafka.streams.actions.ledger import Ledger
from baton_kafka.streams.actions.manual import ManualExecutor
from baton_kafka.streams.actions.runner import Runner
from baton_kafka.streams.admin.decisions import BadDecision, build
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.placement import session_partition
from baton_kafka.streams.runtime.records.signing import Signer
from baton_kafka.streams.testing import MemoryTable, TestPipeline
from tests.fixtures.data import C1_ORDERS, jacket, ticket
from tests.fixtures.pipelines import in_memory

KEYS = (("k1", "a-signing-secret-of-32-characters"),)


@pytest.fixture
async def shop(tmp_path: Path) -> AsyncIterator[SQLiteOrderStore]:
    from tests.fixtures.stores import sqlite_store

    async with sqlite_store(tmp_path / "shop.sqlite3", [*C1_ORDERS, jacket("C1")]) as s:
        yield s


class Refusing:
    """An executor with no request for anything: every action is for a person."""

    name = "refusing"
    sent = 0

    async def execute(self, action: Action) -> Outcome:
        self.sent += 1
        raise ExecutorRefused(f"no request for a {action.kind!r}")

    async def lookup(self, action: Action, remote_id: str | None) -> Outcome | None:
        return None

    async def check(self) -> None: ...

    async def close(self) -> None: ...


def wired(p: TestPipeline, executor: Executor, table: MemoryTable | None = None) -> Runner:
    """A runner telling on the pipeline's topics, and the pipeline's decisions closing in its
    ledger, as a worker with an executor has them."""
    n = p.topics
    ledger = Ledger(table or MemoryTable())
    runner = Runner(
        executor,
        ledger,
        p.batons,
        p.dead_letter,
        p.store,
        0,
        tell=Teller(p.out, n.replies, n.handoffs, p.batons, "en", 600),
        note=Noting(p.batons, p.gate, p.redelivery.unfinished),
    )
    p.people.closer = Closer(ledger, runner.told)
    return runner


async def approved_refund(p: TestPipeline) -> tuple[Source, bytes]:
    await p.send(ticket("t1", "My kettle is leaking, I want a refund."))
    topic = p.topics.actions
    [(key, value)] = p.sink.sent[topic]
    return Source(topic, 0, 0, key=key), value


def replies(p: TestPipeline) -> list[Reply]:
    return [Reply.model_validate_json(v) for _, v in p.sink.sent[p.topics.replies]]


def follow_ups(p: TestPipeline) -> list[Reply]:
    return [r for r in replies(p) if r.status.startswith("action_")]


def packets(p: TestPipeline) -> list[HandoffPacket]:
    return [HandoffPacket.model_validate_json(v) for _, v in p.sink.sent[p.topics.handoffs]]


def closing(did: str, action: str, item: str, **kw: Any) -> Decision:
    return Decision(decision_id=did, session_id="S1", item=item, action=action, by="ana", **kw)  # type: ignore[arg-type]


async def feed(p: TestPipeline, d: Decision, offset: int, signed: bool = False) -> None:
    topic = p.topics.decisions
    value = dumps(d)
    headers = Signer(KEYS).headers(topic, "S1", value) if signed else None
    source = Source(topic, session_partition("S1", p.settings.partitions), offset, key="S1")
    await p.people.handle(value, source, headers)


def test_baton_executor_manual_is_the_manual_executor() -> None:
    assert isinstance(open_executor("manual"), ManualExecutor)
    assert isinstance(open_executor(" manual "), ManualExecutor)


async def test_the_manual_executor_hands_the_action_to_a_person_and_promises_nothing_new(
    shop: OrderSource,
) -> None:
    p = in_memory(shop)
    source, value = await approved_refund(p)
    runner = wired(p, ManualExecutor())
    entry = await runner.handle(value, source)
    assert entry is not None and entry.state == "needs_person" and entry.waiting
    assert entry.handoff == "action_manual" and entry.told
    [handed] = packets(p)
    action = Action.model_validate_json(value)
    assert (
        handed.reason == "action_manual" and handed.packet_id == f"action:{entry.idempotency_key}"
    )
    assert handed.action == action and handed.ticket_id == "t1" and handed.reply == ""
    assert "39.90" in handed.reason_text and "done" in handed.reason_text
    # The customer hears nothing until a person closes it; read again and swept: no copy.
    assert follow_ups(p) == []
    await runner.handle(value, source)
    await runner.sweep(lambda _: True)
    assert len(packets(p)) == 1 and follow_ups(p) == []


async def test_a_person_s_done_confirms_it_once_and_the_customer_gets_the_reference(
    shop: OrderSource,
) -> None:
    p = in_memory(shop)
    source, value = await approved_refund(p)
    runner = wired(p, ManualExecutor())
    entry = await runner.handle(value, source)
    assert entry is not None
    key = entry.idempotency_key
    done = closing("d-done", "done", key, reference="RF-900")
    await feed(p, done, 0)
    closed = runner.ledger.get(entry.action)
    assert closed is not None and closed.state == "confirmed" and closed.remote_id == "RF-900"
    assert closed.closed_by == "d-done" and closed.told
    [told] = follow_ups(p)
    assert told.status == "action_confirmed" and "RF-900" in told.reply and "O-1" in told.reply
    assert told.ticket_id == f"action:{key}:d-done" and told.ticket_ids == ["t1"]
    # The next ticket's prompt knows it from the baton.
    [note] = p.baton("S1").actions
    assert (note.state, note.reference) == ("confirmed", "RF-900")
    # A copy read at the same place does nothing; one read elsewhere is a replay.
    await feed(p, done, 0)
    await feed(p, done, 5)
    assert [d.reason for d in p.dead_letters] == ["decision_replayed"]
    # Another decision on it: it waits for nobody any more.
    await feed(p, closing("d-late", "failed", key), 6)
    assert p.dead_letters[-1].reason == "decision_not_pending"
    assert len(follow_ups(p)) == 1 and len(packets(p)) == 1
    assert runner.ledger.get(entry.action) == closed


async def test_a_person_s_failed_is_an_apology_and_no_second_packet(shop: OrderSource) -> None:
    p = in_memory(shop)
    source, value = await approved_refund(p)
    runner = wired(p, ManualExecutor())
    entry = await runner.handle(value, source)
    assert entry is not None
    await feed(p, closing("d-f", "failed", entry.idempotency_key, text="card expired"), 0)
    closed = runner.ledger.get(entry.action)
    assert closed is not None and closed.state == "failed" and "card expired" in closed.detail
    [told] = follow_ups(p)
    assert told.status == "action_failed" and told.decision_id is None
    assert len(packets(p)) == 1


async def test_a_decision_that_names_nothing_waiting_is_refused_and_changes_nothing(
    shop: OrderSource,
) -> None:
    p = in_memory(shop)
    source, value = await approved_refund(p)
    real = Action.model_validate_json(value)
    runner = wired(p, ManualExecutor())
    # A forged action: refused before it was sent, no person asked, so none may close it.
    forged = real.model_copy(update={"amount": 399.0, "idempotency_key": "bt-forged"})
    refused = await runner.handle(dumps(forged), source)
    assert refused is not None and refused.state == "needs_person" and not refused.waiting
    entry = await runner.handle(value, source)
    assert entry is not None
    before = runner.ledger.row("S1")
    await feed(p, closing("d1", "done", "bt-forged", reference="R1"), 0)
    await feed(p, closing("d2", "done", "bt-unknown", reference="R1"), 1)
    await feed(p, closing("d3", "done", entry.idempotency_key), 2)
    await feed(p, closing("d4", "failed", entry.idempotency_key, reference="R1"), 3)
    unnamed = Decision(decision_id="d5", session_id="S1", action="done", reference="R1")
    await feed(p, unnamed, 4)
    priced = closing("d6", "done", entry.idempotency_key, reference="R1", amount=1.0)
    await feed(p, priced, 5)
    reasons = [d.reason for d in p.dead_letters if d.stage == "decide"]
    assert reasons == ["decision_not_pending", "decision_not_pending"] + ["decision_invalid"] * 4
    assert runner.ledger.row("S1") == before and follow_ups(p) == []


async def test_a_done_decision_is_checked_like_every_decision(shop: OrderSource) -> None:
    p = in_memory(shop)
    source, value = await approved_refund(p)
    runner = wired(p, ManualExecutor())
    entry = await runner.handle(value, source)
    assert entry is not None
    p.people.signer = Signer(KEYS)
    done = closing("d1", "done", entry.idempotency_key, reference="R1")
    await feed(p, done, 0)
    assert [d.reason for d in p.dead_letters] == ["untrusted_record"]
    assert runner.ledger.get(entry.action) == entry and follow_ups(p) == []
    await feed(p, done, 1, signed=True)
    closed = runner.ledger.get(entry.action)
    assert closed is not None and closed.state == "confirmed"


async def test_what_the_http_executor_cannot_do_gets_a_packet_a_person_closes(
    shop: OrderSource,
) -> None:
    p = in_memory(shop)
    source, value = await approved_refund(p)
    refusing = Refusing()
    runner = wired(p, refusing)
    entry = await runner.handle(value, source)
    assert entry is not None and entry.state == "needs_person" and entry.waiting
    [apology] = follow_ups(p)
    [handed] = packets(p)
    assert apology.status == "action_failed" and handed.reason == "action_failed"
    assert handed.action is not None and handed.action.idempotency_key == entry.idempotency_key
    await feed(p, closing("d1", "done", entry.idempotency_key, reference="RF-1"), 0)
    _, confirmed = follow_ups(p)
    assert confirmed.status == "action_confirmed" and "RF-1" in confirmed.reply
    assert confirmed.ticket_id != apology.ticket_id and refusing.sent == 1


async def test_a_crash_before_the_customer_was_told_is_told_once_after(
    shop: OrderSource,
) -> None:
    p = in_memory(shop)
    source, value = await approved_refund(p)
    table = MemoryTable()
    runner = wired(p, ManualExecutor(), table)
    entry = await runner.handle(value, source)
    assert entry is not None
    # The ledger closed it, then the worker died before telling: the sweep tells it.
    await Closer(runner.ledger, _never).close(
        closing("d1", "done", entry.idempotency_key, reference="R")
    )
    assert follow_ups(p) == []
    await runner.sweep(lambda _: True)
    await runner.sweep(lambda _: True)
    assert [r.status for r in follow_ups(p)] == ["action_confirmed"]


async def _never(entry: LedgerEntry) -> LedgerEntry:
    raise AssertionError("told inside the crash")


def test_the_desk_and_cli_builder_make_done_and_failed() -> None:
    done = build("done", "S1", item="bt-1", reference="RF-9")
    assert (done.action, done.item, done.reference) == ("done", "bt-1", "RF-9")
    with pytest.raises(BadDecision, match="reference"):
        build("done", "S1", item="bt-1")
    with pytest.raises(BadDecision, match="reference"):
        build("failed", "S1", item="bt-1", reference="RF-9")


async def test_the_desk_s_queue_shows_an_action_packet_until_a_person_closes_it(
    shop: OrderSource,
) -> None:
    from baton_kafka.streams.observe.handoff_queue import Read, open_handoffs

    p = in_memory(shop)
    source, value = await approved_refund(p)
    runner = wired(p, ManualExecutor())
    entry = await runner.handle(value, source)
    assert entry is not None
    # The ticket's own reply is on the topic: the action's packet is still open.
    [open_] = open_handoffs(Read(packets(p), replies=replies(p)))
    assert open_.action is not None and open_.reason == "action_manual"
    await feed(p, closing("d1", "done", entry.idempotency_key, reference="R"), 0)
    assert open_handoffs(Read(packets(p), replies=replies(p))) == []

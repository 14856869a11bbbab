"""The stage wrappers without a broker: baton, redelivery, indexes, context health, expiry."""

from __future__ import annotations

from datetime import timedelta

import orjson
import pytest

from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.schemas import (
    InFlight,
    MemoryIndex,
    Reply,
    Snapshot,
    StageRecord,
    dumps,
)
from baton_kafka.schemas.records import utcnow
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.settings import Settings
from baton_kafka.streams.testing import TestPipeline
from tests.fixtures.data import ticket


async def test_follow_ups_carry_product_problem_and_order(pipeline: TestPipeline) -> None:
    replies = await pipeline.send(
        ticket("t1", "My kettle is leaking, I want a refund."),
        ticket("t2", "Actually, can I send it back for repair instead?"),
        ticket("t3", "How long will that take?"),
    )
    assert [r.order_id for r in replies] == ["O-1", "O-1", "O-1"]
    last = replies[-1]
    assert "O-1" in last.reply and "Kettle" in last.reply and "leak" in last.reply
    baton = pipeline.baton("S1")
    assert [t.ticket_id for t in baton.tickets] == ["t1", "t2", "t3"]
    assert all("Kettle" in t.core_problem for t in baton.tickets)
    assert baton.version == 9 and baton.answered == ["t1", "t2", "t3"]


async def test_topic_switch_moves_the_current_order_and_keeps_the_old_one(
    pipeline: TestPipeline,
) -> None:
    replies = await pipeline.send(
        ticket("t1", "My kettle is leaking."),
        ticket("t2", "Also, the controller I bought last month drifts."),
    )
    assert [r.order_id for r in replies] == ["O-1", "O-2"]
    baton = pipeline.baton("S1")
    assert baton.order_id == "O-2" and baton.order_history == ["O-1"]
    assert baton.product == "DualSense Wireless Controller"
    assert any("topic switch" in f for f in baton.flags)
    assert "Kettle" in baton.tickets[0].core_problem


async def test_a_new_session_resolves_the_order_asked_about_before(pipeline: TestPipeline) -> None:
    await pipeline.send(ticket("a1", "My kettle is leaking, I want a refund.", session="A"))
    index = MemoryIndex.model_validate_json(pipeline.state.customers.get("C1") or b"")
    assert [s.session_id for s in index.sessions] == ["A"] and index.sessions[0].order_id == "O-1"
    replies = await pipeline.send(
        ticket("b1", "What happened with the order I asked about yesterday?", "B")
    )
    reply = replies[-1]
    assert reply.ticket_id == "b1" and reply.order_id == "O-1"
    assert "O-1" in reply.reply


async def test_a_republished_ticket_is_answered_once(pipeline: TestPipeline) -> None:
    first = ticket("t1", "My kettle is leaking.")
    replies = await pipeline.send(first, first)
    assert [r.ticket_id for r in replies] == ["t1"]
    assert pipeline.counts.counts["done.understand.reused"] == 1
    # The copy of an answered ticket stops at the first stage: no later stage re-reads it.
    assert (
        pipeline.counts.counts["in.lookup"] == 1
        and "done.strategy.reused" not in pipeline.counts.counts
    )


@pytest.mark.parametrize(
    ("field", "value", "phrase"),
    [
        ("session_id", "s1\nrm -rf ~", "holds a control character (U+000A)"),
        ("ticket_id", "t1\x1b[2J", "holds a control character (U+001B)"),
        ("ticket_id", "t1\tx", "holds a control character (U+0009)"),
        ("customer_id", "C1\x00", "holds a control character (U+0000)"),
        ("session_id", "s\u200b1", "an invisible character (U+200B, Cf)"),
        ("session_id", "s1\u202e", "an invisible character (U+202E, Cf)"),
        ("session_id", " s1", "starts with a space"),
        ("customer_id", "C1 ", "ends with a space"),
        ("session_id", "x" * 201, "at most 200 characters"),
        ("ticket_id", 1.5, "is the number 1.5"),
    ],
)
async def test_a_ticket_with_an_unsafe_id_is_an_invalid_input_dead_letter(
    pipeline: TestPipeline, field: str, value: object, phrase: str
) -> None:
    n = pipeline.topics
    raw = orjson.dumps({**ticket("t1", "My kettle is leaking.").model_dump(), field: value})
    await pipeline.intake(raw, Source(n.tickets, 0, 7))
    (letter,) = pipeline.dead_letters
    assert (letter.stage, letter.reason) == ("intake", "invalid_input")
    assert letter.error.startswith(f"{field}: ") and phrase in letter.error, letter.error
    assert "\n" not in letter.error and "\x1b" not in letter.error
    assert letter.payload == raw.decode() and letter.source_offset == 7
    assert n.sessions not in pipeline.sink.sent
    assert pipeline.counts.counts["done.intake.invalid"] == 1


@pytest.mark.parametrize(
    "value",
    [
        "ana.silva+orders@example.org",
        "gid://shopify/Customer/1029384756",
        "ANA SILVA 01",
        "t'$(id)`id`\"; rm -rf ~",
        "../../etc/passwd",
        "-rf",
        "客户1",
        "x" * 200,
    ],
)
async def test_ids_as_real_systems_send_them_pass_unchanged_and_key_the_session(
    store: SQLiteOrderStore, pipeline: TestPipeline, value: str
) -> None:
    odd = ticket(value, "My kettle is leaking.", session=value, customer="C1")
    (reply,) = await pipeline.send(odd)
    assert (reply.ticket_id, reply.session_id) == (value, value)
    assert pipeline.baton(value).tickets[0].ticket_id == value
    assert pipeline.topics.dead_letters not in pipeline.sink.sent


async def test_a_numeric_id_is_answered_under_its_digits(pipeline: TestPipeline) -> None:
    n = pipeline.topics
    raw = b'{"ticket_id": 1029384756, "session_id": 42, "customer_id": "C1", "text": "It leaks."}'
    await pipeline.intake(raw, Source(n.tickets, 0, 0))
    keys = [key for key, _ in pipeline.sink.sent[n.sessions]]
    await pipeline.hop("understand", n.sessions)
    await pipeline.hop("lookup", n.understood)
    await pipeline.hop("strategy", n.matched)
    (reply,) = [Reply.model_validate_json(v) for _, v in pipeline.sink.sent[n.replies]]
    assert (reply.ticket_id, reply.session_id) == ("1029384756", "42")
    assert keys == ["42"]


async def test_context_levels_full_partial_minimal_broken(pipeline: TestPipeline) -> None:
    n = pipeline.topics
    await pipeline.send(ticket("t1", "My kettle is leaking."))
    assert pipeline.counts.counts["context.full"] == 3

    # partial: the table lost the baton; the record's snapshot rebuilds it.
    await pipeline.intake(dumps(ticket("t2", "Can it be repaired?")), Source(n.tickets, 0, 9))
    await pipeline.hop("understand", n.sessions)
    pipeline.state.batons.data.clear()
    await pipeline.hop("lookup", n.understood)
    await pipeline.hop("strategy", n.matched)
    assert pipeline.counts.counts["context.partial"] == 1
    reply = Reply.model_validate_json(pipeline.sink.sent[n.replies][-1][1])
    assert reply.ticket_id == "t2" and reply.order_id == "O-1" and "Kettle" in reply.reply

    # minimal: no baton and a record without snapshot; the core problem comes from the ticket.
    await pipeline.intake(dumps(ticket("t3", "My kettle leaks.", "S2")), Source(n.tickets, 0, 10))
    await pipeline.hop("understand", n.sessions)
    ((_, value),) = pipeline.sink.sent.pop(n.understood)
    bare = StageRecord.model_validate_json(value).model_copy(update={"snapshot": Snapshot()})
    pipeline.state.batons.data.pop("S2")
    await pipeline.run_stage("lookup", dumps(bare), Source(n.understood, 0, 0))
    assert pipeline.counts.counts["context.minimal"] == 1

    # broken: a record that reached strategy without its understanding.
    record = StageRecord(ticket=ticket("t4", "Hello?", "S3"))
    await pipeline.run_stage("strategy", dumps(record), Source(n.matched, 0, 5))
    assert pipeline.counts.counts["context.broken"] == 1
    broken = [d for d in pipeline.dead_letters if d.reason == "context_broken"]
    assert [d.ticket_id for d in broken] == ["t4"]
    reply = Reply.model_validate_json(pipeline.sink.sent[n.replies][-1][1])
    assert reply.ticket_id == "t4" and reply.status == "degraded"


async def test_expiry_tombstones_idle_sessions_and_keeps_the_index(pipeline: TestPipeline) -> None:
    await pipeline.send(ticket("t1", "My kettle is leaking.", "OLD"))
    await pipeline.send(ticket("t2", "My controller drifts.", "NEW"))
    tables = pipeline.state
    old = pipeline.baton("OLD")
    tables.batons.put(
        "OLD", dumps(old.model_copy(update={"updated_at": utcnow() - timedelta(hours=2)}))
    )

    expired = await pipeline.expire_sessions(lambda sid: True)
    assert expired == 1
    assert pipeline.batons.get("OLD") is None and pipeline.batons.get("NEW") is not None
    assert tables.batons.tombstones == ["OLD"]
    for _, value in pipeline.sink.sent.pop(pipeline.topics.memory_index, []):
        await pipeline.apply_index(value)
    index = MemoryIndex.model_validate_json(tables.customers.get("C1") or b"")
    old_summary = next(s for s in index.sessions if s.session_id == "OLD")
    assert old_summary.expired and old_summary.order_id == "O-1"

    assert await pipeline.expire_sessions(lambda sid: False) == 0


async def test_a_refusal_upstream_hands_the_ticket_off(store: SQLiteOrderStore) -> None:
    from baton_kafka.agents.models.llm import Refused
    from baton_kafka.agents.testing.scripted import ScriptedLLM

    draft = {
        "solution": "Repair",
        "reply": "Order O-1, Midea Electric Kettle 1.7L: a colleague will look into it.",
        "internal_note": "n",
        "confidence": 0.8,
        "needs_human": False,
    }
    p = TestPipeline(
        orders=store,
        settings=Settings(namespace="u"),
        # The independent reader reads the draft and finds nothing.
        llm=ScriptedLLM([Refused("refusal", raw="I can't help with that."), draft, {"lines": []}]),
    )
    (reply,) = await p.send(ticket("t1", "My kettle is leaking."))
    assert reply.status == "handoff" and reply.order_id == "O-1"
    assert [(d.stage, d.reason) for d in p.dead_letters] == [("understand", "model_refused")]


@pytest.mark.parametrize("reply_reached_the_topic", [True, False])
async def test_a_reply_left_pending_by_a_crash_is_sent_exactly_once(
    pipeline: TestPipeline, reply_reached_the_topic: bool
) -> None:
    n = pipeline.topics
    await pipeline.intake(dumps(ticket("t1", "My kettle is leaking.")), Source(n.tickets, 0, 0))
    await pipeline.hop("understand", n.sessions)
    await pipeline.hop("lookup", n.understood)
    before = pipeline.baton("S1")
    (matched,) = pipeline.sink.sent[n.matched]
    await pipeline.hop("strategy", n.matched)
    (sent,) = pipeline.sink.sent[n.replies]
    answered = pipeline.baton("S1")
    assert answered.in_flight is None and answered.answered == ["t1"]
    # The crash: the baton still holds the reply as pending, as if the worker died right
    # after sending it.
    reply = Reply.model_validate_json(sent[1])
    pending = InFlight(ticket_id="t1", stage="strategy", output=sent[1].decode())
    pipeline.state.batons.put("S1", dumps(before.model_copy(update={"in_flight": pending})))
    if not reply_reached_the_topic:
        pipeline.sink.sent[n.replies].clear()

    await pipeline.run_stage("strategy", matched[1], Source(n.matched, 0, 0))

    replies = [Reply.model_validate_json(v) for _, v in pipeline.sink.sent[n.replies]]
    assert [r.ticket_id for r in replies] == ["t1"]
    assert replies[0].reply == reply.reply
    after = pipeline.baton("S1")
    assert after.answered == ["t1"] and after.in_flight is None
    assert after.version == answered.version, "the reply was recorded once"


async def test_a_pending_reply_whose_check_fails_every_attempt_is_still_sent(
    pipeline: TestPipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The redelivered record is the only one that finishes a pending reply: when the scan of
    the replies topic fails on every attempt, the reply goes out unchecked, not never."""
    from baton_kafka.streams.runtime.faust_app.faust_io import ScanIncomplete

    n = pipeline.topics
    await pipeline.intake(dumps(ticket("t1", "My kettle is leaking.")), Source(n.tickets, 0, 0))
    await pipeline.hop("understand", n.sessions)
    await pipeline.hop("lookup", n.understood)
    before = pipeline.baton("S1")
    (matched,) = pipeline.sink.sent[n.matched]
    await pipeline.hop("strategy", n.matched)
    (sent,) = pipeline.sink.sent[n.replies]
    # The crash came after the pending entry was recorded, before the reply was sent.
    pending = InFlight(ticket_id="t1", stage="strategy", output=sent[1].decode())
    pipeline.state.batons.put("S1", dumps(before.model_copy(update={"in_flight": pending})))
    pipeline.sink.sent[n.replies].clear()

    async def unreadable(*args: object, **kwargs: object) -> bool:
        raise ScanIncomplete("support.replies[0] not read to offset 9 in time")

    monkeypatch.setattr(pipeline.sink, "contains", unreadable)
    await pipeline.run_stage("strategy", matched[1], Source(n.matched, 0, 0))

    replies = [Reply.model_validate_json(v) for _, v in pipeline.sink.sent[n.replies]]
    assert [(r.ticket_id, r.reply) for r in replies] == [
        ("t1", Reply.model_validate_json(sent[1]).reply)
    ]
    assert [(d.stage, d.reason) for d in pipeline.dead_letters] == [("strategy", "stage_error")]
    assert "ScanIncomplete" in pipeline.dead_letters[0].error
    after = pipeline.baton("S1")
    assert after.answered == ["t1"] and after.in_flight is None
    # The session's next ticket does not wait for t1 at the gate.
    assert pipeline.redelivery.unfinished(ticket("t2", "And a repair?")) is None


async def test_a_baton_is_parsed_once_per_version(pipeline: TestPipeline) -> None:
    await pipeline.send(ticket("t1", "My kettle is leaking."))
    first = pipeline.baton("S1")
    assert pipeline.baton("S1") is first
    await pipeline.send(ticket("t2", "Can it be repaired?"))
    second = pipeline.baton("S1")
    assert second is not first and second.answered == ["t1", "t2"]
    # A table value equal to the cached one (a copy recovered from the changelog) is a hit.
    batons = pipeline.state.batons
    batons.put("S1", bytes(bytearray(batons.get("S1") or b"")))
    assert pipeline.baton("S1") is second


async def test_parsed_batons_are_bounded_by_their_size(pipeline: TestPipeline) -> None:
    from baton_kafka.streams.runtime.session import batons as module

    for i in range(3):
        await pipeline.send(ticket(f"t{i}", "My kettle is leaking.", f"S{i}"))
    sizes = [len(pipeline.state.batons.get(f"S{i}") or b"") for i in range(3)]
    module.PARSED_BATON_BYTES, saved = sizes[1] + sizes[2], module.PARSED_BATON_BYTES
    try:
        # A store that did not write them (a worker that took the partitions over) parses each.
        batons = module.BatonStore(pipeline.state)
        for i in range(3):
            assert batons.get(f"S{i}") == pipeline.baton(f"S{i}")
        assert list(batons._parsed) == ["S1", "S2"]
        assert batons._parsed_bytes == sizes[1] + sizes[2]
    finally:
        module.PARSED_BATON_BYTES = saved

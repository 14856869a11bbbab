"""A session's burst of tickets within the coalescing window: one turn, one reply, each ticket
accounted for once; the window's edges; the reply's coalesced records resumed after a crash."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import orjson
import pytest

from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.schemas import Reply, dumps
from baton_kafka.schemas.records import MAX_TEXT_CHARS, Ticket, utcnow
from baton_kafka.schemas.stages import StageRecord
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.delivery import Delivery
from baton_kafka.streams.runtime.session.bursts import (
    BURST_MAX,
    Bursts,
    coalesced,
    joined,
    turn_ids,
)
from baton_kafka.streams.testing import MemorySink, TestPipeline
from tests.fixtures.data import ticket
from tests.fixtures.pipelines import in_memory

WINDOW = 3.0
BURST = ["hi", "my kettle leaks", "order O-1"]


def queued(p: TestPipeline, records: list[StageRecord]) -> list[Delivery]:
    """``records`` on the sessions topic as the first stage's scheduler queues them."""
    topic = p.topics.sessions
    out = [Delivery(dumps(r), Source(topic, 0, i)) for i, r in enumerate(records)]
    assert p.bursts is not None
    for d in out:
        p.bursts.arrived(d)
    return out


def record(t: Ticket, seconds_ago: float) -> StageRecord:
    """``t`` as the intake forwards it, received ``seconds_ago``."""
    return StageRecord(ticket=t, received_at=utcnow() - timedelta(seconds=seconds_ago))


def burst(session: str = "S1", start: float = 30.0, gap: float = 1.0) -> list[StageRecord]:
    return [
        record(ticket(f"{session}-T{i + 1}", text, session), start - i * gap)
        for i, text in enumerate(BURST)
    ]


async def through(p: TestPipeline, deliveries: list[Delivery]) -> list[Reply]:
    """The queued records through the chain as the workers' schedulers run them: each
    session's in order on the first stage, the sessions side by side, the later stages fed
    meanwhile."""
    first = p.chain.first.name
    by_session: dict[str, list[Delivery]] = {}
    for d in deliveries:
        t = d.ticket()
        assert t is not None
        by_session.setdefault(t.session_id, []).append(d)

    async def session(ds: list[Delivery]) -> None:
        for d in ds:
            await p.deliver(first, d)

    running = [asyncio.create_task(session(ds)) for ds in by_session.values()]
    while not all(t.done() for t in running):
        for stage in list(p.chain)[1:]:
            await p.hop(stage.name, p.source_topic(stage))
        await asyncio.sleep(0.01)
    for t in running:
        t.result()
    for stage in list(p.chain)[1:]:
        await p.hop(stage.name, p.source_topic(stage))
    return [Reply.model_validate_json(v) for _, v in p.sink.sent[p.topics.replies]]


def coalescing(store: SQLiteOrderStore, **settings: Any) -> TestPipeline:
    p = in_memory(store, coalesce_window_s=WINDOW, first_reply_deadline_s=0.0, **settings)
    p.bursts = Bursts(WINDOW)
    return p


async def test_a_burst_within_the_window_is_one_turn_with_one_reply_naming_every_ticket(
    store: SQLiteOrderStore,
) -> None:
    p = coalescing(store)
    mine, other = burst(), record(ticket("S2-T1", "my kettle leaks", "S2"), 29.5)
    replies = await through(p, queued(p, [*mine[:2], other, mine[2]]))

    done = p.counts.counts
    # One chain for the burst, one for the other session; the burst's later copies reused.
    assert done["done.understand.ok"] == 2 and done["done.understand.reused"] == 2, done
    assert done["done.strategy.ok"] == 2 and done["reply.answered"] == 2, done
    s1 = [r for r in replies if r.session_id == "S1"]
    assert [(r.ticket_id, r.status) for r in s1] == [
        ("S1-T1", "answered"),
        ("S1-T2", "coalesced"),
        ("S1-T3", "coalesced"),
    ]
    turn = s1[0]
    assert turn.ticket_ids == ["S1-T1", "S1-T2", "S1-T3"]
    # The kettle from the second message, the order from the third: read as one turn.
    assert turn.order_id == "O-1" and turn.product is not None and "Kettle" in turn.product
    assert all(r.answered_by == "S1-T1" and r.reply == "" for r in s1[1:])
    assert [r.ticket_ids for r in s1[1:]] == [["S1-T2"], ["S1-T3"]]
    s2 = [r for r in replies if r.session_id == "S2"]
    assert [(r.ticket_id, r.status, r.ticket_ids) for r in s2] == [("S2-T1", "answered", ["S2-T1"])]
    baton = p.batons.get("S1")
    assert baton is not None and {"S1-T1", "S1-T2", "S1-T3"} <= set(baton.answered)
    assert baton.in_flight is None and p.gate._open == {}
    assert p.bursts is not None and p.bursts.queued("S1") == 0


async def test_with_the_window_off_each_ticket_of_a_burst_is_answered_on_its_own(
    store: SQLiteOrderStore,
) -> None:
    p = in_memory(store, coalesce_window_s=0.0, first_reply_deadline_s=0.0)
    topic = p.topics.sessions
    deliveries = [Delivery(dumps(r), Source(topic, 0, i)) for i, r in enumerate(burst())]
    replies = await through(p, deliveries)
    assert [(r.ticket_id, r.status, r.ticket_ids) for r in replies] == [
        (f"S1-T{i}", "answered", [f"S1-T{i}"]) for i in (1, 2, 3)
    ]


async def test_a_copy_of_a_coalesced_ticket_read_again_is_settled_without_a_reply(
    store: SQLiteOrderStore,
) -> None:
    p = coalescing(store)
    deliveries = queued(p, burst())
    await through(p, deliveries)
    sent = len(p.sink.sent[p.topics.replies])
    # A rebalance reads the burst again from its committed offset.
    await through(p, queued(p, burst()))
    assert len(p.sink.sent[p.topics.replies]) == sent


def test_the_burst_ends_at_a_gap_longer_than_the_window() -> None:
    bursts = Bursts(WINDOW)
    first, near, far = (
        record(ticket(f"T{i}", f"m{i}"), ago) for i, ago in ((1, 30), (2, 28), (3, 20))
    )
    ds = [Delivery(dumps(r), Source("s", 0, i)) for i, r in enumerate([first, near, far])]
    for d in ds:
        bursts.arrived(d)
    bursts.started(ds[0])
    later = asyncio.run(bursts.gather(first, ds[0].source, lambda _: True))
    assert [r.ticket.ticket_id for r in later] == ["T2"]


def test_the_burst_ends_before_a_record_that_may_not_join_it() -> None:
    bursts = Bursts(WINDOW)
    rs = [record(ticket(f"T{i}", f"m{i}"), 30 - i) for i in range(4)]
    ds = [Delivery(dumps(r), Source("s", 0, i)) for i, r in enumerate(rs)]
    for d in ds:
        bursts.arrived(d)
    bursts.started(ds[0])
    refused = ds[2]
    later = asyncio.run(bursts.gather(rs[0], ds[0].source, lambda d: d is not refused))
    # T3 is not answered ahead of T2: order within the session holds.
    assert [r.ticket.ticket_id for r in later] == ["T1"]


def test_a_burst_takes_at_most_burst_max_tickets_and_max_text() -> None:
    bursts = Bursts(WINDOW)
    rs = [record(ticket(f"T{i}", f"m{i}"), 30 - i * 0.1) for i in range(BURST_MAX + 3)]
    ds = [Delivery(dumps(r), Source("s", 0, i)) for i, r in enumerate(rs)]
    for d in ds:
        bursts.arrived(d)
    later = asyncio.run(bursts.gather(rs[0], ds[0].source, lambda _: True))
    assert len(later) + 1 == BURST_MAX
    long = [record(ticket(f"L{i}", "x" * (MAX_TEXT_CHARS // 2)), 30 - i * 0.1) for i in range(3)]
    bursts = Bursts(WINDOW)
    ls = [Delivery(dumps(r), Source("s", 0, i)) for i, r in enumerate(long)]
    for d in ls:
        bursts.arrived(d)
    later = asyncio.run(bursts.gather(long[0], ls[0].source, lambda _: True))
    assert [r.ticket.ticket_id for r in later] == []  # the joined text would be too long
    turn = joined(long[0], later)
    assert turn.ticket.text == long[0].ticket.text


async def test_a_ticket_waits_out_the_window_for_the_next_of_its_burst() -> None:
    bursts = Bursts(0.5)
    first = StageRecord(ticket=ticket("T1", "hi"))
    d1 = Delivery(dumps(first), Source("s", 0, 0))
    bursts.arrived(d1)
    bursts.started(d1)

    async def later_one() -> None:
        await asyncio.sleep(0.05)
        bursts.arrived(
            Delivery(dumps(StageRecord(ticket=ticket("T2", "my kettle leaks"))), Source("s", 0, 1))
        )

    arriving = asyncio.create_task(later_one())
    later = await bursts.gather(first, d1.source, lambda _: True)
    await arriving
    assert [r.ticket.ticket_id for r in later] == ["T2"]
    assert not bursts._news  # no wake-up left behind for the session
    turn = joined(first, later)
    assert turn.ticket.text == "hi\nmy kettle leaks" and turn_ids(turn) == ["T1", "T2"]


def test_other_sessions_are_not_gathered() -> None:
    bursts = Bursts(WINDOW)
    a = record(ticket("A1", "hi", "SA"), 30)
    b = record(ticket("B1", "hi", "SB"), 29.9)
    da, db = (Delivery(dumps(r), Source("s", 0, i)) for i, r in enumerate([a, b]))
    bursts.arrived(da)
    bursts.arrived(db)
    bursts.started(da)
    assert asyncio.run(bursts.gather(a, da.source, lambda _: True)) == []
    assert bursts.queued("SB") == 1


async def test_a_crash_between_the_reply_and_its_coalesced_records_resumes_each_once(
    store: SQLiteOrderStore,
) -> None:
    # A worker killed after the turn's reply: the first coalesced record is never sent.
    crashing = MemorySink(fail_first=lambda _, value: b'"coalesced"' in value)
    p = coalescing(store, sink=crashing)
    replies = await through(p, queued(p, burst()))
    assert sorted(r.ticket_id for r in replies) == ["S1-T1", "S1-T2", "S1-T3"]
    assert [r.status for r in replies] == ["answered", "coalesced", "coalesced"]
    # The retry found the turn's reply on the topic and sent only what was missing.
    assert crashing.failed and p.counts.counts["done.strategy.reused"] == 1, p.counts.counts


def test_coalesced_records_follow_from_the_reply_alone() -> None:
    reply = Reply.model_validate(
        {
            "ticket_id": "T1",
            "session_id": "S1",
            "customer_id": "C1",
            "status": "answered",
            "reply": "We are sorry about the kettle.",
            "solution": "Refund.",
            "internal_note": "",
            "confidence": 0.9,
            "order_id": "O-1",
            "ticket_ids": ["T1", "T2", "T3"],
        }
    )
    again = Reply.model_validate_json(dumps(reply))
    assert [dumps(r) for r in coalesced(reply)] == [dumps(r) for r in coalesced(again)]
    assert Reply.model_validate({**reply.model_dump(), "ticket_ids": []}).ticket_ids == ["T1"]


async def test_the_turn_s_reply_stops_the_first_reply_clock_of_every_ticket_it_answers(
    store: SQLiteOrderStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = in_memory(store, coalesce_window_s=WINDOW, first_reply_deadline_s=20.0)
    p.bursts = Bursts(WINDOW)
    started: list[str] = []
    stopped: list[str] = []
    start, stop = p.clocks.start, p.clocks.answering

    def starting(r: StageRecord) -> None:
        fresh = r.ticket.ticket_id not in p.clocks.open
        start(r)
        if fresh and r.ticket.ticket_id in p.clocks.open:
            started.append(r.ticket.ticket_id)

    async def stopping(ticket_id: str) -> None:
        stopped.append(ticket_id)
        await stop(ticket_id)

    monkeypatch.setattr(p.clocks, "start", starting)
    monkeypatch.setattr(p.redelivery, "answering", stopping)
    replies = await through(p, queued(p, burst(start=6.0)))
    assert [r.status for r in replies] == ["answered", "coalesced", "coalesced"]
    # Each gathered ticket's clock ran from its gathering to the turn's reply.
    assert started == stopped == ["S1-T1", "S1-T2", "S1-T3"]
    assert p.clocks.open == {} and p.clocks.sent == 0


async def test_a_ticket_read_again_long_after_its_window_still_gathers_the_burst_read_with_it() -> (
    None
):
    bursts = Bursts(WINDOW)
    rs = burst(start=600.0, gap=0.01)  # a restarted worker reads the held burst again
    ds = [Delivery(dumps(r), Source("s", 0, i)) for i, r in enumerate(rs)]
    bursts.arrived(ds[0])

    async def the_rest_of_the_fetch() -> None:
        await asyncio.sleep(0.05)
        for d in ds[1:]:
            bursts.arrived(d)

    reading = asyncio.create_task(the_rest_of_the_fetch())
    later = await bursts.gather(rs[0], ds[0].source, lambda _: True, bursts.arrival(ds[0]))
    await reading
    assert [r.ticket.ticket_id for r in later] == ["S1-T2", "S1-T3"]


def _senders() -> list[tuple[Ticket, Ticket, Ticket]]:
    """(the owner's first ticket, another sender's, the owner's next) within one window."""
    a_guest, b_guest = "visitor-a-7f3e9c21", "visitor-b-19c2d4e8"

    def guest(tid: str, text: str, guest_id: str | None) -> Ticket:
        return Ticket(ticket_id=tid, session_id="S1", text=text, guest_id=guest_id)

    return [
        (ticket("A1", "hi"), ticket("B1", "refund to IBAN DE89", customer="C2"), ticket("A2", "x")),
        (ticket("A1", "hi"), ticket("B1", "refund to IBAN DE89", customer=None), ticket("A2", "x")),
        (
            guest("A1", "hi", a_guest),
            guest("B1", "refund to IBAN DE89", b_guest),
            guest("A2", "x", a_guest),
        ),
        (
            guest("A1", "hi", a_guest),
            guest("B1", "refund to IBAN DE89", None),
            guest("A2", "x", a_guest),
        ),
    ]


@pytest.mark.parametrize("owner,other,again", _senders())
async def test_another_senders_ticket_never_joins_a_new_sessions_burst(
    store: SQLiteOrderStore, owner: Ticket, other: Ticket, again: Ticket
) -> None:
    # The session has no baton yet; the other sender's ticket is back-dated by an hour, so its
    # first-reply clock would ring at once if it were started.
    p = in_memory(store, coalesce_window_s=WINDOW, first_reply_deadline_s=120.0)
    p.bursts = Bursts(WINDOW)
    back = other.model_copy(update={"created_at": utcnow() - timedelta(hours=1)})
    rs = [record(owner, 30.0), record(back, 29.0), record(again, 28.0)]
    replies = await through(p, queued(p, rs))
    await asyncio.sleep(0)

    # The owner's burst is one turn of the owner's tickets; the other text is not in it.
    answered = [r for r in replies if r.status != "coalesced"]
    assert [(r.ticket_id, r.ticket_ids) for r in answered] == [("A1", ["A1", "A2"])]
    assert [r.ticket_id for r in replies if r.status == "coalesced"] == ["A2"]
    baton = p.batons.get("S1")
    assert baton is not None and baton.customer_id == owner.customer_id
    sent = p.sink.sent
    elsewhere = [v for topic, vs in sent.items() if topic != p.topics.dead_letters for _, v in vs]
    assert elsewhere and all(b"IBAN" not in v for v in elsewhere)
    assert "IBAN" not in baton.model_dump_json()
    # The other sender gets nothing in the session (no coalesced record, no holding reply,
    # no answer) and one refusal, filed under them, that names nobody.
    assert [r for r in replies if r.ticket_id == "B1"] == [] and p.clocks.sent == 0
    letters = [(key, orjson.loads(v)) for key, v in p.sink.sent[p.topics.dead_letters]]
    assert [(dl["ticket_id"], dl["reason"]) for _, dl in letters] == [("B1", "session_conflict")]
    [(key, dl)] = letters
    assert key != "S1" and not dl["session_id"]
    assert "C1" not in dl["error"] and (owner.guest() or "C1") not in orjson.dumps(dl).decode()
    assert "B1" not in (baton.answered or []) and p.gate._open == {}

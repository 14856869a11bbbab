"""First-reply deadlines: one holding reply for a ticket the model is slow on, then its own."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from baton_kafka.agents.fixed_texts import fixed
from baton_kafka.agents.models.claude import AnthropicLLM
from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.agents.testing.standin import StandIn
from baton_kafka.schemas import Reply, dumps
from baton_kafka.schemas.records import utcnow
from baton_kafka.schemas.stages import StageRecord
from baton_kafka.streams.runtime.answers.clocks import ClockGauges, age_bucket
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.settings import Settings, SettingsError, load
from baton_kafka.streams.testing import MemoryState, TestPipeline
from tests.fixtures.agents import client
from tests.fixtures.data import ticket
from tests.fixtures.delivery import Tally
from tests.fixtures.pipelines import in_memory

HANG_S = 0.8  # how long the stand-in's model hangs: well past the deadline below
DEADLINE_S = 0.3


@pytest.fixture
async def standin() -> AsyncIterator[StandIn]:
    async with StandIn(hang_s=HANG_S) as server:
        yield server


@pytest.fixture
async def llm(standin: StandIn) -> AsyncIterator[AnthropicLLM]:
    model = client(standin)
    yield model
    await model.aclose()


def pipeline(
    store: SQLiteOrderStore,
    llm: AnthropicLLM,
    deadline: float = DEADLINE_S,
    state: MemoryState | None = None,
) -> TestPipeline:
    return in_memory(
        store, client=llm, state=state, first_reply_deadline_s=deadline, languages=("en", "de")
    )


def replies(p: TestPipeline) -> list[Reply]:
    return [Reply.model_validate_json(v) for _, v in p.sink.sent[p.topics.replies]]


def hang_understanding(standin: StandIn) -> None:
    standin.add_faults([{"fault": "hang", "stage": "understand", "times": 1}])


async def until_holding(p: TestPipeline, timeout: float = 5.0) -> float:
    """Seconds until ``p`` sent a holding reply."""
    started = time.monotonic()
    while not any(r.status == "holding" for r in replies(p)):
        assert time.monotonic() - started < timeout, "no holding reply"
        await asyncio.sleep(0.02)
    return time.monotonic() - started


@pytest.mark.parametrize(
    ("text", "language"),
    [("My kettle is leaking, I want a refund.", "en"), ("Mein Wasserkocher ist undicht.", "de")],
)
async def test_a_hanging_model_gets_one_holding_reply_then_the_real_one(
    store: SQLiteOrderStore, standin: StandIn, llm: AnthropicLLM, text: str, language: str
) -> None:
    hang_understanding(standin)
    p = pipeline(store, llm)
    n = p.topics
    await p.intake(dumps(ticket("t1", text)), Source(n.tickets, 0, 0))
    understanding = asyncio.create_task(p.hop("understand", n.sessions))
    await until_holding(p)
    gauges = {m.name: m for m in ClockGauges(p.clocks).collect()}
    assert gauges["baton_tickets_past_deadline"].samples[0].value == 1
    open_ = {s.labels["age"]: s.value for s in gauges["baton_open_tickets"].samples}
    assert sum(open_.values()) == 1 and open_["le_5"] == 1
    await understanding
    # The stage wrote the baton it read before the model hung: the mark survived that write.
    assert p.baton("S1").holding == ["t1"]
    await p.hop("lookup", n.understood)
    await p.hop("strategy", n.matched)

    held, answer = replies(p)
    assert (held.ticket_id, held.status, answer.ticket_id) == ("t1", "holding", "t1")
    assert answer.status != "holding" and answer.reply != held.reply
    assert held.reply == fixed("still_working", language)
    assert held.language == language and held.offer is None and held.solution == ""
    assert held.timings_ms["end_to_end"] >= DEADLINE_S * 1000
    # The tallies count the ticket's own reply only.
    tally = Tally({"S1": ["t1"]}, [held, answer])
    assert not tally.duplicates and not tally.lost
    after = p.baton("S1")
    assert after.answered == ["t1"] and after.holding == [], "answered: the mark is dropped"
    assert p.clocks.open == {} and p.clocks.sent == 1


@pytest.mark.parametrize("deadline", [5.0, 0.0])
async def test_no_holding_reply_when_answered_in_time_or_when_off(
    store: SQLiteOrderStore, standin: StandIn, llm: AnthropicLLM, deadline: float
) -> None:
    if deadline == 0.0:
        hang_understanding(standin)  # off: even a hanging model gets no holding reply
    p = pipeline(store, llm, deadline)
    (answer,) = await p.send(ticket("t1", "My kettle is leaking, I want a refund."))
    await asyncio.sleep(DEADLINE_S)
    assert answer.status != "holding" and [r.ticket_id for r in replies(p)] == ["t1"]
    assert p.clocks.open == {} and p.clocks.sent == 0
    assert p.baton("S1").holding == []


async def test_a_redelivered_copy_after_a_restart_gets_no_second_holding_reply(
    store: SQLiteOrderStore, standin: StandIn, llm: AnthropicLLM
) -> None:
    state = MemoryState()
    first = pipeline(store, llm, state=state)
    n = first.topics
    text = "My kettle is leaking, I want a refund."
    # Written a while ago: the restarted worker's clock is past the deadline at once.
    written = ticket("t1", text).model_copy(update={"created_at": utcnow() - timedelta(seconds=1)})
    await first.intake(dumps(written), Source(n.tickets, 0, 0))
    (copy,) = first.sink.sent[n.sessions]
    hang_understanding(standin)
    crashed = asyncio.create_task(first.hop("understand", n.sessions))
    await until_holding(first)
    crashed.cancel()  # the worker dies while the model hangs: the ticket's offset is not committed
    with pytest.raises(asyncio.CancelledError):
        await crashed
    assert first.baton("S1").holding == ["t1"]

    hang_understanding(standin)  # the model hangs again for the redelivered copy
    restarted = pipeline(store, llm, state=state)
    restarted.sink.sent[n.sessions].append(copy)
    await restarted.hop("understand", n.sessions)
    await restarted.hop("lookup", n.understood)
    await restarted.hop("strategy", n.matched)
    await asyncio.sleep(DEADLINE_S)
    (held,) = replies(first)
    (answer,) = replies(restarted)
    assert held.status == "holding" and answer.status != "holding"
    assert restarted.clocks.sent == 0 and restarted.baton("S1").answered == ["t1"]
    # And a copy of the answered ticket starts no clock at all.
    restarted.sink.sent[n.sessions].append(copy)
    await restarted.hop("understand", n.sessions)
    assert restarted.clocks.open == {} and len(replies(restarted)) == 1


async def test_a_ticket_that_waited_in_the_topic_is_timed_from_its_publication(
    store: SQLiteOrderStore, standin: StandIn, llm: AnthropicLLM
) -> None:
    # A backlog: the ticket was published a minute before intake read it, and its producer
    # gave no created_at. The clock counts the customer's wait from the broker's timestamp.
    p = pipeline(store, llm, deadline=30.0)
    n = p.topics
    published = utcnow() - timedelta(seconds=60)
    text = "My kettle is leaking, I want a refund."
    await p.intake(dumps(ticket("t1", text)), Source(n.tickets, 0, 0, timestamp=published))
    ((_, raw),) = p.sink.sent[n.sessions]
    assert StageRecord.model_validate_json(raw).ticket.created_at == published
    hang_understanding(standin)
    understanding = asyncio.create_task(p.hop("understand", n.sessions))
    await until_holding(p)  # at once, not 30 s after intake
    await understanding
    assert p.baton("S1").holding == ["t1"]


@pytest.mark.parametrize(
    ("written_ago_s", "timestamp", "kept"),
    [
        (None, datetime.fromtimestamp(-0.001, UTC), False),  # "no timestamp" from a client
        (None, datetime.fromtimestamp(0, UTC), False),
        (None, None, False),
        (120.0, "a minute ago", True),  # the producer's own created_at wins
    ],
)
async def test_intake_dates_a_ticket_only_from_a_real_timestamp_and_keeps_the_producers_own(
    store: SQLiteOrderStore,
    llm: AnthropicLLM,
    written_ago_s: float | None,
    timestamp: datetime | str | None,
    kept: bool,
) -> None:
    p = pipeline(store, llm)
    n = p.topics
    now = utcnow()
    written = None if written_ago_s is None else now - timedelta(seconds=written_ago_s)
    at = now - timedelta(seconds=60) if timestamp == "a minute ago" else timestamp
    assert not isinstance(at, str)
    sent = ticket("t1", "Where is my order?").model_copy(update={"created_at": written})
    await p.intake(dumps(sent), Source(n.tickets, 0, 0, timestamp=at))
    ((_, raw),) = p.sink.sent[n.sessions]
    got = StageRecord.model_validate_json(raw).ticket.created_at
    assert got == written if kept else got is None


async def test_a_timestamp_ahead_of_the_workers_clock_dates_a_ticket_no_later_than_now(
    store: SQLiteOrderStore, llm: AnthropicLLM
) -> None:
    p = pipeline(store, llm)
    n = p.topics
    ahead = utcnow() + timedelta(hours=1)
    before = utcnow()
    await p.intake(
        dumps(ticket("t1", "Where is my order?")), Source(n.tickets, 0, 0, timestamp=ahead)
    )
    ((_, raw),) = p.sink.sent[n.sessions]
    got = StageRecord.model_validate_json(raw).ticket.created_at
    assert got is not None and before <= got <= utcnow()


def test_the_deadline_setting_takes_seconds_or_0_and_rejects_the_rest() -> None:
    assert Settings().first_reply_deadline_s == 20.0
    assert load({"BATON_FIRST_REPLY_DEADLINE": "0"}).first_reply_deadline_s == 0.0
    assert load({"BATON_FIRST_REPLY_DEADLINE": "7.5"}).first_reply_deadline_s == 7.5
    with pytest.raises(SettingsError, match="BATON_FIRST_REPLY_DEADLINE must be positive"):
        load({"BATON_FIRST_REPLY_DEADLINE": "-1"})


def test_open_tickets_are_bucketed_by_age() -> None:
    assert [age_bucket(a) for a in (0.1, 5.0, 7.0, 25.0, 200.0)] == [
        "le_5",
        "le_5",
        "le_10",
        "le_60",
        "over_180",
    ]

"""The pure parts of trace, replay and dlq: selection, diffing, re-drive planning, formatting."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest
from aiokafka.structs import OffsetAndTimestamp

from baton_kafka.schemas.baton import Baton, ChainEntry, MemoryIndex
from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.records import DeadLetter, Reply, Ticket, UsageTotals
from baton_kafka.schemas.stages import (
    OrderCandidate,
    OrderMatch,
    Recall,
    StageRecord,
    Understanding,
)
from baton_kafka.streams.debug import dlq, trace
from baton_kafka.streams.debug.replay_plan import (
    Selection,
    diff,
    diff_line,
    first_replies,
    parse_offsets,
    select,
    summary,
)
from baton_kafka.streams.kafka.client import Message
from baton_kafka.streams.kafka.reader import offset_or_none
from baton_kafka.streams.kafka.topics import TopicNames, changelog_topic
from baton_kafka.streams.settings import Settings
from tests.fixtures import data

T0 = 1_800_000_000_000


def msg(
    topic: str,
    value: bytes | None,
    partition: int = 0,
    offset: int = 0,
    ts: int = T0,
    key: bytes | None = None,
    headers: tuple[tuple[str, bytes], ...] = (),
) -> Message:
    return Message(topic, partition, offset, ts, key, value, headers)


def ticket(tid: str, session: str = "s1", text: str = "My kettle leaks.") -> Ticket:
    """``data.ticket`` of customer c1, by default in session s1 about a leaking kettle."""
    return data.ticket(tid, text, session, "c1")


def reply(tid: str, **changes: object) -> Reply:
    base = Reply(
        ticket_id=tid,
        session_id="s1",
        customer_id="c1",
        status="answered",
        reply="We will refund order O-1.",
        solution="Refund.",
        internal_note="",
        confidence=0.9,
        order_id="O-1",
        usage=UsageTotals(calls=3, input_tokens=100, output_tokens=20, by_stage={"strategy": 1}),
        timings_ms={"strategy": 5.0, "end_to_end": 1234.0},
    )
    return base.model_copy(update=changes)


def letter(**fields: object) -> DeadLetter:
    values: dict[str, object] = {
        "id": "dl1",
        "ticket_id": None,
        "session_id": None,
        "stage": "intake",
        "reason": "invalid_input",
        "error": "value is not valid JSON",
        "payload": "not json",
        "failed_at": datetime(2026, 11, 1, 12, tzinfo=UTC),
    }
    values.update(fields)
    return DeadLetter.model_validate(values)


# replay: selection


def test_parse_offsets_accepts_global_and_per_partition_values() -> None:
    assert parse_offsets(["5"]) == {None: 5}
    assert parse_offsets(["0:3,1:7", "9"]) == {0: 3, 1: 7, None: 9}
    assert parse_offsets(None) == {}
    for bad in (["x"], ["1:x"], ["-1"], ["-2:4"]):
        with pytest.raises(ValueError):
            parse_offsets(bad)


def test_offset_bounds_are_inclusive_and_per_partition_overrides_global() -> None:
    s = Selection(from_offsets={None: 2, 1: 0}, to_offsets={None: 4})
    assert [o for o in range(7) if s.offset_ok(0, o)] == [2, 3, 4]
    assert [o for o in range(7) if s.offset_ok(1, o)] == [0, 1, 2, 3, 4]


def test_time_bounds_treat_a_missing_since_offset_as_nothing_and_missing_until_as_open() -> None:
    s = Selection(since={0: 3, 1: None}, until={0: None, 1: 1})
    assert [o for o in range(6) if s.offset_ok(0, o)] == [3, 4, 5]
    assert not any(s.offset_ok(1, o) for o in range(6))
    until_only = Selection(until={0: 2})
    assert [o for o in range(5) if until_only.offset_ok(0, o)] == [0, 1]


def test_offsets_for_times_answer_of_the_embedded_broker_for_a_future_time_is_none() -> None:
    assert offset_or_none(None) is None
    assert offset_or_none(OffsetAndTimestamp(0, -1)) is None
    assert offset_or_none(OffsetAndTimestamp(7, T0)) == 7


def test_select_keeps_publication_order_skips_invalid_and_repeated_tickets() -> None:
    topic = "support.tickets"
    records = [
        msg(topic, dumps(ticket("b", "s2")), partition=1, offset=0, ts=T0 + 5),
        msg(topic, dumps(ticket("a")), partition=0, offset=0, ts=T0),
        msg(topic, b"not json", partition=0, offset=1, ts=T0 + 1),
        msg(topic, dumps(ticket("a")), partition=0, offset=2, ts=T0 + 2),
        msg(topic, dumps(ticket("c")), partition=0, offset=3, ts=T0 + 9),
    ]
    picked = select(records, Selection())
    assert [t.ticket_id for t in picked.tickets] == ["a", "b", "c"]
    assert (picked.invalid, picked.duplicates) == (1, 1)
    assert [
        t.ticket_id for t in select(records, Selection(sessions=frozenset({"s2"}))).tickets
    ] == ["b"]
    by_ticket = Selection(tickets=frozenset({"c", "b"}), dead_lettered=frozenset({"c"}))
    assert [t.ticket_id for t in select(records, by_ticket).tickets] == ["c"]
    # Partition 1 ends before its first record; "a" at offset 2 is the first "a" in range.
    by_offset = Selection(from_offsets={0: 2}, to_offsets={1: -1})
    assert [t.ticket_id for t in select(records, by_offset).tickets] == ["a", "c"]


# replay: diffing


def test_diff_names_each_changed_field_and_the_four_results() -> None:
    t = ticket("a")
    assert diff(t, reply("a"), reply("a", replied_at=datetime.now(UTC)))["result"] == "same"
    changed = diff(t, reply("a", status="handoff"), reply("a", order_id=None))
    assert changed["result"] == "changed"
    assert changed["changes"] == {
        "status": {"before": "handoff", "after": "answered"},
        "order_id": {"before": "O-1", "after": None},
    }
    line = diff_line(changed)
    assert line.startswith("~ a (s1) changed: ")
    assert "status 'handoff' -> 'answered'" in line and "order_id 'O-1' -> null" in line
    assert diff(t, None, reply("a"))["result"] == "new"
    failed = diff(t, reply("a"), None)
    assert failed["result"] == "failed" and "no reply" in diff_line(failed)


def test_summary_counts_results_and_first_replies_keeps_the_first() -> None:
    t = ticket("a")
    entries = [diff(t, reply("a"), reply("a")), diff(t, reply("a"), None)]
    doc = summary("ns", entries, published=2)
    assert (doc["replayed"], doc["same"], doc["failed"], doc["changed"]) == (2, 1, 1, 0)
    assert doc["namespace"] == "ns" and doc["published"] == 2 and doc["tickets"] == entries
    topic = "support.replies"
    first = first_replies(
        [
            msg(topic, dumps(reply("a", status="degraded"))),
            msg(topic, b"{}"),
            msg(topic, dumps(reply("a")), offset=2),
        ]
    )
    assert list(first) == ["a"] and first["a"].status == "degraded"


# dlq


def test_filters_match_reason_stage_time_and_id() -> None:
    dl = letter(reason="timeout", stage="strategy")
    assert dlq.Filters().match(dl) and dlq.Filters().empty
    assert dlq.Filters(reasons=frozenset({"timeout", "drift"})).match(dl)
    assert not dlq.Filters(stages=frozenset({"intake"})).match(dl)
    assert dlq.Filters(since=dlq.parse_time("2026-11-01T12:00:00Z")).match(dl)
    assert not dlq.Filters(since=dlq.parse_time("2026-11-01T12:00:01")).match(dl)
    assert not dlq.Filters(ids=frozenset({"other"})).match(dl)
    with pytest.raises(ValueError):
        dlq.parse_time("yesterday")


def test_redrive_sends_the_ticket_or_the_rejected_payload() -> None:
    t = ticket("a")
    key, value = dlq.redrive(letter(ticket=t, ticket_id="a", session_id="s1", stage="strategy"))
    assert key == "s1" and Ticket.model_validate_json(value) == t
    assert dlq.redrive(letter()) == (None, b"not json")
    assert dlq.redrive(letter(stage="lookup", payload="{}")) is None


def test_attempts_count_earlier_drives_of_the_same_ticket() -> None:
    topic = "support.tickets"
    value = dumps(ticket("a"))
    other = dumps(ticket("b"))
    history = [
        msg(topic, value),
        msg(topic, other, headers=((dlq.ATTEMPTS, b"5"),)),
        msg(topic, value, offset=1, headers=((dlq.REQUEUED_FROM, b"dl0"), (dlq.ATTEMPTS, b"2"))),
    ]
    assert dlq.previous_attempts(value, history) == 2
    assert dlq.previous_attempts(b"not json", history) == 1
    assert dlq.already_requeued(history) == {"dl0"}


def test_plan_skips_the_requeued_the_unredrivable_and_a_ticket_twice() -> None:
    t = ticket("a")
    m = msg("support.dead-letters", b"")
    chosen = [
        dlq.Letter(letter(id="d1", ticket=t, ticket_id="a", stage="understand"), m),
        dlq.Letter(letter(id="d2", ticket=t, ticket_id="a", stage="strategy"), m),
        dlq.Letter(letter(id="d3", stage="lookup", payload="{}"), m),
        dlq.Letter(letter(id="d4"), m),
    ]
    history = [msg("support.tickets", b"not json", headers=((dlq.REQUEUED_FROM, b"d4"),))]
    todo, skipped = dlq.plan(chosen, history, again=False)
    assert [(x.dl.id, attempts) for x, _, _, attempts in todo] == [("d1", 2)]
    assert [x.dl.id for x, _ in skipped] == ["d2", "d3", "d4"]
    todo, _ = dlq.plan(chosen, history, again=True)
    assert [x.dl.id for x, *_ in todo] == ["d1", "d4"]


def test_a_requeued_ticket_continues_its_dead_letters_trace() -> None:
    parent = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    headers = (("baton.reason", b"timeout"), ("traceparent", parent), ("tracestate", b"v=1"))
    traced = dlq.Letter(letter(id="d1"), msg("support.dead-letters", b"", headers=headers))
    assert dlq.requeue_headers(traced, 2) == {
        dlq.REQUEUED_FROM: "d1",
        dlq.ATTEMPTS: "2",
        "traceparent": parent.decode(),
        "tracestate": "v=1",
    }
    untraced = dlq.Letter(letter(id="d2"), msg("support.dead-letters", b""))
    assert dlq.requeue_headers(untraced, 1) == {dlq.REQUEUED_FROM: "d2", dlq.ATTEMPTS: "1"}


def test_dead_letter_line_is_one_line_with_its_id_stage_and_reason() -> None:
    dl = letter(error="line one\nline two " + "x" * 200, ticket_id="a", session_id="s1")
    text = dlq.line(dlq.Letter(dl, msg("support.dead-letters", dumps(dl))))
    assert "\n" not in text and text.endswith("…")
    assert "dl1" in text and "intake" in text and "invalid_input" in text and "a (s1)" in text


# trace


def _understanding() -> Understanding:
    return Understanding(
        product="Kettle",
        problem="leaks",
        demand="refund",
        time_hint=None,
        keywords=["kettle"],
        language="en",
        core_problem="The kettle leaks.",
        refers_to_earlier=False,
    )


def test_trace_builds_a_session_timeline_from_every_topic() -> None:
    names = TopicNames.of(Settings())
    changelog = changelog_topic(Settings())
    t = ticket("a")
    base = StageRecord(ticket=t)
    understood = base.model_copy(
        update={"understanding": _understanding(), "timings_ms": {"understand": 12.0}}
    )
    matched = understood.model_copy(
        update={
            "match": OrderMatch(order_id="O-1", method="deterministic", confidence=0.9, reason="r")
        }
    )
    baton = Baton(
        session_id="s1",
        version=1,
        chain=[ChainEntry(ticket_id="a", stage="understand", decision="refund")],
    )
    dl = letter(id="dx", source_topic=names.tickets, source_partition=0, source_offset=1)
    records = {
        names.tickets: [
            msg(names.tickets, dumps(t), ts=T0, headers=((dlq.REQUEUED_FROM, b"d0"),)),
            msg(names.tickets, b"garbage", offset=1, ts=T0 + 1, key=b"s1"),
            msg(names.tickets, dumps(ticket("z", "s2")), offset=2, ts=T0 + 2),
        ],
        names.sessions: [msg(names.sessions, dumps(base), ts=T0 + 10)],
        names.understood: [msg(names.understood, dumps(understood), ts=T0 + 20)],
        names.matched: [
            msg(names.matched, dumps(matched), ts=T0 + 30),
            msg(names.matched, dumps(matched), offset=1, ts=T0 + 31),
        ],
        names.replies: [msg(names.replies, dumps(reply("a")), ts=T0 + 40)],
        names.handoffs: [
            msg(names.handoffs, dumps(data.handoff_packet("a", "s1")), ts=T0 + 40),
            msg(names.handoffs, dumps(data.handoff_packet("z", "s2")), offset=1, ts=T0 + 41),
        ],
        names.dead_letters: [msg(names.dead_letters, dumps(dl), ts=T0 + 5)],
        changelog: [
            msg(changelog, dumps(baton), ts=T0 + 20, key=b'"s1"'),
            msg(changelog, None, offset=1, ts=T0 + 50, key=b'"s1"'),
        ],
    }
    doc = trace.build("s1", names, changelog, records)
    kinds = [e["kind"] for e in doc["events"]]
    assert kinds == [
        "published",
        "published",
        "dead_letter",
        "intake",
        "understand",
        "baton",
        "lookup",
        "lookup",
        "reply",
        "handoff",
        "baton",
    ]
    assert [t["ticket_id"] for t in doc["tickets"]] == ["a"]
    assert [p["packet_id"] for p in doc["handoffs"]] == ["handoff:a"]
    assert doc["dead_letters"][0]["id"] == "dx"
    assert doc["usage"]["calls"] == 3
    assert doc["batons"][-1] == {"at": doc["batons"][-1]["at"], "deleted": True}
    lines = trace.render(doc)
    assert lines[0].startswith("session s1: 1 ticket(s), 1 reply(ies) (1 answered)")
    assert "requeued from dead letter d0" in lines[1]
    assert any("(again: redelivered or requeued)" in line for line in lines)
    assert any("refund, product Kettle, en" in line and "(12 ms)" in line for line in lines)
    assert any("answered, order O-1" in line and "1234 ms end to end" in line for line in lines)
    assert any("to a person: needs_approval, normal urgency, due " in line for line in lines)
    assert lines[-1].startswith("usage: 3 call(s), 120 tokens")
    empty = trace.build("nobody", names, changelog, records)
    assert not empty["found"]
    assert trace.render(empty) == ["session nobody: nothing recorded in any topic"]


def test_trace_shows_how_a_reference_was_resolved_and_on_what_words() -> None:
    names = TopicNames.of(Settings())
    changelog = changelog_topic(Settings())
    understood = StageRecord(ticket=ticket("a"), understanding=_understanding())
    recalled = Recall(method="demand", evidence=["sent for repair"], order_id="O-1")
    asking = Recall(
        method="ask",
        evidence=["the one I returned"],
        order_id=None,
        candidates=[
            OrderCandidate(
                order_id=oid,
                product_name="P",
                status="delivered",
                ordered_at=datetime(2026, 11, 1, tzinfo=UTC),
                score=1.0,
            )
            for oid in ("O-1", "O-2")
        ],
    )
    matches = [
        OrderMatch(order_id="O-1", method="history", confidence=0.85, reason="r", recall=recalled),
        OrderMatch(order_id=None, method="none", confidence=0.6, reason="r", recall=asking),
    ]
    records = {
        names.tickets: [msg(names.tickets, dumps(ticket("a")), ts=T0)],
        names.matched: [
            msg(names.matched, dumps(understood.model_copy(update={"match": m})), offset=i)
            for i, m in enumerate(matches)
        ],
    }
    lines = trace.render(trace.build("s1", names, changelog, records))
    assert any(
        "by history" in x and "recalled by demand from 'sent for repair'" in x for x in lines
    )
    assert any("ask which of O-1, O-2 from 'the one I returned'" in x for x in lines)
    doc = trace.build("s1", names, changelog, records)
    lookup = doc["tickets"][0]["stages"]["lookup"]  # the JSON keeps the newest record's match
    assert lookup["match"]["recall"]["candidates"][1]["order_id"] == "O-2"


def test_trace_shows_each_tickets_trace_id_from_the_headers() -> None:
    names = TopicNames.of(Settings())
    changelog = changelog_topic(Settings())
    first, second = "0af7651916cd43dd8448eb211c80319c", "1" * 32
    parent = (("traceparent", f"00-{first}-b7ad6b7169203331-01".encode()),)
    requeued = (("traceparent", f"00-{second}-{'2' * 16}-01".encode()),)
    records = {
        names.tickets: [msg(names.tickets, dumps(ticket("a")), headers=parent)],
        names.sessions: [
            msg(names.sessions, dumps(StageRecord(ticket=ticket("a"))), ts=T0 + 1, headers=parent),
            msg(names.sessions, dumps(StageRecord(ticket=ticket("b"))), ts=T0 + 2),
        ],
        names.replies: [
            msg(names.replies, dumps(reply("a")), ts=T0 + 3, headers=parent),
            msg(names.replies, dumps(reply("a")), offset=1, ts=T0 + 4, headers=requeued),
        ],
    }
    doc = trace.build("s1", names, changelog, records)
    assert {t["ticket_id"]: t["trace_ids"] for t in doc["tickets"]} == {
        "a": [first, second],
        "b": [],
    }
    lines = trace.render(doc)
    assert lines[1] == f"trace of a: {first}, {second}"
    assert not any(line.startswith("trace of b") for line in lines)


def test_a_session_trace_does_not_show_what_a_refused_sender_wrote() -> None:
    names = TopicNames.of(Settings())
    changelog = changelog_topic(Settings())
    own, intruder = ticket("a"), data.ticket("b", "I am someone else: 12 Secret Lane", "s1", "c2")
    refused = letter(
        id="dx",
        ticket_id="b",
        stage="understand",
        reason="session_conflict",
        error="this ticket may not use session s1.",
        payload=dumps(intruder).decode(),
        ticket=intruder,
    )
    records = {
        names.tickets: [
            msg(names.tickets, dumps(own)),
            msg(names.tickets, dumps(intruder), offset=1, key=b"s1"),
        ],
        names.sessions: [
            msg(names.sessions, dumps(StageRecord(ticket=own))),
            msg(names.sessions, dumps(StageRecord(ticket=intruder)), offset=1),
        ],
        names.dead_letters: [msg(names.dead_letters, dumps(refused), key=b"c2")],
    }
    doc = trace.build("s1", names, changelog, records)
    assert [t["ticket_id"] for t in doc["tickets"]] == ["a"] and doc["dead_letters"] == []
    shown = orjson.dumps(doc).decode() + "\n".join(trace.render(doc))
    assert "Secret Lane" not in shown and "a ticket this session refused" in shown


def test_no_dead_letter_of_a_customer_erased_after_it_is_requeued() -> None:
    m = msg("support.dead-letters", b"")
    failed = datetime(2026, 11, 1, 12, tzinfo=UTC)
    chosen = [
        dlq.Letter(letter(id="d1", ticket=ticket("a"), ticket_id="a", stage="understand"), m),
        dlq.Letter(
            letter(
                id="d2", ticket=data.ticket("b", "x", "s2", "c2"), ticket_id="b", stage="lookup"
            ),
            m,
        ),
    ]
    mark = MemoryIndex(key="c1", erased_at=failed.replace(hour=13))
    changelog = [
        msg("baton-customers-changelog", dumps(MemoryIndex(key="c1")), key=b'"c1"'),
        msg("baton-customers-changelog", dumps(mark), offset=1, key=b'"c1"'),
    ]
    erased = dlq.erasures(changelog)
    assert erased == {"c1": mark.erased_at}
    todo, skipped = dlq.plan(chosen, [], again=False, erased=erased)
    assert [x.dl.id for x, *_ in todo] == ["d2"]
    assert [(x.dl.id, why) for x, why in skipped] == [
        ("d1", "its customer was erased after it (baton forget)")
    ]
    # A dead letter written after the erasure (a new ticket of the customer) is requeued.
    later = {"c1": failed.replace(hour=11)}
    assert len(dlq.plan(chosen, [], again=False, erased=later)[0]) == 2


def test_an_erased_customers_unparsed_intake_payload_is_not_requeued() -> None:
    m = msg("support.dead-letters", b"")
    erased = {
        "c1": datetime(2026, 11, 1, 13, tzinfo=UTC),
        "42": datetime(2026, 11, 1, 13, tzinfo=UTC),
    }
    payloads = {
        # Valid JSON that is no ticket (no ticket_id), a record cut short, bytes escaped, a
        # stage record whose ticket failed, an escaped id, a numeric id.
        "no-id": '{"session_id": "s1", "customer_id": "c1", "text": "my address is 1 Elm St"}',
        "cut": '{"ticket_id": "t1", "session_id": "s1", "customer_id": "c1", "text": "my IB',
        "bytes": '{"ticket_id": "t1", "customer_id" : "c1", "text": "\\xff"}\\xfe',
        "stage": '{"ticket": {"ticket_id": "t1", "customer_id": "c1"}, "burst": 1}',
        "escaped": '{"ticket_id": "t1", "customer_id": "\\u00631", "text": ""',
        "number": '{"ticket_id": "t1", "session_id": "s1", "customer_id": 42, "text": 7}',
    }
    chosen = [dlq.Letter(letter(id=name, payload=payload), m) for name, payload in payloads.items()]
    others = [
        dlq.Letter(
            letter(id="c2", payload='{"ticket_id": "t2", "customer_id": "c2", "text": 1}'), m
        ),
        dlq.Letter(letter(id="anon", payload='{"ticket_id": "t3", "text": 1}'), m),
    ]
    todo, skipped = dlq.plan([*chosen, *others], [], again=False, erased=erased)
    assert [x.dl.id for x, *_ in todo] == ["c2", "anon"]
    assert {x.dl.id for x, _ in skipped} == set(payloads)
    assert {why for _, why in skipped} == {"its customer was erased after it (baton forget)"}
    # Written after the erasure, the same payloads are the customer's new tickets: requeued.
    after = {"c1": datetime(2026, 11, 1, 11, tzinfo=UTC)}
    assert len(dlq.plan(chosen, [], again=False, erased=after)[0]) == len(payloads)


def test_a_replay_leaves_out_the_tickets_of_a_customer_erased_after_them() -> None:
    erased_at = datetime.fromtimestamp((T0 + 10) / 1000, UTC)
    records = [
        msg("support.tickets", dumps(ticket("a")), ts=T0),
        msg("support.tickets", dumps(data.ticket("b", "x", "s2", "c2")), offset=1, ts=T0 + 1),
        msg("support.tickets", dumps(ticket("c")), offset=2, ts=T0 + 20),
    ]
    picked = select(records, Selection(erased={"c1": erased_at}))
    # c1's ticket from before the erasure stays out; their later one and c2's are replayed.
    assert [t.ticket_id for t in picked.tickets] == ["b", "c"] and picked.erased == 1

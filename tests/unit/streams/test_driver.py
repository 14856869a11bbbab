"""The test kit: the shop's own example test runs, ``send`` is the chain step by step, and the
sink's fault injection fails once."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton_kafka.schemas import dumps
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.testing import MemorySink, TestPipeline
from examples.stages import priority_check
from tests.fixtures.data import C1_ORDERS, ticket
from tests.fixtures.stores import sqlite_store

# The example a shop copies, run as part of the suite.
test_an_angry_refund_is_urgent_and_its_tag_reaches_the_reply = (
    priority_check.test_an_angry_refund_is_urgent_and_its_tag_reaches_the_reply
)
test_a_question_is_low_and_the_session_remembers_it = (
    priority_check.test_a_question_is_low_and_the_session_remembers_it
)
test_a_vips_refund_goes_to_a_person_because_the_stage_says_so = (
    priority_check.test_a_vips_refund_goes_to_a_person_because_the_stage_says_so
)
test_an_invalid_ticket_is_a_dead_letter_not_a_reply = (
    priority_check.test_an_invalid_ticket_is_a_dead_letter_not_a_reply
)


async def test_send_is_the_intake_then_each_stages_hop_then_the_index(tmp_path: Path) -> None:
    tickets = [
        ticket("a1", "My kettle is leaking, I want a refund.", customer="C1"),
        ticket("a2", "How long will the refund take?", customer="C1"),
        ticket("b1", "Which order is it?", customer="C2"),
    ]
    async with sqlite_store(tmp_path / "a.sqlite3", C1_ORDERS) as a:
        whole = TestPipeline(orders=a)
        sent = await whole.send(*tickets)
    async with sqlite_store(tmp_path / "b.sqlite3", C1_ORDERS) as b:
        stepped = TestPipeline(orders=b)
        for offset, t in enumerate(tickets):
            await stepped.intake(dumps(t), Source(stepped.topics.tickets, 0, offset))
            for stage in stepped.chain:
                await stepped.hop(stage.name)
            await stepped.index()
        assert stepped.state.customers.keys() == ["C1"]
    assert [d.reason for d in whole.dead_letters] == ["session_conflict"]
    assert [d.reason for d in stepped.dead_letters] == ["session_conflict"]
    assert len(sent) == 2 and [(r.ticket_id, r.status, r.order_id, r.reply) for r in sent] == [
        (r.ticket_id, r.status, r.order_id, r.reply) for r in stepped.replies
    ]


async def test_a_failing_sink_fails_its_first_matching_send_only() -> None:
    by_topic = MemorySink(fail_first="support.replies")
    await by_topic.send("u.support.handoffs", "S1", b"{}")
    with pytest.raises(ConnectionError):
        await by_topic.send("u.support.replies", "S1", b"{}")
    await by_topic.send("u.support.replies", "S1", b"{}")
    assert by_topic.failed and by_topic.take("u.support.replies") == [("S1", b"{}")]
    assert by_topic.sent == {"u.support.handoffs": [("S1", b"{}")]}  # taken records leave
    by_value = MemorySink(fail_first=lambda _, value: b"coalesced" in value)
    await by_value.send("u.support.replies", "S1", b"answered")
    assert not by_value.failed
    with pytest.raises(ConnectionError):
        await by_value.send("u.support.replies", "S1", b"coalesced")

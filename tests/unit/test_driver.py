"""The shipped in-memory driver: the shop's own example test runs, and the driver is the chain."""

from __future__ import annotations

from pathlib import Path

from baton_kafka.streams.testing import TestPipeline
from examples.stages import priority_check
from tests.fixtures.data import C1_ORDERS, ticket
from tests.fixtures.pipelines import in_memory, run
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


async def test_the_driver_gives_the_replies_the_suites_own_driver_gives(tmp_path: Path) -> None:
    tickets = [
        ticket("a1", "My kettle is leaking, I want a refund.", customer="C1"),
        ticket("a2", "How long will the refund take?", customer="C1"),
        ticket("b1", "Which order is it?", customer="C2"),
    ]
    async with sqlite_store(tmp_path / "a.sqlite3", C1_ORDERS) as a:
        ours = await run(in_memory(a), *tickets)
    async with sqlite_store(tmp_path / "b.sqlite3", C1_ORDERS) as b:
        driver = TestPipeline(orders=b)
        shipped = await driver.send(*tickets)
        assert [d.reason for d in driver.dead_letters] == ["session_conflict"]
    assert [(r.ticket_id, r.status, r.order_id, r.reply) for r in shipped] == [
        (r.ticket_id, r.status, r.order_id, r.reply) for r in ours
    ]
    assert len(shipped) == 2

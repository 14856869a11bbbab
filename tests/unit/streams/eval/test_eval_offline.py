"""The labelled eval set through the pipeline in memory with the offline model: no amnesia."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from baton_kafka.schemas import Reply
from baton_kafka.streams.eval.run import (
    age_days,
    check,
    load_cases,
    load_orders,
    shifted,
    week_shift,
)
from baton_kafka.streams.eval.score import World, score, summarize
from tests.fixtures.paths import TEST_DATA
from tests.fixtures.pipelines import in_memory
from tests.fixtures.stores import sqlite_store


async def test_the_offline_model_forgets_nothing_and_resolves_every_order(tmp_path: Path) -> None:
    cases = load_cases(TEST_DATA / "eval_tickets.jsonl")
    orders = load_orders(TEST_DATA / "eval_orders.jsonl")
    check(cases, orders, "eval_tickets.jsonl")
    cases, orders = shifted(cases, orders, week_shift(cases, datetime.now(UTC).date(), orders))
    replies: dict[str, Reply] = {}
    async with sqlite_store(tmp_path / "orders.sqlite3", orders) as store:
        pipeline = in_memory(store, ticket_max_age_days=age_days(cases, datetime.now(UTC)))
        for phase in sorted({c.label.phase for c in cases}):
            for case in (c for c in cases if c.label.phase == phase):
                for reply in await pipeline.send(case.ticket):
                    replies[reply.ticket_id] = reply
    world = World.build(orders, cases)
    scores = [score(c, replies[c.ticket.ticket_id], world) for c in cases]
    summary = summarize(scores)
    assert [s.ticket_id for s in scores if s.amnesia] == []
    assert summary["tickets"] == len(cases) and summary["amnesia_rate"] == 0.0
    assert summary["order_accuracy"] == 1.0
    assert summary["invented_orders"] == 0 and summary["leaks"] == 0
    asked = [s for s in scores if "ask" in s.tags]
    assert asked and all(s.order_id is None for s in asked)

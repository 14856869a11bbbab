"""A degraded understanding keeps the customer's own words: the session's next tickets read them.

The model is the Messages-API stand-in over HTTP, made to answer the understand stage with
invalid JSON on every attempt, so the rules take over.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from baton_kafka.agents.orders import SQLiteOrderStore
from baton_kafka.agents.testing.standin import StandIn
from baton_kafka.streams.runtime.pipeline import Pipeline
from baton_kafka.streams.settings import Settings
from baton_kafka.streams.testing import TestPipeline
from tests.fixtures.agents import client
from tests.fixtures.data import ticket

FAULT = "[[fault:invalid_json:understand:9]]"


@asynccontextmanager
async def through_standin(store: SQLiteOrderStore) -> AsyncIterator[Pipeline]:
    """A pipeline whose model is Claude through the SDK, answered by a stand-in of its own."""
    async with StandIn() as standin:
        llm = client(standin, max_retries=0)
        try:
            yield TestPipeline(orders=store, settings=Settings(namespace="u"), llm=llm)
        finally:
            await llm.aclose()


async def test_the_fallback_core_problem_is_in_the_customers_words(
    store: SQLiteOrderStore,
) -> None:
    async with through_standin(store) as p:
        words = "The lid of my kettle cracked when the water boiled, and it spits hot water now."
        [first] = await p.send(ticket("t1", f"{words} {FAULT}"))
        assert first.status == "degraded"
        assert [(d.stage, d.reason) for d in p.dead_letters] == [
            ("understand", "validation_failed")
        ]
        [memory] = p.baton("S1").tickets
        # The rules' label, and what the customer wrote: what the next ticket's prompt reads.
        assert words in memory.core_problem and len(memory.core_problem) <= 400

        replies = await p.send(ticket("t2", "So what happens now?"))
        assert replies[-1].ticket_id == "t2" and replies[-1].status == "answered"
        assert words in p.baton("S1").tickets[0].core_problem


async def test_a_long_or_chinese_message_is_kept_truncated(store: SQLiteOrderStore) -> None:
    async with through_standin(store) as p:
        long = "My kettle leaks from the base. " + "It also rattles loudly. " * 40
        await p.send(
            ticket("t1", f"{long} {FAULT}"), ticket("z1", f"我的水壶盖子裂了 {FAULT}", "S2")
        )
        kept = p.baton("S1").tickets[0].core_problem
        assert "My kettle leaks from the base." in kept and len(kept) <= 400
        assert (
            kept.endswith('…"')
            and len(kept.split("The customer wrote: ")[1])
            <= 200 + 2  # the quotes around at most 200 characters
        )
        assert "我的水壶盖子裂了" in p.baton("S2").tickets[0].core_problem

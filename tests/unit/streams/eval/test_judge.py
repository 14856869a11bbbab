"""``baton eval --judge`` with the stand-in: its fixed judging rules over a corpus of right and
wrong replies, and the judge's report over the eval set through the real SDK."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from baton_kafka.agents.models.claude import AnthropicLLM
from baton_kafka.agents.policy import default_policy
from baton_kafka.agents.testing.standin import StandIn
from baton_kafka.agents.testing.standin.judge import judge_block, judge_responder
from baton_kafka.schemas import Offer, OfferLine, Order, Reply, Ticket
from baton_kafka.streams.eval.judge import (
    JudgeOptions,
    judge_context,
    judge_prompt_version,
    judge_replies,
)
from baton_kafka.streams.eval.run import age_days, load_cases, load_orders, shifted, week_shift
from baton_kafka.streams.eval.score import Case, Label
from baton_kafka.streams.settings import Settings
from baton_kafka.streams.testing import TestPipeline
from tests.fixtures.paths import TEST_DATA, data_rows
from tests.fixtures.stores import sqlite_store

ORDERS = {o["order_id"]: Order.model_validate(o) for o in data_rows("guard_orders.jsonl")}
CORPUS = data_rows("judge_corpus.jsonl")


def _case(row: dict[str, Any]) -> tuple[Case, Reply, Order]:
    order = ORDERS[row["order_id"]]
    ticket = Ticket(
        ticket_id=row["id"],
        session_id=row["id"],
        customer_id=order.customer_id,
        text=row.get("ticket", "(the customer's message)"),
    )
    label = Label(
        phase=1,
        product=order.product_name,
        problem=[],
        demand=row["demand"],
        order_id=order.order_id,
    )
    lines = [OfferLine.model_validate(x) for x in row["offer"]]
    reply = Reply(
        ticket_id=row["id"], session_id=row["id"], customer_id=order.customer_id,
        status=row["status"], reply=row["reply"], solution="As the reply says.",
        internal_note="", confidence=0.9, order_id=order.order_id,
        offer=Offer(state="approved", lines=lines) if lines else None,
    )  # fmt: skip
    return Case(ticket=ticket, label=label), reply, order


@pytest.mark.parametrize("row", CORPUS, ids=[r["id"] for r in CORPUS])
def test_the_stand_in_judge_grades_the_corpus(row: dict[str, Any]) -> None:
    case, reply, order = _case(row)
    data = judge_block(judge_context(case, reply, order))
    assert data is not None
    verdict = judge_responder(data, default_policy())
    assert {k: verdict[k] for k in row["expect"]} == row["expect"], verdict["comment"]


def test_the_judge_prompt_version_follows_its_instructions_and_the_policy() -> None:
    version = judge_prompt_version(default_policy())
    assert version.startswith("j-") and version == judge_prompt_version(default_policy())


async def test_the_judge_grades_the_eval_set_through_the_sdk(tmp_path: Path) -> None:
    cases = load_cases(TEST_DATA / "eval_tickets.jsonl")
    orders = load_orders(TEST_DATA / "eval_orders.jsonl")
    cases, orders = shifted(cases, orders, week_shift(cases, datetime.now(UTC).date(), orders))
    replies: dict[str, Reply] = {}
    async with StandIn() as standin, sqlite_store(tmp_path / "o.sqlite3", orders) as store:
        llm = AnthropicLLM(api_key="k", base_url=standin.base_url, max_retries=0)
        age = age_days(cases, datetime.now(UTC))
        settings = Settings(
            namespace="u", session_ttl_s=3600, llm="anthropic", ticket_max_age_days=age
        )
        pipeline = TestPipeline(orders=store, settings=settings, llm=llm)
        try:
            for phase in sorted({c.label.phase for c in cases}):
                for case in (c for c in cases if c.label.phase == phase):
                    for reply in await pipeline.send(case.ticket):
                        replies[reply.ticket_id] = reply
        finally:
            await llm.aclose()
        # One reply spoiled as a weak model might: another remedy, an id not in the store.
        spoiled = cases[0].ticket.ticket_id
        replies[spoiled] = replies[spoiled].model_copy(
            update={"reply": "WE CANNOT HELP!!! Order ZZ-999999 gets nothing!!!", "solution": "-"}
        )
        before = standin.stats()["by_stage"].get("judge", 0)
        options = JudgeOptions(model="judge-model", api_key="k", base_url=standin.base_url,
                               via="stand-in")  # fmt: skip
        report = await judge_replies(cases, replies, orders, default_policy(), options)
        judged_calls = standin.stats()["by_stage"]["judge"] - before
    assert judged_calls == len(cases) and report["judged"] == len(cases)
    assert report["unjudged"] == []
    assert report["prompt_version"] == judge_prompt_version(default_policy())
    assert report["model"] == "judge-model"
    scores = report["scores"]
    assert set(scores) == {"remedy", "understood", "grounded", "tone", "overall"}
    assert all(0.0 <= v <= 1.0 for v in scores.values())
    assert scores["grounded"] > 0.9 and scores["overall"] > 0.8
    worst = report["worst"][0]
    assert worst["ticket_id"] == spoiled and worst["grounded"] == 0 and worst["tone"] == 0
    assert "ZZ-999999" in worst["comment"]
    assert set(report["by_tag"]) == {t for c in cases for t in c.label.tags}

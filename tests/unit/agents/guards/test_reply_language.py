"""The customer's language, always: through the real SDK to the stand-in answering as a weak
model, a re-asked reply it writes in English for a Chinese customer is caught and re-asked or
replaced by a Chinese one; hand-off texts never quote the internal core problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from baton_kafka.agents.guards.language import language_of
from baton_kafka.agents.models.claude import AnthropicLLM
from baton_kafka.agents.strategy import holding_reply
from baton_kafka.agents.testing.standin import WEAK, StandIn
from baton_kafka.agents.testing.standin.messages import Request, echo_responder
from baton_kafka.schemas import DeadLetter, Order, OrderMatch, Reply, Ticket, Understanding
from baton_kafka.streams.kafka.topics import TopicNames
from baton_kafka.streams.settings import Settings
from baton_kafka.streams.testing import MemorySink, TestPipeline
from tests.fixtures.paths import TEST_DATA
from tests.fixtures.stores import sqlite_store

ORDERS = [
    Order.model_validate(json.loads(line))
    for line in (TEST_DATA / "guard_orders.jsonl").read_text("utf-8").splitlines()
    if line.strip()
]
NAMES = [o.product_name for o in ORDERS]


async def _answer(
    tmp: Path, text: str, customer: str, reask_limit: int = 1
) -> tuple[Reply, list[DeadLetter], dict[str, int]]:
    ticket = Ticket(ticket_id="lang-1", session_id="s-lang-1", customer_id=customer, text=text)
    async with StandIn(style=WEAK) as standin, sqlite_store(tmp / "o.sqlite3", ORDERS) as store:
        # The first strategy answer is broken, so the reply is re-asked: this model then
        # copies the English example whatever the customer's language.
        standin.add_faults([{"fault": "invalid_json", "stage": "strategy", "times": 1}])
        llm = AnthropicLLM(api_key="k", base_url=standin.base_url, max_retries=0)
        sink = MemorySink()
        settings = Settings(namespace="u", session_ttl_s=3600, llm="anthropic")
        pipeline = TestPipeline(
            orders=store, settings=settings.with_(reask_limit=reask_limit), llm=llm, sink=sink
        )
        try:
            replies = await pipeline.send(ticket)
        finally:
            await llm.aclose()
        dead = [
            DeadLetter.model_validate_json(v)
            for _, v in sink.sent.get(TopicNames.of(settings).dead_letters, [])
        ]
        return replies[-1], dead, standin.stats()["by_stage"]


async def test_an_english_re_ask_to_a_chinese_customer_is_caught(tmp_path: Path) -> None:
    reply, dead, by_stage = await _answer(tmp_path, "我的美的电热水壶漏水了，想退款", "G-CHEN")
    assert by_stage["strategy"] == 2  # the broken answer, then the re-ask in English
    assert reply.language == "zh"
    assert language_of(reply.reply, NAMES) == "zh", reply.reply
    assert reply.status == "degraded"  # the rules answered from the store, in Chinese
    assert "G-3002" in reply.reply
    assert any("language" in d.error and "中文" in d.error for d in dead), [d.error for d in dead]


async def test_the_re_ask_says_in_chinese_what_is_wrong(tmp_path: Path) -> None:
    seen: list[Request] = []

    def responder(request: Request) -> Any:
        seen.append(request)
        return echo_responder(request)

    ticket = Ticket(
        ticket_id="lang-2",
        session_id="s-lang-2",
        customer_id="G-CHEN",
        text="我的美的电热水壶漏水了，想退款",
    )
    async with (
        StandIn(style=WEAK, responder=responder) as standin,
        sqlite_store(tmp_path / "o.sqlite3", ORDERS) as store,
    ):
        standin.add_faults([{"fault": "invalid_json", "stage": "strategy", "times": 1}])
        llm = AnthropicLLM(api_key="k", base_url=standin.base_url, max_retries=0)
        settings = Settings(namespace="u", session_ttl_s=3600, llm="anthropic", reask_limit=2)
        pipeline = TestPipeline(orders=store, settings=settings, llm=llm)
        try:
            reply = (await pipeline.send(ticket))[-1]
        finally:
            await llm.aclose()
    strategy = [r.text for r in seen if r.stage == "strategy"]
    # The broken answer never reached the responder; the English reply of the first re-ask is
    # rejected in Chinese, with a Chinese example.
    assert len(strategy) == 2
    assert "回复是英语的，但客户用中文写信" in strategy[1]
    assert "例如：「您好，关于您的订单 G-3002" in strategy[1]
    assert language_of(reply.reply, NAMES) == "zh"


# The understanding's core problem in each shipped language, as the offline rules write it: an
# internal summary about the customer, for the shop's people.
SUMMARY = {
    "en": "Customer needs help with their kettle and it is leaking.",
    "zh": "客户需要电热水壶方面的帮助，漏水了。",
    "ja": "お客様は電気ケトルについてサポートを求めており、水が漏れています。",
    "de": "Der Kunde braucht Hilfe zu: Wasserkocher; er ist undicht.",
    "es": "El cliente necesita ayuda con: hervidor; pierde agua.",
    "fr": "Le client a besoin d'aide pour : bouilloire ; elle fuit.",
}


@pytest.mark.parametrize("lang", sorted(SUMMARY))
def test_a_hand_off_text_never_holds_the_internal_summary(lang: str) -> None:
    u = Understanding(
        product="Midea Electric Kettle 1.7L",
        problem="leaking",
        demand="refund",
        time_hint=None,
        keywords=[],
        language=lang,
        core_problem=SUMMARY[lang],
        refers_to_earlier=False,
    )
    order = next(o for o in ORDERS if o.order_id == "G-3002")
    match = OrderMatch(
        order_id="G-3002", order=order, method="deterministic", confidence=0.9, reason="x"
    )
    held = holding_reply(u, match, ("en", lang)).reply
    assert SUMMARY[lang] not in held and "G-3002" in held
    # The order's product as the store names it says what the request is about.
    assert order.product_name in held
    # Not a fragment of it either: the summary's first words never reach the customer.
    assert SUMMARY[lang][:6] not in held
    assert language_of(held, [order.product_name], tuple(SUMMARY)) == lang


def test_the_fallback_speaks_the_understanding_language_not_the_quoted_names() -> None:
    from baton_kafka.schemas import Baton, StageRecord
    from baton_kafka.streams.runtime.answers.replies import could_not_process, fallback

    ticket = Ticket(
        ticket_id="f1", session_id="s-f1", customer_id="G-CHEN",
        text="My 美的电热水壶 1.7L is leaking, what now?",
    )  # fmt: skip
    u = Understanding(
        product="美的电热水壶 1.7L", problem="leaking", demand="other", time_hint=None,
        keywords=["leaking"], language="en", core_problem="The kettle leaks.",
        refers_to_earlier=False,
    )  # fmt: skip
    baton = Baton(session_id="s-f1")
    english = fallback(StageRecord(ticket=ticket, understanding=u), baton, "strategy", "x", llm="t")
    assert english.reply == could_not_process("en") and english.language == "en"
    # Before the understanding, the text is read without its quoted names: still English.
    early = fallback(StageRecord(ticket=ticket), baton, "understand", "x", llm="t")
    assert early.reply == could_not_process("en")
    chinese = ticket.model_copy(update={"text": "我的水壶漏水了"})
    assert fallback(StageRecord(ticket=chinese), baton, "understand", "x", llm="t").language == "zh"

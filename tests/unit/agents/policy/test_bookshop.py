"""The bookshop example: its help articles reach the strategy's prompt through the whole chain
(the Messages-API stand-in over HTTP records each request), and its version is on the reply."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from baton_kafka.agents.policy import load as load_policy
from baton_kafka.agents.testing import Request, Responder, StandIn
from baton_kafka.agents.testing.standin import echo_responder
from baton_kafka.streams.runtime.worker import build_llm
from baton_kafka.streams.settings import load
from baton_kafka.streams.testing import MemoryOrders, TestPipeline
from tests.fixtures.data import order, ticket
from tests.fixtures.models import standin_env
from tests.fixtures.paths import ROOT

SHOP = ROOT / "examples" / "shops" / "bookshop"
BOOK = order(
    "LL-100200",
    product_name="Der Zauberberg",
    amount=24.0,
    currency="EUR",
    delivered_at=datetime(2026, 11, 20, 12, tzinfo=UTC),
)


@pytest.fixture
def requests() -> list[Request]:
    return []


@pytest.fixture
def responder(requests: list[Request]) -> Responder:
    def respond(request: Request) -> Any:
        requests.append(request)
        return echo_responder(request)

    return respond


@pytest.mark.parametrize(
    ("text", "title"),
    [
        (
            "Mein Buch LL-100200 kam an, aber im Zauberberg fehlen die Seiten 40 bis 56. Was nun?",
            "Beschädigtes oder fehlerhaftes Buch erhalten",
        ),
        (
            "My order LL-100200 arrived, but pages 40 to 56 of the book are missing "
            "(a misprint?). What now?",
            "Received a damaged or misprinted book",
        ),
    ],
)
async def test_the_fitting_article_reaches_the_strategy_prompt(
    own_standin: StandIn, requests: list[Request], text: str, title: str
) -> None:
    settings = load(standin_env(own_standin.base_url, BATON_POLICY=str(SHOP / "policy.toml")))
    pipeline = TestPipeline(orders=MemoryOrders(BOOK), settings=settings, llm=build_llm(settings))
    [reply] = await pipeline.send(ticket("t1", text))
    await pipeline.aclose()
    # The first strategy request (a re-ask, if any, shows the same facts).
    strategy, *_ = [r for r in requests if r.stage == "strategy"]
    assert strategy.facts is not None
    titles = [a.title for a in strategy.facts.articles]
    assert titles and titles[0] == title, titles
    assert title in strategy.text
    # Labelled as the shop's, not the customer's; the voucher article does not fit a misprint.
    assert "articles" not in strategy.facts.from_customer
    assert not any("oucher" in t or "Gutschein" in t for t in titles)
    # The reply names the policy version the articles' index joined.
    assert reply.policy_version == load_policy(SHOP / "policy.toml").version


@pytest.mark.parametrize(
    ("text", "turnaround", "sent_back"),
    [
        (
            "In meinem Zauberberg LL-100200 fehlen die Seiten 40 bis 56. Bitte schicken Sie mir "
            "ein neues Exemplar.",
            "innerhalb von 2 Werktagen",
            "zurück",
        ),
        (
            "Pages 40 to 56 are missing from my book LL-100200. Please send me a replacement.",
            "within 2 business days",
            "send it back",
        ),
    ],
)
async def test_the_offline_replacement_reads_once_and_the_damaged_book_stays(
    text: str, turnaround: str, sent_back: str
) -> None:
    settings = load({"BATON_POLICY": str(SHOP / "policy.toml")})
    pipeline = TestPipeline(orders=MemoryOrders(BOOK), settings=settings)
    [reply] = await pipeline.send(ticket("t1", text))
    await pipeline.aclose()
    assert reply.offer is not None and [x.kind for x in reply.offer.lines] == ["exchange"]
    # The policy's turnaround is the sentence's time, said once.
    assert reply.reply.count(turnaround) == 1, reply.reply
    assert "Ersatzes innerhalb" not in reply.reply and "the replacement ships" not in reply.reply
    # The exchange line carries no item_back condition: nothing asks for the book back.
    assert sent_back not in reply.reply, reply.reply

"""A reply's facts must be citable: the corpus of natural and hostile replies in every shipped
language (``tests/data/facts_corpus.jsonl``, and the blind part written after the check), and
the check's place in the strategy stage's validators."""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from pydantic import BaseModel

from baton_kafka.agents.articles import parse
from baton_kafka.agents.guards.books import CustomerOrders
from baton_kafka.agents.guards.cited import UNCITED, problems, uncited
from baton_kafka.agents.guards.facts import stated
from baton_kafka.agents.policy import Policy, load
from baton_kafka.agents.testing import Request, Responder, StandIn
from baton_kafka.agents.testing.standin import echo_responder
from baton_kafka.schemas.records import DeadLetter, Order, Reply
from baton_kafka.schemas.stages import StrategyDraft
from baton_kafka.streams.runtime.worker import build_llm
from baton_kafka.streams.settings import load as load_settings
from baton_kafka.streams.testing import MemoryOrders, TestPipeline
from tests.fixtures.data import order, ticket
from tests.fixtures.models import standin_env
from tests.fixtures.paths import ROOT

DATA = ROOT / "tests" / "data"
SHOPS = {
    "demo": None,
    "alpine": ROOT / "examples" / "shops" / "alpine" / "policy.toml",
    "bookshop": ROOT / "examples" / "shops" / "bookshop" / "policy.toml",
}
ARTICLES = ROOT / "examples" / "shops" / "bookshop" / "articles"


@functools.cache
def policy(shop: str) -> Policy:
    return load(SHOPS[shop])


@functools.cache
def orders() -> dict[str, Order]:
    lines = (DATA / "facts_orders.jsonl").read_bytes().splitlines()
    found = (Order.model_validate_json(line) for line in lines if line.strip())
    return {o.order_id: o for o in found}


def article(name: str) -> str:
    a = parse(name, (ARTICLES / name).read_bytes())
    return f"{a.title}\n{a.text}"


def corpus(name: str) -> list[dict[str, Any]]:
    lines = (DATA / name).read_bytes().splitlines()
    return [orjson.loads(line) for line in lines if line.strip()]


def books_for(case: dict[str, Any]) -> CustomerOrders:
    order = orders().get(case["order"]) if case["order"] else None
    own = [o for o in orders().values() if order and o.customer_id == order.customer_id]
    return CustomerOrders(
        matched=order, orders=own, policy=policy(case["shop"]), message=case["message"]
    )


def verdict(case: dict[str, Any]) -> str:
    found = uncited(case["reply"], books_for(case), [article(a) for a in case["articles"]])
    return "reject" if found else "pass"


MAIN = corpus("facts_corpus.jsonl")


@pytest.mark.parametrize("case", MAIN, ids=[c["id"] for c in MAIN])
def test_the_corpus_is_judged_as_labelled(case: dict[str, Any]) -> None:
    assert verdict(case) == case["expect"], case["note"]


def test_the_corpus_has_natural_and_hostile_replies_in_every_shipped_language() -> None:
    for lang in ("en", "zh", "de", "ja", "es", "fr"):
        expects = [c["expect"] for c in MAIN if c["lang"] == lang]
        assert expects.count("pass") >= 4 and expects.count("reject") >= 5, lang


# What the check reads cannot tell (docs/policy.md, "Facts a reply cites"): a figure is one
# of the same kind and unit, not of the same country or the same thing.
KNOWN_BLIND = {
    # The demo shop's refund arrives "within 3-5 business days after the item arrives": a
    # delivery figure of 3 days, so "3日でお届け" is cited by it.
    "FB-030": "ja",
    # The bookshop's delivery article says 3-5 business days to Austria: 5 days to Germany is a
    # delivery figure of the article, for another country.
    "FB-046": "fr",
    # The bookshop's policy gives a defect two years (its windows by reason): a validity of 2
    # years, so a voucher "2 Jahre gültig" is cited by it though the voucher article says 3.
    "FB-014": "de",
}


def test_a_blind_case_is_judged_as_labelled() -> None:
    """The blind part, written after the check: every case the check gets wrong, by language,
    is one of the known limits above."""
    wrong = {}
    for case in corpus("facts_blind_corpus.jsonl"):
        if verdict(case) != case["expect"]:
            wrong[case["id"]] = case["lang"]
    assert wrong == KNOWN_BLIND


def test_a_reason_names_the_fact_and_what_to_do() -> None:
    books = CustomerOrders(matched=orders()["400918270"], policy=policy("alpine"))
    (reason,) = problems("The jacket has a 5-year warranty.", books)
    assert reason.startswith(UNCITED)
    assert "'5-year'" in reason and "warranty" in reason and "leave it out" in reason


def test_a_fact_is_read_with_its_kind_unit_and_figures() -> None:
    (delivery,) = stated("Die Lieferung dauert 3–5 Werktage.")
    assert (delivery.kinds, delivery.unit, delivery.values) == (
        frozenset({"delivery"}),
        "day",
        (3.0, 5.0),
    )
    (warranty,) = stated("保修期为两年。")
    assert (warranty.kinds, warranty.values) == (frozenset({"validity"}), (730.0,))
    (date,) = stated("Votre colis sera livré le 12 décembre.")
    assert (date.unit, date.values) == ("date", (1212.0,))
    # A figure no word marks as one of the kinds is no fact the shop is liable for.
    assert [f for f in stated("We have 3 copies left and 2 reviews.") if f.kinds] == []


def test_an_article_not_shown_for_the_ticket_cites_nothing() -> None:
    books = CustomerOrders(policy=policy("bookshop"))
    reply = "Delivery within Germany takes 1–3 business days."
    assert uncited(reply, books, [article("delivery-times.md")]) == []
    assert uncited(reply, books, [article("vouchers.md")]) != []


# --- the check in the strategy stage, through the Messages-API stand-in ---------------------


def _strategy_saying(reply_text: str, requests: list[Request]) -> Responder:
    """The stand-in answering every stage by the rules, except that the strategy's reply is
    ``reply_text`` (its offer and solution as the rules wrote them)."""

    def respond(request: Request) -> Any:
        requests.append(request)
        answer = echo_responder(request)
        if request.stage != "strategy":
            return answer
        draft = StrategyDraft.model_validate(
            answer.model_dump() if isinstance(answer, BaseModel) else answer
        )
        return draft.model_copy(update={"reply": reply_text, "offer": [], "needs_human": False})

    return respond


BOOK = order(
    "LL-100200",
    product_name="Der Zauberberg",
    amount=24.0,
    currency="EUR",
    delivered_at=datetime(2026, 11, 20, 12, tzinfo=UTC),
)
QUESTION = "Wie lange dauert die Lieferung meiner Bestellung LL-100200 nach Österreich?"


async def _answer(reply_text: str) -> tuple[Reply, list[DeadLetter], list[Request]]:
    requests: list[Request] = []
    async with StandIn(
        responder=_strategy_saying(reply_text, requests), retry_after=0.01
    ) as standin:
        settings = load_settings(
            standin_env(standin.base_url, BATON_POLICY=str(SHOPS["bookshop"]), BATON_READER="off")
        )
        pipeline = TestPipeline(
            orders=MemoryOrders(BOOK), settings=settings, llm=build_llm(settings)
        )
        try:
            [reply] = await pipeline.send(ticket("t1", QUESTION))
            dead = pipeline.dead_letters
        finally:
            await pipeline.aclose()
    return reply, dead, requests


async def test_an_invented_delivery_time_is_re_asked_then_handed_to_a_person() -> None:
    reply, dead, requests = await _answer(
        "Ihr Buch Der Zauberberg (Bestellung LL-100200) ist unterwegs. Die Lieferung nach "
        "Österreich dauert 2 Werktage."
    )
    strategy = [r for r in requests if r.stage == "strategy"]
    assert len(strategy) == 2, "one re-ask with the reason"
    assert UNCITED in strategy[1].text and "2 Werktage" in strategy[1].text
    assert reply.status == "handoff"
    assert "2 Werktage" not in reply.reply
    [letter] = [d for d in dead if d.stage == "strategy"]
    assert UNCITED in letter.error and "'2 Werktage'" in letter.error


async def test_a_delivery_time_from_the_article_shown_is_answered() -> None:
    reply, dead, requests = await _answer(
        "Ihr Buch Der Zauberberg (Bestellung LL-100200) ist unterwegs. Die Lieferung nach "
        "Österreich dauert laut unserem Artikel „Lieferzeiten und Versandkosten“ 3–5 Werktage."
    )
    assert [r.stage for r in requests].count("strategy") == 1
    assert reply.status == "answered", [d.error for d in dead]
    assert "3–5 Werktage" in reply.reply


# --- the eval's grounding and the stand-in judge ----------------------------------------------


def test_the_stand_in_judge_grades_an_uncited_fact_as_not_grounded() -> None:
    from baton_kafka.agents.testing.standin.judge import judge_block, judge_responder
    from baton_kafka.streams.eval.judge import judge_context
    from baton_kafka.streams.eval.score import Case, Label

    jacket = orders()["400918270"]
    case = Case(
        ticket=ticket("j1", "Is there a warranty on my jacket?"),
        label=Label(phase=1, product=jacket.product_name, problem=[], demand="information",
                    order_id=jacket.order_id),
    )  # fmt: skip

    def graded(text: str) -> dict[str, Any]:
        reply = Reply(
            ticket_id="j1", session_id="j1", customer_id="C1", status="answered", reply=text,
            solution="", internal_note="", confidence=0.9, order_id=jacket.order_id,
        )  # fmt: skip
        data = judge_block(judge_context(case, reply, jacket, [jacket]))
        assert data is not None
        return judge_responder(data, policy("alpine"))

    cited_reply = "Hello, your Summit Down Jacket is covered by our 2-year warranty."
    invented = "Hello, your Summit Down Jacket is covered by our 5-year warranty."
    assert graded(cited_reply)["grounded"] == 2
    verdict = graded(invented)
    assert verdict["grounded"] == 0 and "'5-year'" in verdict["comment"]


def test_the_eval_reports_grounding_per_ticket_and_by_language() -> None:
    from baton_kafka.streams.eval.grounding import grounding, render_grounding
    from baton_kafka.streams.eval.score import Case, Label

    book = orders()["LL-100234"]
    cases, replies = [], {}
    for tid, text in (
        ("g1", "Die Lieferung nach Österreich dauert 3–5 Werktage."),
        ("g2", "Die Lieferung nach Österreich dauert 2 Werktage, der Versand kostet 5,90 EUR."),
        ("g3", "Danke für Ihre Nachricht."),
    ):
        t = ticket(tid, "Wie lange dauert die Lieferung nach Wien?", customer=book.customer_id)
        cases.append(Case(ticket=t, label=Label(phase=1, product=None, problem=[],
                                                demand="information", order_id=None)))  # fmt: skip
        replies[tid] = Reply(
            ticket_id=tid, session_id=tid, customer_id=book.customer_id, status="answered",
            reply=text, solution="", internal_note="", confidence=0.9, order_id=None,
        )  # fmt: skip
    shown = [parse("lieferzeiten.md", (ARTICLES / "lieferzeiten.md").read_bytes())]
    section = grounding(
        cases, replies, [book], policy("bookshop"), dict.fromkeys(replies, "de"), lambda c: shown
    )
    rows = section["tickets"]
    assert (rows["g1"]["score"], rows["g1"]["uncited"]) == (1.0, [])
    assert rows["g2"]["score"] == 0.0
    assert [u["written"] for u in rows["g2"]["uncited"]] == ["2 Werktage", "5,90 EUR"]
    assert (rows["g3"]["stated"], rows["g3"]["score"]) == (0, 1.0)
    assert section["facts_stated"] == 3 and section["facts_uncited"] == 2
    assert section["by_language"]["de"]["tickets_with_uncited"] == 1
    text = "\n".join(render_grounding(section, lambda r: f"{100 * (r or 0):.1f}%"))
    assert "uncited g2: a delivery time ('2 Werktage')" in text


async def test_a_shipping_cost_from_the_article_shown_may_be_quoted() -> None:
    reply, dead, _ = await _answer(
        "Ihr Buch Der Zauberberg (Bestellung LL-100200) ist unterwegs. Nach Österreich dauert "
        "die Lieferung 3–5 Werktage; innerhalb Deutschlands ist der Versand ab 25 EUR "
        "kostenlos, darunter kostet er 3,50 EUR."
    )
    assert reply.status == "answered", [d.error for d in dead]
    assert "3,50 EUR" in reply.reply

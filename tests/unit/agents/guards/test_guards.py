"""The reply auditor and the drift check: table-driven corpora, and the readers under them."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from baton_kafka.agents import prompts
from baton_kafka.agents.guards import (
    CustomerOrders,
    audit,
    drift_problems,
    identifiers,
    money,
    product_names,
)
from baton_kafka.agents.policy import Policy, default_policy, load
from baton_kafka.agents.rules.reply import strategy_rules
from baton_kafka.schemas import Baton, Order, OrderMatch, StrategyDraft, Ticket, Understanding
from tests.fixtures.data import corpus_draft
from tests.fixtures.guard_corpus import GUARD_ORDERS
from tests.fixtures.paths import ROOT, TEST_DATA, data_rows

ORDERS = GUARD_ORDERS
POLICY = data_rows("policy_corpus.jsonl")
# Written after the audit, without reading it: its first run is the blind measure (docs/policy.md).
BLIND = data_rows("policy_blind_corpus.jsonl")
# A second blind part, written after the audit read product numbers, channels and phone numbers.
BLIND2 = data_rows("policy_blind2_corpus.jsonl")
DRIFT = data_rows("drift_corpus.jsonl")


def _policy(case: dict[str, Any]) -> Policy:
    return load(ROOT / case["policy"]) if case.get("policy") else default_policy()


def _own(case: dict[str, Any]) -> list[Order]:
    return [o for o in ORDERS.values() if o.customer_id == case["customer"]]


def _books(case: dict[str, Any]) -> CustomerOrders:
    return CustomerOrders(
        matched=ORDERS[case["matched"]] if case["matched"] else None,
        orders=_own(case),
        discussed=frozenset(case["discussed"]),
        message=case["message"],
        known_ids=frozenset({case["ticket_id"], case["session_id"], case["customer"]}),
        policy=_policy(case),
        demand=case.get("demand", "other"),
        today=date.fromisoformat(case.get("today", "2026-11-30")),
        already={"earlier": case["already"]} if case.get("already") else {},
    )


def _drift(case: dict[str, Any]) -> list[str]:
    order = ORDERS[case["matched"]] if case["matched"] else None
    u = Understanding(
        product=case["understanding_product"],
        problem="p",
        demand="other",
        time_hint=None,
        keywords=[],
        language=case["language"],
        core_problem="c",
        refers_to_earlier=False,
    )
    baton = Baton(
        session_id="S",
        customer_id=case["customer"],
        product=case["baton_product"],
        products_mentioned=case["products_mentioned"],
    )
    names = product_names(order, u, baton, case["message"])
    return drift_problems(corpus_draft(case), names, order.order_id if order else None)


def test_the_corpora_are_large_mixed_and_about_the_customers_own_orders() -> None:
    assert len(POLICY) + len(BLIND) >= 150 and len(BLIND) * 3 >= len(POLICY) + len(BLIND) - 114
    assert len(BLIND2) >= 30
    assert sum(c["expect"] == "pass" for c in DRIFT) >= 30
    for corpus in (POLICY, BLIND, BLIND2, DRIFT):
        kinds = {(c["language"], c["expect"]) for c in corpus}
        assert kinds == {(lang, e) for lang in ("en", "zh") for e in ("pass", "reject")}
        assert len({c["id"] for c in corpus}) == len(corpus)
        for c in corpus:
            own = {o.order_id for o in _own(c)}
            assert {c["matched"], *c.get("discussed", [])} - {None} <= own, c["id"]
    assert all(c.get("reason") for c in POLICY + BLIND + BLIND2 if c["expect"] == "reject")


@pytest.mark.parametrize(
    "case", POLICY + BLIND + BLIND2, ids=[c["id"] for c in POLICY + BLIND + BLIND2]
)
def test_policy_corpus_no_false_accepts_or_rejects(case: dict[str, Any]) -> None:
    problems = audit(corpus_draft(case), _books(case))
    if case["expect"] == "pass":
        assert problems == [], case["note"]
    else:
        assert any(case["reason"] in p for p in problems), (case["note"], problems)


@pytest.mark.parametrize("case", DRIFT, ids=[c["id"] for c in DRIFT])
def test_drift_corpus_no_false_accepts_or_rejects(case: dict[str, Any]) -> None:
    problems = _drift(case)
    assert bool(problems) == (case["expect"] == "reject"), (case["note"], problems)


@pytest.mark.parametrize(
    ("text", "amounts"),
    [
        ("补偿您80元", [80]),
        ("we refund 1,299.00 USD or 1 299 USD", [1299, 1299]),
        ("erstatten 1.299,00 € und 59,00 €", [1299, 59]),
        ("￥1999, HK$2,000, US$50, £20, RMB2000, 500USD, 300块钱, 人民币500元", None),
        ("we'll refund fifty dollars, one hundred and twenty, a hundred bucks", [50, 120, 100]),
        ("补偿五十元，退一百二十块，赔两百元，一千五百元", [50, 120, 200, 1500]),
        ("a 20 voucher, 100 in store credit, a 60 gift card, a coupon for 45", [20, 100, 60, 45]),
        ("赠送5000积分，300购物金，一个50元红包，价值500的礼品卡", [5000, 300, 50, 500]),
        ("a $5k refund, 1.5万元赔偿", [5000, 15000]),
    ],
)
def test_money_is_read_however_it_is_written(text: str, amounts: list[float] | None) -> None:
    found = [m.value for m in money(text, [])]
    expected = amounts if amounts is not None else [1999, 2000, 50, 20, 2000, 500, 300, 500]
    assert found == [float(a) for a in expected]


@pytest.mark.parametrize(
    "text",
    [
        "We refund within 5-7 business days, 3-5个工作日内退款, 24小时内, within 48 hours.",
        "Refund for 2 pairs; the 32 oz bottle; size 44; 两双鞋; 2件.",
        "Refunded on 2026-11-30, by November 30, 2026, 11月30日, 2026年11月30日退款.",
        "十分抱歉，退款会尽快到账；千万不要使用。",
        "Refund of your 4K monitor, 1.7L kettle, WH-1000XM6, 30-day window, 2-year warranty.",
        "1. Unplug it.\n2. Pack it.\n3. We refund you.",
        "Refund to the credit card ending 1234, support 24/7, iOS 26.1.",
    ],
)
def test_durations_quantities_dates_and_names_are_not_money(text: str) -> None:
    assert money(text, []) == []


def test_ids_and_tracking_numbers_are_found_by_shape_and_by_the_words_before_them() -> None:
    text = (
        "Order G-1001, order #88231, 订单号G-3002, tracking 1Z99F1230398765432, "
        "运单号SF1482736455021, waybill 772899123456, the Oster OL-3303, on 2026-11-30."
    )
    found = [(i.kind, i.value) for i in identifiers(text)]
    assert found == [
        ("order id", "G-1001"),
        ("order id", "88231"),
        ("order id", "G-3002"),
        ("tracking number", "1Z99F1230398765432"),
        ("tracking number", "SF1482736455021"),
        ("tracking number", "772899123456"),
        ("order id", "OL-3303"),
    ]


def test_the_error_says_what_is_wrong_and_what_to_do() -> None:
    case = next(c for c in POLICY if c["id"] == "r-en-14")
    greedy = corpus_draft(case).model_copy(
        update={"reply": case["reply"] + " We add 80 USD credit."}
    )
    assert audit(greedy, _books(case)) == [
        "reply: promises 80 USD, which is not a line of the offer; state only the offer's amounts",
        "internal_note: order id G-9001 is not one of this customer's orders, do not name it",
    ]


def _rule_drafts() -> list[tuple[Order, list[Order], StrategyDraft, list[str]]]:
    """The offline rules' reply for every demo and eval order, demand and language."""
    orders: list[Order] = []
    for path in (TEST_DATA / "eval_orders.jsonl", ROOT / "streams/demo_data/orders.jsonl"):
        lines = path.read_text("utf-8").splitlines()
        orders += [Order.model_validate_json(line) for line in lines if line.strip()]
    drafts = []
    for o in orders:
        own = [x for x in orders if x.customer_id == o.customer_id]
        for language, problem in (("en", "stopped working after 3 days"), ("zh", "用了3天就坏了")):
            for demand in ("refund", "exchange", "repair", "compensation", "cancel", "information"):
                text = f"{o.product_name} {problem}"
                t = Ticket(ticket_id="T-1", session_id="S-1", customer_id=o.customer_id, text=text)
                baton = Baton(session_id="S-1", customer_id=o.customer_id)
                u = Understanding(
                    product=o.product_name,
                    problem=problem,
                    demand=demand,  # type: ignore[arg-type]
                    time_hint=None,
                    keywords=[],
                    language=language,  # type: ignore[arg-type]
                    core_problem=f"{o.product_name}: {problem}",
                    refers_to_earlier=False,
                )
                match = OrderMatch(
                    order_id=o.order_id, order=o, method="deterministic", confidence=1, reason="r"
                )
                prompt = prompts.build(
                    "strategy",
                    StrategyDraft,
                    ticket=t,
                    baton=baton,
                    orders=[o],
                    understanding=u,
                    match=match,
                )
                books = CustomerOrders.of(o, own, baton, t, demand=demand)
                names = product_names(o, u, baton, text)
                draft = strategy_rules(prompt.facts)
                problems = audit(draft, books) + drift_problems(draft, names, o.order_id)
                drafts.append((o, own, draft, problems))
    return drafts


def test_the_rule_based_replies_pass_the_guards() -> None:
    # The offline model and every strategy fallback write these: the guards must not re-ask them.
    drafts = _rule_drafts()
    assert len(drafts) > 500
    assert [(o.order_id, problems) for o, _, _, problems in drafts if problems] == []

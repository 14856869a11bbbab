"""Order facts from the store: a corpus of natural replies that must pass, near-misses that are
corrected without a re-ask, and hostile ones that stay rejected."""

from __future__ import annotations

from typing import Any

import pytest

from baton_kafka.agents.guards import CustomerOrders, audit, drift_problems
from baton_kafka.agents.guards.order_facts import CORRECTED, corrected, fact_problems, facts_line
from baton_kafka.agents.instructions import EXAMPLE_ORDER_IDS
from baton_kafka.schemas import StrategyDraft
from tests.fixtures.guard_corpus import GUARD_ORDERS
from tests.fixtures.paths import data_rows

ORDERS = GUARD_ORDERS
CORPUS = data_rows("order_facts_corpus.jsonl")


def _books(case: dict[str, Any]) -> CustomerOrders:
    own = [o for o in ORDERS.values() if o.customer_id == case["customer"]]
    return CustomerOrders(matched=ORDERS[case["matched"]], orders=own, known_ids=frozenset())


def _draft(reply: str) -> StrategyDraft:
    return StrategyDraft(
        solution="Handle the request as the policy says.",
        reply=reply,
        internal_note="Session core problems as stated.",
        confidence=0.9,
        needs_human=False,
    )


def _problems(draft: StrategyDraft, case: dict[str, Any], books: CustomerOrders) -> list[str]:
    matched = ORDERS[case["matched"]]
    return [
        *drift_problems(draft, [matched.product_name], matched.order_id),
        *audit(draft, books),
        *fact_problems(draft, books),
    ]


def _verdict(case: dict[str, Any]) -> tuple[str, StrategyDraft, list[str]]:
    books = _books(case)
    names = [ORDERS[case["matched"]].product_name]
    draft, fixes = corrected(_draft(case["reply"]), books, case["language"], names)
    problems = _problems(draft, case, books)
    if problems:
        return "reject", draft, problems
    return ("fix" if fixes else "pass"), draft, problems


def test_the_corpus_has_natural_and_hostile_replies_in_both_languages() -> None:
    kinds = {(c["language"], c["expect"]) for c in CORPUS}
    assert kinds == {(lang, e) for lang in ("en", "zh") for e in ("pass", "fix", "reject")}


@pytest.mark.parametrize("case", CORPUS, ids=[c["id"] for c in CORPUS])
def test_order_facts_corpus_no_false_accepts_or_rejects(case: dict[str, Any]) -> None:
    verdict, draft, problems = _verdict(case)
    assert verdict == case["expect"], problems
    if case["expect"] == "fix":
        assert draft.reply == case["fixed"]


def test_a_correction_is_noted_for_colleagues_without_the_wrong_id() -> None:
    case = next(c for c in CORPUS if c["id"] == "f-en-fix-2")
    draft, fixes = corrected(_draft(case["reply"]), _books(case), "en")
    assert [(f.written, f.stored) for f in fixes] == [("O-1001", "G-1001")]
    assert CORRECTED in draft.internal_note and "O-1001" not in draft.internal_note


def test_a_copied_example_id_is_the_matched_orders_and_never_another() -> None:
    books = _books({"customer": "G-ANA", "matched": "G-1003"})
    draft, fixes = corrected(_draft("Your blender, order O-1001, is on its way."), books, "en")
    assert [(f.written, f.stored) for f in fixes] == [("O-1001", "G-1003")]
    assert "O-1001" not in draft.internal_note and CORRECTED in draft.internal_note
    # Every language's example id, whichever the shop's prompt shows.
    for example in EXAMPLE_ORDER_IDS:
        copied, _ = corrected(_draft(f"Your blender, order {example}, ships."), books, "en")
        assert copied.reply == "Your blender, order G-1003, ships.", example
    # A near-miss of the customer's other order is not the matched one: left for the re-ask.
    other = _draft("Your Oster OL-3303 Blender, order G-1010, is on its way.")
    assert corrected(other, books, "en") == (other, [])
    # Without a matched order an example id stands for none of the customer's orders.
    unmatched = CustomerOrders(matched=None, orders=books.orders, known_ids=frozenset())
    copied = _draft("I found your order O-1001.")
    assert corrected(copied, unmatched, "en") == (copied, [])


def test_an_ambiguous_near_miss_is_left_for_the_re_ask() -> None:
    case = next(c for c in CORPUS if c["id"] == "f-en-bad-1")
    draft, fixes = corrected(_draft(case["reply"]), _books(case), "en")
    assert fixes == [] and draft.reply == case["reply"]


def test_a_reply_off_the_topic_gets_no_rendered_id() -> None:
    draft = _draft("We will help you.")
    books = _books({"customer": "G-ANA", "matched": "G-1001"})
    assert corrected(draft, books, "en", ["Midea Electric Kettle 1.7L"]) == (draft, [])


def test_the_rendered_facts_line_speaks_the_customer_language() -> None:
    order = ORDERS["G-3003"]
    assert facts_line(order, "zh") == "订单 G-3003：华为 FreeBuds Pro 3 无线耳机，已发货。"
    assert (
        facts_line(ORDERS["G-1001"], "en") == "Order G-1001: Midea Electric Kettle 1.7L, delivered."
    )


def test_corpus_figures() -> None:
    """False accepts (a hostile reply passing) and false rejects (a natural one refused): 0."""
    wrong = [c["id"] for c in CORPUS if _verdict(c)[0] != c["expect"]]
    assert wrong == []

"""The language check: a corpus of natural replies in zh and en that quote names of the other
language, and hostile ones in the wrong language."""

from __future__ import annotations

from typing import Any

import pytest

from baton_kafka.agents.guards.language import feedback_note, language_of, language_problem
from tests.fixtures.paths import data_rows

ORDERS = data_rows("guard_orders.jsonl")
CORPUS = data_rows("language_corpus.jsonl")


def _names(customer: str) -> list[str]:
    own = [o for o in ORDERS if o["customer_id"] == customer]
    return [n for o in own for n in (o["product_name"], o["carrier"]) if n]


def _verdict(case: dict[str, Any]) -> str:
    found = language_problem(case["text"], case["language"], _names(case["customer"]))
    return "reject" if found else "pass"


def test_the_corpus_has_natural_and_hostile_texts_in_both_languages() -> None:
    kinds = {(c["language"], c["expect"]) for c in CORPUS}
    assert kinds == {(lang, e) for lang in ("en", "zh") for e in ("pass", "reject")}


@pytest.mark.parametrize("case", CORPUS, ids=[c["id"] for c in CORPUS])
def test_language_corpus_no_false_accepts_or_rejects(case: dict[str, Any]) -> None:
    assert _verdict(case) == case["expect"]


def test_the_reason_and_the_re_ask_note_are_in_the_customer_language() -> None:
    reason = language_problem("Hello, your order has shipped.", "zh")
    assert reason is not None and "中文" in reason
    note = feedback_note("zh", "G-3002")
    assert "中文" in note and "G-3002" in note and language_of(note, ["G-3002"]) == "zh"
    assert feedback_note("en", "G-1001") is None


def test_a_text_of_names_alone_is_undecided_and_passes() -> None:
    assert language_of("G-3002 SF1482736401187") is None
    assert language_problem("美的电热水壶 1.7L", "en", ["美的电热水壶 1.7L"]) is None

"""Replies that ask which order: the candidates' product names (digits and all) may be named
in every shipped language; an amount beside them is still money and still refused."""

from __future__ import annotations

from typing import Any

import pytest

from baton_kafka.agents.guards import CustomerOrders
from baton_kafka.schemas import Order
from tests.fixtures.guard_corpus import check_corpus_case
from tests.fixtures.paths import data_rows

ORDERS = {o["order_id"]: Order.model_validate(o) for o in data_rows("guard_orders.jsonl")}
CORPUS = data_rows("choices_corpus.jsonl")
# Written after the code, without running it first: its first run is the blind measure.
BLIND = data_rows("choices_blind_corpus.jsonl")
SHIPPED = ("en", "de", "es", "fr", "zh", "ja")


@pytest.mark.parametrize("case", CORPUS, ids=[c["id"] for c in CORPUS])
def test_choices_corpus_no_false_accepts_or_rejects(case: dict[str, Any]) -> None:
    check_corpus_case(case, ORDERS)


@pytest.mark.parametrize("case", BLIND, ids=[c["id"] for c in BLIND])
def test_choices_blind_corpus_no_false_accepts_or_rejects(case: dict[str, Any]) -> None:
    check_corpus_case(case, ORDERS)


def test_the_corpora_ask_between_orders_in_every_shipped_language() -> None:
    for corpus in (CORPUS, BLIND):
        kinds = {(c["language"], c["expect"]) for c in corpus}
        assert kinds >= {(lang, e) for lang in SHIPPED for e in ("pass", "reject")}
        assert all(c["matched"] is None and len(c["choices"]) >= 2 for c in corpus)
        assert len({c["id"] for c in corpus}) == len(corpus)


def test_only_the_choices_names_are_read_as_names_and_their_prices_are_not_quotable() -> None:
    own = [o for o in ORDERS.values() if o.customer_id == "G-KAI"]
    books = CustomerOrders(orders=own, choices=frozenset({"G-8001"}))
    assert "charge 6" in books.name_phrases and 6.0 in books.name_numbers
    assert not any("venu" in p for p in books.name_phrases)  # not a choice: not exempt
    assert 159.95 not in books.prices  # a choice is named, never priced
    assert CustomerOrders(orders=own).name_phrases == {}

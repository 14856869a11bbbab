"""The customer's product names with their digits, in every shipped language: a reply asking
which order names the candidates, a reply about one order names another the customer wrote
of; an amount beside them is still money and still refused."""

from __future__ import annotations

from typing import Any

import pytest

from baton_kafka.agents.guards import CustomerOrders
from tests.fixtures.guard_corpus import GUARD_ORDERS, assert_covers, check_corpus_case
from tests.fixtures.paths import data_rows

ORDERS = GUARD_ORDERS
CORPUS = data_rows("choices_corpus.jsonl")
MENTIONED = data_rows("mentioned_corpus.jsonl")
# Written after the code, without running it first: their first run is the blind measure.
BLIND = data_rows("choices_blind_corpus.jsonl")
MENTIONED_BLIND = data_rows("mentioned_blind_corpus.jsonl")
SHIPPED = ("en", "de", "es", "fr", "zh", "ja")
CASES = [c for corpus in (CORPUS, BLIND, MENTIONED, MENTIONED_BLIND) for c in corpus]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_named_product_corpora_no_false_accepts_or_rejects(case: dict[str, Any]) -> None:
    check_corpus_case(case, ORDERS)


def test_the_corpora_hold_natural_and_hostile_replies_in_every_shipped_language() -> None:
    for corpus in (CORPUS, BLIND, MENTIONED, MENTIONED_BLIND):
        assert_covers(corpus, SHIPPED)
    assert len({c["id"] for c in CASES}) == len(CASES)


def test_the_choices_corpora_ask_between_orders() -> None:
    for corpus in (CORPUS, BLIND):
        assert all(c["matched"] is None and len(c["choices"]) >= 2 for c in corpus)


def test_only_the_choices_names_are_read_as_names_and_their_prices_are_not_quotable() -> None:
    own = [o for o in ORDERS.values() if o.customer_id == "G-KAI"]
    books = CustomerOrders(orders=own, choices=frozenset({"G-8001"}))
    assert "charge 6" in books.name_phrases and 6.0 in books.name_numbers
    assert not any("venu" in p for p in books.name_phrases)  # not a choice: not exempt
    assert 159.95 not in books.prices  # a choice is named, never priced
    assert CustomerOrders(orders=own).name_phrases == {}


def test_an_order_the_message_names_by_its_digits_is_named_and_another_is_not() -> None:
    own = [o for o in ORDERS.values() if o.customer_id == "G-KAI"]
    venu = ORDERS["G-8002"]
    books = CustomerOrders(matched=venu, orders=own, message="And was the Charge 6 refunded?")
    assert [o.order_id for o in books.named] == ["G-8002", "G-8001"]
    assert "versa 4" not in books.name_phrases  # the message does not name it
    wide = CustomerOrders(matched=venu, orders=own, message="Und der Ｃｈａｒｇｅ ６?")
    assert [o.order_id for o in wide.named] == ["G-8002", "G-8001"]  # read as the reply is
    charged = CustomerOrders(matched=venu, orders=own, message="I was charged 6 times!")
    assert [o.order_id for o in charged.named] == ["G-8002"]  # "charged 6" is not "charge 6"

"""The screened and reordered patterns of the guards find what the plain ones find."""

from __future__ import annotations

import random
import re

from baton_kafka.agents.guards import clauses, facts
from baton_kafka.agents.guards import language as lang

_PLAIN_TOKEN = re.compile(r"[A-Za-z0-9]*\d[A-Za-z0-9-]*")
_PLAIN_NAMED = re.compile(rf"(?<![A-Za-z])(?:{'|'.join(lang._NAMES)})(?![A-Za-z])")
_PIECES = ["a", "Z", "1", "9", "-", " ", ".", "é", "٣", "１", "UPS", "USPS", "FedEx", "OK", "DHL"]


def _texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 14))) for _ in range(count)]


def test_the_names_and_digit_tokens_left_out_are_those_of_the_plain_patterns() -> None:
    for text in _texts(20_000, 7):
        token = lang._ASCII_TOKEN_WITH_DIGIT if text.isascii() else lang._TOKEN_WITH_DIGIT
        assert token.sub(" ", text) == _PLAIN_TOKEN.sub(" ", text), text
        assert lang._NAMED.sub(" ", text) == _PLAIN_NAMED.sub(" ", text), text


def test_measures_are_the_stated_facts_but_amounts() -> None:
    texts = [
        "Kettle 1.7L",
        "Shipping costs 3.50 EUR, delivery on 12 May in 3-5 days, a 5-year warranty",
        "The price is 39.90 EUR for the 42 size, dispatched within 2 business days",
        "华为 FreeBuds Pro 3 无线耳机 价格 199 元 12月14日",
    ]
    for text in texts:
        assert facts.measures(text) == [f for f in facts.stated(text) if f.unit != "money"]


def test_a_clause_the_sieve_rules_out_holds_none_of_the_words() -> None:
    marks = clauses.marks("commitments", "en", "kinds")
    assert marks is not None and marks.any_word is not None
    for clause in ("we will refund you", "thanks for waiting", "the weather is nice", ""):
        found = marks.any_word.search(clause) is not None
        assert marks.may_hold(clause) == found

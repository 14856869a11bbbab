"""The screened, led and reordered patterns and readings of the guards find what the plain
ones find: on random pieces, on every corpus text, and on edge cases."""

from __future__ import annotations

import importlib
import random
import re

from baton_kafka.agents.guards import clauses, facts, words
from baton_kafka.agents.guards import language as lang
from baton_kafka.agents.guards.skipping import plain
from tests.unit.agents.guards.test_guard_patterns import _texts as corpus_texts

# By name: the package's re-exports (the ``money`` function) shadow these modules.
money = importlib.import_module("baton_kafka.agents.guards.money")
numerals = importlib.import_module("baton_kafka.agents.guards.numerals")

_PLAIN_TOKEN = re.compile(r"[A-Za-z0-9]*\d[A-Za-z0-9-]*")
_PLAIN_NAMED = re.compile(rf"(?<![A-Za-z])(?:{'|'.join(lang._NAMES)})(?![A-Za-z])")
_PIECES = ["a", "Z", "1", "9", "-", " ", ".", "é", "٣", "１", "UPS", "USPS", "FedEx", "OK", "DHL"]


def _random_texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 14))) for _ in range(count)]


def test_the_names_and_digit_tokens_left_out_are_those_of_the_plain_patterns() -> None:
    for text in _random_texts(20_000, 7):
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


PLAIN_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|[。！？；;\n]+")
EDGES = (
    "Refund 5.\n\n Then 6!  Then 7?\t8",
    "。。 退款；;\n\n。x . y .\u3000z",
    " \n.\n; ;\n",
    "",
)


def test_the_sentence_ends_are_those_of_the_plain_pattern() -> None:
    for text in [*EDGES, *corpus_texts()]:
        got = [m.span() for m in money._SENTENCE_END.finditer(text)]
        assert got == [m.span() for m in PLAIN_SENTENCE_END.finditer(text)], text


def test_the_clause_ends_are_those_without_the_contrast_words_lead() -> None:
    led = money._w().CLAUSE_END
    # The contrast words' lead, after the spaces before them, taken out again.
    unled = re.sub(r"\\s\+\(\?=\[[^\]]*\]\)", r"\\s+", plain(led).pattern)
    assert unled != plain(led).pattern
    bare = re.compile(unled, led.flags)
    for text in [*EDGES, "We refund 5, BUT not 6; aber  \u017fin embargo 7", *corpus_texts()]:
        assert [m.span() for m in led.finditer(text)] == [m.span() for m in bare.finditer(text)]


EVERY_WORD = re.compile(r"[A-Za-z]+")
ODD = (
    "We refund one hundred and twenty-five, a thousand and \u017fix; a One two",
    "A HUNDRED AND FIVE and then Twenty five, and and a a hundred - - three; one, two",
    "twenty\u00a0one hundred\nand five million one",
)


def test_the_groups_are_those_read_from_every_word() -> None:
    en = words.compiled(numerals._english)
    for text in [*ODD, *corpus_texts()]:
        got = [[m.span() for m in g] for g in numerals._en_groups(text, en)]
        every = [[m.span() for m in g] for g in numerals._en_groups(text, en, EVERY_WORD)]
        assert got == every, text


def test_a_word_between_two_number_words_ends_the_number() -> None:
    en = words.compiled(numerals._english)
    text = "twenty big five"
    assert [[m.group() for m in g] for g in numerals._en_groups(text, en)] == [["twenty"], ["five"]]
    assert [[m.group() for m in g] for g in numerals._en_groups(text, en, EVERY_WORD)] == [
        ["twenty"],
        ["five"],
    ]

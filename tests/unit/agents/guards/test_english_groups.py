"""English number words grouped from the words that may stand in a number: the groups made from
every word of the text."""

from __future__ import annotations

import importlib
import re

from baton_kafka.agents.guards import words
from tests.unit.agents.guards.test_guard_patterns import _texts

numerals = importlib.import_module("baton_kafka.agents.guards.numerals")

EVERY_WORD = re.compile(r"[A-Za-z]+")
ODD = (
    "We refund one hundred and twenty-five, a thousand and \u017fix; a One two",
    "A HUNDRED AND FIVE and then Twenty five, and and a a hundred - - three; one, two",
    "twenty\u00a0one hundred\nand five million one",
)


def test_the_groups_are_those_read_from_every_word() -> None:
    en = words.compiled(numerals._english)
    for text in [*ODD, *_texts()]:
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

"""English number words grouped from the words that may stand in a number: the groups made from
every word of the text."""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from typing import Any

from baton_kafka.agents.guards import words
from tests.unit.agents.guards.test_guard_patterns import _texts

numerals = importlib.import_module("baton_kafka.agents.guards.numerals")

EVERY_WORD = re.compile(r"[A-Za-z]+")
GAP = re.compile(r"[\s-]+")
ODD = (
    "We refund one hundred and twenty-five, a thousand and \u017fix; a One two",
    "A HUNDRED AND FIVE and then Twenty five, and and a a hundred - - three; one, two",
    "twenty\u00a0one hundred\nand five million one",
)


def _groups_of_every_word(text: str, en: Any) -> Iterator[list[tuple[int, int]]]:
    """``_en_groups`` as it read every word of the text."""
    value, scale, tens = en.word_value, en.scale_value, en.tens
    group: list[re.Match[str]] = []
    for m in EVERY_WORD.finditer(text):
        word = m.group().lower()
        previous = group[-1].group().lower() if group else ""
        joined = bool(group) and GAP.fullmatch(text[group[-1].end() : m.start()])
        if word in value or word in scale:
            small = value.get(word, 10) < 10
            follows = previous in (*scale, en.joiner, en.article) or (previous in tens and small)
            if joined and (follows or word in scale):
                group.append(m)
                continue
        elif word == en.joiner and joined and previous in scale:
            group.append(m)
            continue
        if group:
            yield [g.span() for g in group]
        group = [m] if word in value or word in scale or word == en.article else []
    if group:
        yield [g.span() for g in group]


def test_the_groups_are_those_read_from_every_word() -> None:
    en = words.compiled(numerals._english)
    for text in [*ODD, *_texts()]:
        got = [[m.span() for m in g] for g in numerals._en_groups(text, en)]
        assert got == list(_groups_of_every_word(text, en)), text

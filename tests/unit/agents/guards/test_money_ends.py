"""The money reading's sentence ends, led by their first character: the plain pattern's spans."""

from __future__ import annotations

import importlib
import re

from baton_kafka.agents.guards.skipping import plain
from tests.unit.agents.guards.test_guard_patterns import _texts

money = importlib.import_module("baton_kafka.agents.guards.money")

PLAIN_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|[。！？；;\n]+")
EDGES = (
    "Refund 5.\n\n Then 6!  Then 7?\t8",
    "。。 退款；;\n\n。x . y .\u3000z",
    " \n.\n; ;\n",
    "",
)


def test_the_sentence_ends_are_those_of_the_plain_pattern() -> None:
    for text in [*EDGES, *_texts()]:
        got = [m.span() for m in money._SENTENCE_END.finditer(text)]
        assert got == [m.span() for m in PLAIN_SENTENCE_END.finditer(text)], text


def test_the_clause_ends_are_those_without_the_contrast_words_lead() -> None:
    led = money._w().CLAUSE_END
    # The contrast words' lead, after the spaces before them, taken out again.
    unled = re.sub(r"\\s\+\(\?=\[[^\]]*\]\)", r"\\s+", plain(led).pattern)
    assert unled != plain(led).pattern
    bare = re.compile(unled, led.flags)
    for text in [*EDGES, "We refund 5, BUT not 6; aber  \u017fin embargo 7", *_texts()]:
        assert [m.span() for m in led.finditer(text)] == [m.span() for m in bare.finditer(text)]

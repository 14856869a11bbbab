"""Readings of texts kept across tickets: every one is known to ``forget``, which empties it."""

from __future__ import annotations

import importlib

from baton_kafka.agents import languages, risk, text_cache
from baton_kafka.agents.rules import matching, recall_clues
from baton_kafka.streams.runtime import warm

guards = {
    name: importlib.import_module(f"baton_kafka.agents.guards.{name}")
    for name in ("cited", "clauses", "money", "numbers")
}

# The readings keyed by a text that outlive a ticket (a reading kept for one ticket alone is
# the ticket memo's).
TEXT_READINGS = [
    languages._rank,
    languages._places,
    risk._read_once,
    recall_clues.clues,
    guards["clauses"].readable,
    guards["clauses"]._sentences,
    guards["money"].clauses_of,
    guards["money"].sentences,
    guards["cited"]._text_pool,
    guards["numbers"].digit_runs,
    guards["numbers"]._language,
]


def test_forget_empties_every_reading_of_a_text_kept_across_tickets() -> None:
    warm.patterns()
    text = "I paid 25,00 € for order O-1001 but the Kettle 2000 broke. Any update?"
    languages._rank(text)
    languages._places(text)
    recall_clues.clues(text, "en")
    guards["clauses"].readable(text)
    guards["clauses"]._sentences(text, None)
    guards["money"].sentences(text)
    guards["money"].clauses_of(text)
    guards["cited"]._text_pool(text)
    guards["numbers"].digit_runs(text)
    guards["numbers"]._language(text)
    risk.scan(text, "en")
    matching._units(text)
    held = [f for f in TEXT_READINGS if f.cache_info().currsize]
    assert len(held) == len(TEXT_READINGS), held
    assert matching._units.cache_info().currsize > 0
    assert text_cache.count() > len(TEXT_READINGS)
    text_cache.forget()
    assert [f for f in TEXT_READINGS if f.cache_info().currsize] == []
    assert matching._units.cache_info().currsize == 0


def test_a_reading_forgotten_reads_the_same_again() -> None:
    text = "Where is my order #1234? It was 19.99 USD."
    first = (guards["numbers"].digit_runs(text), guards["money"].sentences(text))
    text_cache.forget()
    assert (guards["numbers"].digit_runs(text), guards["money"].sentences(text)) == first

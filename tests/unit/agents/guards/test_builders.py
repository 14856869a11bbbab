"""Every pattern builder of the packs is marked, so a worker makes them all before a ticket:
an unmarked one is refused at its first use, a marked one is made by ``words.warm``."""

from __future__ import annotations

import re

import pytest

from baton_kafka.agents import packs
from baton_kafka.agents.guards import number_words, words


def test_an_unmarked_builder_is_refused() -> None:
    def unmarked() -> re.Pattern[str]:
        return re.compile("x")

    with pytest.raises(TypeError, match=r"words\.builder"):
        words.compiled(unmarked)


def test_warming_makes_every_marked_builder_and_the_readings_then_make_none() -> None:
    packs.reset()  # a shop's packs read anew: every builder is made again
    words.warm()
    made = {build: hit[1] for build, hit in words._cache.items()}
    assert set(words._builders) <= set(made)
    assert number_words._any_word in made
    number_words.spelled_numbers("zweihundertfünf Euro", "de")
    assert words.compiled(number_words._any_word) is made[number_words._any_word]

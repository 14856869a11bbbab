"""The ``recall`` packs: every shipped language has a word for every kind of clue and hint."""

from __future__ import annotations

import re

import pytest

from baton_kafka.agents import packs
from baton_kafka.agents.rules.recall_clues import DONE_KINDS, STATUS_KINDS

UNITS = {"day", "week", "month", "year", "recent"}


@pytest.mark.parametrize("language", packs.LANGUAGES)
def test_every_language_reads_every_clue_and_hint(language: str) -> None:
    pack = packs.pack("recall", language)
    for section, keys in (
        ("done", [k for k, _ in DONE_KINDS]),
        ("status", [k for k, _ in STATUS_KINDS]),
        ("refers", ["pointer", "talked", "bought"]),
    ):
        for key in keys:
            re.compile(pack[section][key])
    time = pack["time"]
    assert time["ago"] and time["hints"] and time["units"]
    assert set(time["units"].values()) <= UNITS
    assert {h["unit"] for h in time["hints"]} <= UNITS
    for rx in [*time["ago"], *(h["rx"] for h in time["hints"])]:
        re.compile(rx.replace("{count}", r"\d+"))
    for pattern in time["ago"]:
        assert "{count}" in pattern and re.compile(pattern).groups >= 2

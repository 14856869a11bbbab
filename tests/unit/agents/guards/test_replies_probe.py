"""Replies a model might write, read by every check of the strategy stage: deeds told as done
that the records show, a new unit or the same amount again promised in words, in every shipped
language (a probe written blind, before the fixes, and a blind part written after them)."""

from __future__ import annotations

from typing import Any

import pytest

from baton_kafka.agents import packs
from tests.fixtures.guard_corpus import GUARD_ORDERS, assert_covers, every_problem
from tests.fixtures.paths import data_rows

PROBE = data_rows("replies_probe_corpus.jsonl")
BLIND = data_rows("replies_probe_blind_corpus.jsonl")
# What the checks still get wrong, listed rather than hidden.
KNOWN = {
    # The customer names "mein Devolo-Set" without the digit: the reply's "Devolo Magic 2"
    # is read as promising 2 EUR beside "Erstattung".
    "ap-de-08": "false reject",
    # "vollständig erstattet, die 59,00 €": the order shows 40 of 59 refunded; a claim is
    # checked for the deed, not for the amount it states as refunded.
    "ap-de-15": "false accept",
    "rb-en-10": "false accept",  # the same: "we have already refunded €59.00", 40 refunded
}
# The blind part's one run, after the fixes, per language (false accepts of 6, false rejects
# of 6): en 1/0, de 2/1, es 0/0, fr 1/0, zh 1/0, ja 0/1. The packs learnt from it since, except
# rb-en-10 (above).


def _wrong(case: dict[str, Any]) -> str | None:
    found = every_problem(case, GUARD_ORDERS)
    if case["expect"] == "pass":
        return "false reject" if found else None
    return None if found else "false accept"


@pytest.mark.parametrize("case", PROBE + BLIND, ids=lambda c: c["id"])
def test_every_check_of_a_draft_reads_the_probe_as_expected(case: dict[str, Any]) -> None:
    assert _wrong(case) == KNOWN.get(case["id"]), case["note"]


def test_the_corpora_cover_every_shipped_language_both_ways() -> None:
    assert_covers(PROBE, packs.LANGUAGES)
    assert_covers(BLIND, packs.LANGUAGES)

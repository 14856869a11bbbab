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
}
# The blind part's one run, after the fixes, per language (false accepts of 6, false rejects
# of 6): en 1/0, de 2/1, es 0/0, fr 1/0, zh 1/0, ja 0/1. The packs learnt from it since, except
# rb-en-10 and ap-de-15 ("we have already refunded €59.00" of an order refunded 40 of 59),
# read since as the whole price told as refunded.


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


# Replies on order G-7001, which cost 59.00 EUR and of which the shop refunded 40.00 EUR.
PART_REFUNDED = data_rows("part_refunded_corpus.jsonl")


@pytest.mark.parametrize("row", PART_REFUNDED, ids=lambda r: f"{r['language']}-{r['natural']}")
def test_an_amount_told_as_refunded_is_what_the_records_show(row: dict[str, Any]) -> None:
    """A refund in part told with its amount passes; the whole price told as refunded does not."""
    language, reply = row["language"], row["reply"]
    case = {**PROBE[0], "language": language, "customer": "G-UMA", "matched": "G-7001"}
    case |= {"reply": reply, "solution": reply, "offer": [], "demand": "information"}
    case |= {"languages": [language, "en", "de"], "message": "?"}
    found = every_problem(case, GUARD_ORDERS)
    if row["natural"]:
        assert found == []
    else:
        assert any("was refunded, but the records of order G-7001" in p for p in found), found

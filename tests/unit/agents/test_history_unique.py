"""The newest distinct values of an order's history: the short cut for one value or none gives
what the plain reading gives, on every short list of a few values and any bound."""

from __future__ import annotations

import itertools

from baton_kafka.agents.history import _unique


def _plain_unique(values: list[str], keep: int) -> list[str]:
    seen = list(dict.fromkeys(reversed(values)))[:keep]
    return list(reversed(seen))


def test_the_newest_distinct_values_are_the_plain_ones() -> None:
    for size in range(5):
        for values in itertools.product(["refund", "repair", "exchange", ""], repeat=size):
            for keep in range(5):
                given = list(values)
                found = _unique(given, keep)
                assert found == _plain_unique(given, keep), (values, keep)
                assert found is not given and given == list(values)  # a new list, input kept

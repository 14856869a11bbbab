"""A mention read once and scored against many names, and a text's mentions kept per text: the
same scores and mentions as reading the mention again for every name, on the corpora and texts
generated in every shipped language."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from baton_kafka.agents.rules import matching
from baton_kafka.agents.rules.matching import (
    _coverage,
    _kinds,
    _units,
    find_product,
    mentioned_products,
    normalize,
    order_score,
    product_score,
)
from baton_kafka.agents.ticket_memo import TicketMemo, sharing
from baton_kafka.streams.bench.load import Workload
from tests.unit.agents.rules.texts import every_text, plain_mentions


@pytest.fixture(autouse=True)
def _forget_the_corpus() -> Iterator[None]:
    """The corpus is thousands of short texts: they leave the kept readings as they found them
    (empty), so a test of what is kept counts from there."""
    yield
    for kept in (matching._units, matching._kinds):
        kept.cache_clear()  # type: ignore[attr-defined]


def _plain_score(mention: str, product_name: str) -> float:
    """``product_score`` as it read before the scorer: both texts read on every call."""
    if not mention.strip() or not product_name.strip():
        return 0.0
    if normalize(mention) == normalize(product_name):
        return 1.0
    mention_units, product_units = _units(mention), _units(product_name)
    lexical = max(
        _coverage(mention_units, product_units), 0.9 * _coverage(product_units, mention_units)
    )
    if any(matching._MODEL_RE.fullmatch(unit) for unit in mention_units & product_units):
        lexical = max(lexical, 0.5)
    mention_kinds, product_kinds = _kinds(mention), _kinds(product_name)
    if mention_kinds & product_kinds:
        return round(min(1.0, 0.75 + 0.25 * lexical), 4)
    if mention_kinds and product_kinds:
        return round(0.5 * lexical, 4)
    return round(lexical, 4)


def _plain_find(text: str, names: list[str]) -> str | None:
    best, best_score = None, matching.FIND_THRESHOLD
    for name in names:
        score = _plain_score(text, name)
        if score > best_score:
            best, best_score = name, score
    return best


def _names() -> list[str]:
    load = Workload("scorer", sessions=40, per_session=5)
    names = {n for o in load.orders() for n in o.products()}
    # Names with no product kind too ("Weber"): a kind said then counts for nothing.
    extra = {
        "",
        "  ",
        "PS5 Console",
        "Kettle",
        "kettle",
        "电热水壶 Pro",
        "Weber",
        "Aurora Trail 41",
    }
    return sorted(names | extra)


def test_a_mention_scored_once_for_many_names_scores_as_each_alone() -> None:
    texts, names = every_text(), _names()
    rng = random.Random(3)
    checked = 0
    for text in texts:
        some = rng.sample(names, 6)
        assert [product_score(text, n) for n in some] == [_plain_score(text, n) for n in some]
        assert find_product(text, some) == _plain_find(text, some), text
        plain_best = max((_plain_score(text, n) for n in some), default=0.0)
        assert order_score(text, some) == plain_best
        checked += any(_plain_score(text, n) > 0 for n in some)
    for name in names:  # a product name against every other: the scores the look-up ranks by
        assert [product_score(name, n) for n in names] == [_plain_score(name, n) for n in names]
    assert order_score("kettle", []) == 0.0 and order_score("", names) == 0.0
    assert checked > 1000


def test_the_mentions_kept_per_ticket_are_the_plain_ones_and_the_callers_own() -> None:
    for text in every_text():
        assert mentioned_products(text) == plain_mentions(text), text
        with sharing(TicketMemo("T-1", None, 0.0)):
            assert mentioned_products(text) == plain_mentions(text), text
            # Read again (kept), the same; a caller changing its list changes nobody else's.
            first = mentioned_products(text)
            first.append("changed")
            assert mentioned_products(text) == plain_mentions(text), text

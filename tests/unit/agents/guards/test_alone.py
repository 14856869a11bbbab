"""A product's name found with ``str.find`` finds what the pattern compiled for it found: the same
places, on the corpora's replies and texts made of names, their parts and what may bound them."""

from __future__ import annotations

import functools
import json
import random
import re

import pytest

from baton_kafka.agents.guards import alone
from tests.fixtures.paths import TEST_DATA
from tests.unit.agents.guards.test_led_reading import _corpus as corpus_texts

ORDERS = ("eval_orders.jsonl", "facts_orders.jsonl", "lines_orders.jsonl", "guard_orders.jsonl")
# What may stand right before or after a name: each side of the boundary the pattern draws.
EDGES = [
    " ", "", ".", ",", "1", "9", "a", "Z", "é", "_", "-", "(", ")", "元", "号", "$", "\n",
    ".5", ",0", ". ", ", ", "x1", "٣", "２",
]  # fmt: skip


def _old_phrase(phrase: str) -> re.Pattern[str]:
    """The pattern each product phrase was compiled to."""
    return re.compile(rf"(?<![A-Za-z0-9.,]){re.escape(phrase)}(?![A-Za-z0-9]|[.,]\d)")


@functools.cache
def _names() -> list[str]:
    names: set[str] = set()
    for corpus in ORDERS:
        for line in (TEST_DATA / corpus).read_text("utf-8").splitlines():
            if line.strip():
                order = json.loads(line)
                names.add(order.get("product_name") or "")
                names.update(i.get("name", "") for i in order.get("items") or ())
    names.discard("")
    phrases: set[str] = set()
    for name in (n.casefold() for n in names):
        words = name.split()
        phrases.update([name, *words])
        phrases.update(" ".join(words[i : i + 2]) for i in range(len(words)))
    return sorted(p for p in phrases if p)


@functools.cache
def _texts() -> list[str]:
    """The corpora's texts, folded, and texts of names and their parts between any edges."""
    texts = [text.casefold() for text in corpus_texts()]
    rng = random.Random(7)
    names = _names()
    for _ in range(3000):
        parts = []
        for _ in range(rng.randrange(1, 6)):
            parts += [rng.choice(EDGES), rng.choice(names), rng.choice(EDGES)]
        texts.append("".join(parts))
    return texts


def _picked(text: str, rng: random.Random) -> list[str]:
    """Phrases worth looking for in ``text``: names it holds, and any few."""
    held = [p for p in _names() if p in text]
    return [*rng.sample(held, min(6, len(held))), *rng.sample(_names(), 2)]


def test_a_phrase_found_alone_is_what_its_pattern_found() -> None:
    rng = random.Random(11)
    checked = 0
    for text in _texts():
        for phrase in _picked(text, rng):
            got = [(m.span(), m.group()) for m in alone.Alone(phrase).finditer(text)]
            want = [(m.span(), m.group()) for m in _old_phrase(phrase).finditer(text)]
            assert got == want, (phrase, text)
            checked += bool(want)
    assert checked > 1000


def test_a_name_found_anywhere_is_what_its_escaped_pattern_found() -> None:
    rng = random.Random(13)
    for text in _texts():
        for name in _picked(text, rng):
            want = [m.span() for m in re.finditer(re.escape(name), text)]
            assert list(alone.spans(name, text)) == want, (name, text)


@pytest.mark.parametrize("text", ["", "a", "1.5 x", "aaa", "abab", "é é é", ". . . .", "元1元1元"])
def test_repeats_and_empty_phrases_are_found_as_a_pattern_finds_them(text: str) -> None:
    for phrase in ("", "a", "aa", "ab", "aba", "é é", ". .", "元1元"):
        got = [m.span() for m in alone.Alone(phrase).finditer(text)]
        assert got == [m.span() for m in _old_phrase(phrase).finditer(text)]
        assert list(alone.spans(phrase, text)) == [
            m.span() for m in re.finditer(re.escape(phrase), text)
        ]

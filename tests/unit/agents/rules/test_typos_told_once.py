"""A text's words, each told known or not once, are corrected as when asked about every time."""

from __future__ import annotations

import random
from collections.abc import Sequence

from baton_kafka.agents.rules.matching import STOPWORDS, normalize, stem
from baton_kafka.agents.rules.typos import _spelled, _vocabulary, corrected, fixed
from tests.unit.agents.rules.test_typos import _corpus
from tests.unit.agents.rules.texts import every_text, generated


def _plain(text: str, names: Sequence[str]) -> str:
    """The definition: every word asked about each time it is met (the walk is ``corrected``'s)."""
    norm = normalize(text)
    vocabulary, known, initials = _vocabulary(tuple(names))

    def unknown(word: str) -> bool:
        return _spelled(word) and stem(word) not in known

    def joinable(first: str, second: str) -> bool:
        pair = (first, second)
        return any(map(unknown, pair)) and not any(w in STOPWORDS for w in pair)

    return fixed(text, norm, vocabulary, initials, unknown, joinable)


_NAMES = [
    [],
    ["Philips Air Fryer XL", "Bose QuietComfort Headphones"],
    ["Nike Pegasus 41 Running Shoes", "Midea Electric Kettle", "Dyson V15 Vacuum Cleaner"],
    ["Weber Kettle Grill", "Stanley Quencher Tumbler", "the an of"],
]


def test_corrected_is_the_plain_reading_on_the_corpora_and_typos_made_of_them() -> None:
    rng = random.Random(20261206)
    cases = [(str(case["mention"]), list(case["orders"])) for case in _corpus()]
    mentions = [mention for mention, _ in cases]
    # Typos next to the products' own words: a word known and one misspelled a letter apart.
    pool = [*mentions, *(name for _, names in cases for name in names)]
    texts = [*mentions, *generated(pool, 3000, seed=11), *list(every_text())[:4000]]
    fixed = 0
    for text in texts:
        names = rng.choice(_NAMES) + rng.choice(cases)[1]
        got = corrected(text, names)
        assert got == _plain(text, names), (text, names)
        fixed += got != text
    assert fixed > 200  # the texts do hold misspellings to fix

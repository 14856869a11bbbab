"""The number screens told from a text's words (``whole_words``): the same answer as searching
the text with the plain patterns, for the corpora and for texts made of number words."""

from __future__ import annotations

import random
import re

import pytest

from baton_kafka.agents.guards import number_words, numerals, whole_words, words
from baton_kafka.agents.ticket_memo import TicketMemo, sharing
from tests.unit.agents.guards.test_led_reading import _texts

GLUE = [" ", " ", "-", "_", "1", "23", ".", ", ", "\n", "'", "é", "ſ", "\u212a", "(", ""]
ATTACHED = ["", "", "", "x", "s", "en", "a"]


def _screens() -> list[tuple[str, re.Pattern[str], re.Pattern[str] | None]]:
    en = words.compiled(numerals._english)
    return [
        ("english", en.any, en.screen),
        ("any number word", words.compiled(number_words._any_word), None),
        ("ambiguous", number_words.ambiguous(), None),
    ]


def _screened() -> list[tuple[str, re.Pattern[str], re.Pattern[str] | None]]:
    found = _screens()
    found[1] = (*found[1][:2], words.compiled(number_words._any_word_screen))
    found[2] = (*found[2][:2], words.compiled(number_words._ambiguous_screen))
    return found


def _number_texts() -> list[str]:
    """Texts of every pack's number words, alone, compound, glued and in any case."""
    vocabulary = [w for lang in number_words.languages().values() for w in lang.known]
    en = words.compiled(numerals._english)
    vocabulary += [*en.word_value, *en.scale_value, "and", "a", "one", "phone", "often"]
    rng = random.Random(47)
    texts = []
    for _ in range(3000):
        parts = []
        for _ in range(rng.randrange(1, 8)):
            word = "".join(rng.choice(vocabulary) for _ in range(rng.choice((1, 1, 2, 3))))
            word = rng.choice(ATTACHED) + word + rng.choice(ATTACHED)
            word = rng.choice((word, word.upper(), word.title(), word.lower()))
            parts += [word, rng.choice(GLUE)]
        texts.append("".join(parts))
    return texts


def test_every_screen_is_made_from_the_packs() -> None:
    assert all(screen is not None for _, _, screen in _screened())


@pytest.mark.parametrize("in_ticket", [False, True], ids=["alone", "in a ticket"])
def test_a_screen_answers_as_its_pattern_searched_in_the_text(in_ticket: bool) -> None:
    texts = [*_texts(), *_number_texts()]
    memo = TicketMemo("t", None, 0.0)
    found = dict.fromkeys((name for name, _, _ in _screened()), 0)
    ascii_texts = 0
    for text in texts:
        ascii_texts += text.isascii()
        with sharing(memo) if in_ticket else _Nothing():
            for name, pattern, screened in _screened():
                want = pattern.search(text) is not None
                assert whole_words.holds(pattern, screened, text) == want, (name, text)
                found[name] += want
    # Most texts are ASCII, and each screen says yes for many and no for many.
    assert ascii_texts > 2000, ascii_texts
    assert all(200 < n < len(texts) - 200 for n in found.values()), found


def test_a_word_of_other_characters_is_not_screened() -> None:
    assert whole_words.screen([(["one", "Two"], False)]) is None
    assert whole_words.screen([(["one", "twenty-one"], False)]) is None
    assert whole_words.screen([(["one", "\u017fix"], False)]) is None  # "ſ" reads as "s"
    only_accented = whole_words.screen([(["zéro"], False)])
    assert only_accented is not None and not whole_words.holds(
        re.compile("zéro", re.I), only_accented, "zero ZERO zro"
    )


class _Nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None

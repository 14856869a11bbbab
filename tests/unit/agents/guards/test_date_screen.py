"""The dates led by a digit looked for at once: a text the joined pattern finds nothing in is one
no date pattern matches, and the dates read with it are the dates every pattern reads. The
hyphened figures led by their digit: what the lookbehind-led pattern finds."""

from __future__ import annotations

import random
import re

import pytest

from baton_kafka.agents.guards import facts, reading, words
from baton_kafka.agents.guards.skipping import anywhere, plain, starts
from tests.unit.agents.guards.test_led_reading import _texts
from tests.unit.agents.guards.test_parted_reading import _eval_texts, _months, _spelled

PIECES = ["2026", "12", "1", "31", "7", "０", "１２", "٣", "2026-12-14", "14.12.", "5/6/2026"]
GLUE = ["", " ", "  ", "-", ".", ". ", "/", "月", "日", "号", "年", " de ", " of ", "st ", "\n"]


def _dated() -> list[str]:
    """Digits, month names and the date patterns' separators glued anyhow."""
    rng = random.Random(46)
    months = _months()
    texts = []
    for _ in range(4000):
        parts = []
        for _ in range(rng.randrange(1, 8)):
            month = _spelled(rng.choice(months), rng)
            piece = rng.choice([*PIECES, month, month.title(), "Order O-1001", "x"])
            parts += [piece, rng.choice(GLUE)]
        texts.append("".join(parts))
    return texts


def _corpus() -> list[str]:
    texts = [*_texts(), *_eval_texts(), *_dated()]
    return [*texts, *(reading.normalise(t) for t in texts)]


def _every_pattern(text: str) -> list[facts.Fact]:
    """``facts.dates`` as read before: every pattern searched along the whole text."""
    w = facts._w()
    screen, w.any_digit_led = w.any_digit_led, None
    try:
        return list(facts.dates(text))
    finally:
        w.any_digit_led = screen


def test_the_joined_pattern_finds_a_date_where_a_digit_led_pattern_does() -> None:
    w = facts._w()
    assert w.any_digit_led is not None and len(w.digit_led) >= 5
    led = [plain(w.dates[i]) for i in sorted(w.digit_led)]  # type: ignore[arg-type]
    found = 0
    for text in _corpus():
        first = min((m.start() for p in led for m in p.finditer(text)), default=None)
        hit = w.any_digit_led.search(text)
        assert (hit and hit.start()) == first, text
        found += first is not None
    assert found > 1000


def test_the_dates_read_with_the_joined_pattern_are_those_every_pattern_reads() -> None:
    found = 0
    for text in _corpus():
        want = _every_pattern(text)
        assert list(facts.dates(text)) == want, text
        found += len(want)
    assert found > 1000


def test_patterns_not_worked_out_are_not_joined() -> None:
    assert anywhere([r"(?P<d>\d)x(?P=d)"]) is None  # a group referred to by name
    assert anywhere([r"(\d)\1"]) is None  # by number
    assert anywhere([r"(?i)\d"]) is None  # global inline flags
    assert anywhere([r"a?"]) is None  # an empty match
    assert anywhere([r"\(?P<d>\d"]) is None  # a literal parenthesis, not a group
    assert starts(r"(?P<y>\d{4})-\d", re.I) == {r"\d"}
    joined = anywhere([r"(?P<d>\d)-", r"(?P<d>\d)/"])
    assert joined is not None
    assert [m.start() for m in joined.finditer("1 2/ 3- 4")] == [2, 5]


@pytest.mark.parametrize("text", ["", "no digits at all", "order O-1001 ships in 3 days"])
def test_a_text_without_a_date_reads_none(text: str) -> None:
    assert list(facts.dates(text)) == [] == _every_pattern(text)
    assert words.compiled(facts._Words).any_digit_led.search(text) is None  # type: ignore[union-attr]


# The hyphened figure as it was written: led by a lookbehind, tried at every position.
LOOKBEHIND_LED = re.compile(r"(?<![\w.,])(\d+)(?=-[^\W\d_])")
HYPHEN_PIECES = ["5", "30", "2026", "O", "x", "é", "٣", "１２", "day", "Jahres", "年", "_", "-"]
HYPHEN_GLUE = ["", "-", " ", ".", ",", "-_", "--", "/", "\n", "-é", "-1"]


def test_a_hyphened_figure_led_by_its_digit_is_the_lookbehind_led_one() -> None:
    rng = random.Random(48)
    texts = list(_corpus())
    for _ in range(6000):
        texts.append(
            "".join(
                rng.choice(HYPHEN_PIECES) + rng.choice(HYPHEN_GLUE)
                for _ in range(rng.randrange(1, 10))
            )
        )
    found = 0
    for text in texts:
        want = [(m.span(), m.group(1)) for m in LOOKBEHIND_LED.finditer(text)]
        assert [(m.span(), m.group(1)) for m in facts._HYPHENED.finditer(text)] == want, text
        found += len(want)
    assert found > 1000

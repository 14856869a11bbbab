"""The pre-screen of the problem and demand patterns: a text read through it finds what running
every pattern over it finds, in every shipped language, on the corpora and generated texts."""

from __future__ import annotations

import re

import pytest

from baton_kafka.agents import packs
from baton_kafka.agents.rules.matching import normalize
from baton_kafka.agents.rules.phrases import CONCERN, hits, problem_key, reading, written_in
from baton_kafka.agents.rules.screen import Screen, starts
from tests.unit.agents.rules.texts import every_text

LANGUAGES = packs.languages(CONCERN)


def _plain_problem_key(text: str | None) -> str | None:
    """``problem_key`` as it read before the screen: every pattern searched."""
    from baton_kafka.agents.rules.phrases import PROBLEM_BY_LABEL

    if not text:
        return None
    if text in PROBLEM_BY_LABEL:
        return PROBLEM_BY_LABEL[text]
    norm, problems = normalize(text), reading(written_in(text)).problems
    return next((key for key, rx in problems.items() if rx.search(norm)), None)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_screened_reading_finds_what_every_pattern_finds(language: str) -> None:
    read = reading(language)
    texts = [normalize(t) for t in every_text()]
    named = 0
    for norm in texts:
        problems = {k: hits(rx, norm, read.negated) for k, rx in read.problems.items()}
        demands = {d: hits(rx, norm, read.negated) for d, rx in read.demands.items()}
        assert read.said(norm) == (problems, demands), norm
        first = next((k for k, found in problems.items() if found), None)
        assert read.first_problem(norm) == first, norm
        searched = next((k for k, rx in read.problems.items() if rx.search(norm)), None)
        assert read.first_problem(norm, negated=False) == searched, norm
        assert read.demands_in(norm) == [d for d, found in demands.items() if found], norm
        named += first is not None
    # The texts do name problems in this language's reading, so the screen is put to the test.
    assert named > 500


def test_a_problem_key_is_the_plain_one() -> None:
    texts = every_text()
    assert [problem_key(t) for t in texts] == [_plain_problem_key(t) for t in texts]


def test_every_pattern_of_every_language_has_its_starts_told() -> None:
    """No pattern is left to run on every text: each has literal starts the screen can use."""
    for language in LANGUAGES:
        read = reading(language)
        assert read.screen.always == frozenset(), language


def test_the_starts_are_where_every_match_starts() -> None:
    cases = {
        r"(?<![a-z])(?:flames?|burn\w*)(?![a-z])": {"flame", "flames", "burn"},
        # Followed through optional words, each start cut once it is long enough to tell.
        r"not (?:been |yet )?(?:delivered|arrived)": {
            f"not {w}{v}" for w in ("", "been ", "yet ") for v in ("delive", "arrive")
        },
        r"[汉款]未到|退款": {"汉未到", "款未到", "退款"},
        r"a|\w+": None,  # a word may start anywhere
        r"(?i)fire": None,  # case folded: the text's letters need not be the pattern's
        r"(?i:fire)|smoke": None,
        r"x?y": {"y", "xy"},
    }
    for pattern, expected in cases.items():
        found = starts(re.compile(pattern))
        assert (set(found) if found is not None else None) == expected, pattern


def test_a_screen_keeps_every_key_whose_pattern_matches() -> None:
    patterns = {
        "fire": re.compile(r"(?<![a-z])(?:fire|flames?)(?![a-z])|着火"),
        "any": re.compile(r"\w+ing"),
        "late": re.compile(r"迟到|慢"),
    }
    screen = Screen(patterns)
    for text in ["on fire", "着火了", "flaming", "nothing", "太慢了", "", "f", "慢"]:
        matching = {k for k, rx in patterns.items() if rx.search(text)}
        assert matching <= screen.possible(text), text
    assert screen.possible("quiet") == {"any"}

"""The number-word patterns skip ahead to words a number word can start: same matches."""

from __future__ import annotations

import json
import re

from baton_kafka.agents.guards import number_words, numbers
from tests.fixtures.paths import TEST_DATA

FIELDS = ("reply", "solution", "internal_note", "message")


def _texts() -> list[str]:
    texts = []
    for corpus in (
        "policy_corpus.jsonl",
        "policy_blind_corpus.jsonl",
        "policy_blind2_corpus.jsonl",
    ):
        for line in (TEST_DATA / corpus).read_text("utf-8").splitlines():
            if line.strip():
                case = json.loads(line)
                texts += [case[f] for f in FIELDS if case.get(f)]
    return texts


MIXED = "FÜNFHUNDERT Euro, Zweihundertfünfundzwanzig, treinta y cinco, Elf, ONCE, Fifty"


def test_number_words_skip_ahead_finds_what_the_plain_patterns_find() -> None:
    texts = [*_texts(), MIXED]
    assert len(texts) > 500
    compiled = [w.tokens for w in number_words.languages().values()]
    compiled += [numbers.english_any(), number_words.ambiguous()]
    for pattern in compiled:
        plain = re.compile(re.sub(r"\(\?=\[[^\]]*\]\)", "", pattern.pattern), re.I)
        assert plain.pattern != pattern.pattern
        for text in texts:
            assert [m.span() for m in pattern.finditer(text)] == [
                m.span() for m in plain.finditer(text)
            ], text
    german = number_words.languages()["de"].tokens
    assert [m.group() for m in german.finditer(MIXED)] == [
        "FÜNFHUNDERT",
        "Zweihundertfünfundzwanzig",
        "Elf",
    ]

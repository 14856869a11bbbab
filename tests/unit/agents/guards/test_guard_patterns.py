"""The guards' patterns that skip ahead or look for their words first: same matches as plain."""

from __future__ import annotations

import functools
import importlib
import json
import re
from typing import Any

import pytest

from baton_kafka.agents.guards import number_words, reading, words
from baton_kafka.agents.guards.parted import Parted
from baton_kafka.agents.guards.skipping import Sieved, plain, skipping
from tests.fixtures.paths import TEST_DATA

MODULES = [
    f"baton_kafka.agents.guards.{m}"
    for m in ("audit", "identifiers", "money", "offered", "reading")
]
FIELDS = ("reply", "solution", "internal_note", "message")
CORPORA = (
    "policy_corpus.jsonl",
    "policy_blind_corpus.jsonl",
    "policy_blind2_corpus.jsonl",
    "multilingual_corpus.jsonl",
    "multilingual_blind_corpus.jsonl",
    "lines_corpus.jsonl",
    "lines_blind_corpus.jsonl",
    "typo_corpus.jsonl",
    "packs_corpus.jsonl",
)
# Letters a case-insensitive ASCII literal takes outside ASCII (Kelvin sign, long s, dotted I),
# fullwidth forms, and words split across sentences.
ODD = (
    "We will ReFUND the \u212a\u017ft of the \u0130tem: 20 EUR, a \u017dtore CREDIT\ncard",
    "Send us the PİN and the CVV. Gift\ncard, \u017fecurity code, cv2; price adjustment of 5",
    "ＲＥＦＵＮＤ ３０ ＵＳＤ, 退款30元, pay\nyou 40, instalments monthly, twice the amount, 3x",
)


@functools.cache
def _texts() -> list[str]:
    texts = list(ODD)
    for corpus in CORPORA:
        for line in (TEST_DATA / corpus).read_text("utf-8").splitlines():
            if line.strip():
                case = json.loads(line)
                texts += [reading.normalise(case[f]) for f in FIELDS if case.get(f)]
    return texts


def _patterns() -> list[tuple[str, Any]]:
    found = []
    for module in map(importlib.import_module, MODULES):
        # The packs' patterns, compiled for the words every shipped language pack holds.
        built = vars(words.compiled(module._Words)) if hasattr(module, "_Words") else {}
        for name, value in [*vars(module).items(), *built.items()]:
            for key, pattern in value.items() if isinstance(value, dict) else [("", value)]:
                led = isinstance(pattern, re.Pattern) and pattern.pattern.startswith("(?=[")
                if led or isinstance(pattern, (Sieved, Parted)):
                    found.append((f"{module.__name__}.{name}{key and f'[{key}]'}", pattern))
    return found


def _spans(matches: Any) -> list[tuple[int, int]]:
    return [m.span() for m in matches]


def test_the_guards_lead_their_long_alternations_and_sieve_some() -> None:
    names = {name.rsplit(".", 1)[1] for name, _ in _patterns()}
    assert {"PROMISE", "SENSITIVE", "CLAUSE_END", "MULTIPLIER", "CHANNELS[voucher]"} <= names
    assert sum(isinstance(p, Sieved) for _, p in _patterns()) >= 10


@pytest.mark.parametrize(("name", "pattern"), _patterns(), ids=[n for n, _ in _patterns()])
def test_a_led_or_sieved_pattern_finds_what_the_plain_pattern_finds(
    name: str, pattern: Any
) -> None:
    texts = _texts()
    assert len(texts) > 1500
    whole = pattern.whole if isinstance(pattern, Parted) else pattern
    compiled = whole.compiled if isinstance(whole, Sieved) else whole
    bare = plain(compiled)
    assert bare.pattern != compiled.pattern, name
    for text in texts:
        assert _spans(pattern.finditer(text)) == _spans(bare.finditer(text)), text
        middle = (len(text) // 3, 2 * len(text) // 3)
        for pos, end in ((0, len(text)), middle):
            got, want = pattern.search(text, pos, end), bare.search(text, pos, end)
            assert (got and got.span()) == (want and want.span()), (text, pos, end)


def test_the_sieve_knows_the_words_every_match_holds() -> None:
    sieve = Sieved(r"(?<![A-Za-z])(?:refund|pay\s+(?:you|back))|退款|[退赔](?:给)?[您你]", re.I)
    assert sieve.search("We will PAY you back") is not None
    assert sieve.search("Nothing to see here") is None
    assert sieve.search("我们会退款") is not None  # not ASCII: the pattern decides
    # The long s is an "s" to a case-insensitive pattern: no word is looked for first.
    assert Sieved("ſend", re.I).search("SEND") is not None
    # A character class or a category at the start leaves the pattern unled.
    assert skipping(r"[^a]b").pattern == r"[^a]b"
    assert skipping(r"\w+x").pattern.startswith("(?=[")


def test_number_words_as_a_tree_of_letters_find_the_words_the_alternation_finds() -> None:
    texts = [
        *_texts(),
        "FÜNFHUNDERT Euro, Zweihundertfünfundzwanzig, treinta y cinco, Elf, ONCE, Fifty",
        "siebzehn, sieben und vierzig, dreißig, doscientos veintiséis, cuatrocientas, mil",
    ]
    for lang in number_words.languages().values():
        many = "+" if lang.compound else ""
        ordered = re.compile(rf"(?<![^\W\d_])(?:{lang._compound.pattern}){many}(?![^\W\d_])", re.I)
        assert ordered.pattern not in lang.tokens.pattern  # the tree stands in its place
        for text in texts:
            assert _spans(lang.tokens.finditer(text)) == _spans(ordered.finditer(text)), text

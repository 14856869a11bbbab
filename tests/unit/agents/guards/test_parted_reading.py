"""The card-data scan searched with only the entries a text can hold, and the month-first date
screened by the month names before a day: the same matches as the plain patterns."""

from __future__ import annotations

import functools
import json
import random
import re
import sys

from baton_kafka.agents import packs
from baton_kafka.agents.guards import facts, numbers, parted, reading, words
from baton_kafka.agents.guards.parted import Parted
from baton_kafka.agents.guards.skipping import Sieved
from tests.fixtures.paths import TEST_DATA
from tests.unit.agents.guards.test_led_reading import GLUE, ODD, _texts

# Characters a case-insensitive ASCII letter takes, and others that no ASCII letter does.
REACHING = ["\u212a", "\u017f", "\u0130", "\u0131"]
OTHERS = ["，", "。", "卡号", "ü", "é", "ñ", "—", "’", "\u00a0", "１２", "カード番号"]


def _secret_words() -> list[str]:
    """The words the credentials packs' entries are written with, in every language."""
    found: set[str] = set()
    for language in packs.LANGUAGES:
        pack = packs.pack("credentials", language)
        for key in ("secrets", "asks", "never"):
            for entry in pack.get(key, []):
                found.update(re.findall(r"[^\W_]+", re.sub(r"\\[a-zA-Z]", " ", entry)))
    return sorted(found)


@functools.cache
def _secret_texts() -> list[str]:
    """Texts made of the packs' secret words (so the scan finds some), glued and cased anyhow."""
    vocabulary = _secret_words()
    assert len(vocabulary) > 100
    rng = random.Random(43)
    texts = []
    for _ in range(3000):
        parts = []
        for _ in range(rng.randrange(1, 10)):
            word = rng.choice(vocabulary + ODD + OTHERS + REACHING + ["digits", "3", "16"])
            word = rng.choice((word, word.upper(), word.title(), word.lower()))
            parts += [word, rng.choice([*GLUE, " ", " ", "-", "\u00a0"])]
        texts.append("".join(parts))
    return texts


def _eval_texts() -> list[str]:
    lines = (TEST_DATA / "eval_tickets.jsonl").read_text("utf-8").splitlines()
    return [str(json.loads(line).get("text", "")) for line in lines if line.strip()]


def _spans(matches: object) -> list[tuple[int, int]]:
    return [m.span() for m in matches]  # type: ignore[attr-defined]


def test_the_parted_scan_finds_what_the_whole_alternation_finds() -> None:
    parted = reading._w().SENSITIVE
    assert isinstance(parted, Parted)
    plain = re.compile(words.alternation("credentials", "secrets", end=False), re.I)
    assert parted.pattern == Sieved(plain.pattern, re.I).pattern
    texts = [*_texts(), *_secret_texts(), *_eval_texts()]
    found = dropped = 0
    for text in texts:
        for t in (text, reading.normalise(text)):
            want = _spans(plain.finditer(t))
            assert _spans(parted.finditer(t)) == want, t
            found += len(want)
            dropped += len(parted.part(t)) < len(parted._entries)
            cut = len(t) // 3
            got, bare = parted.search(t, cut, len(t) - 1), plain.search(t, cut, len(t) - 1)
            assert (got and got.span()) == (bare and bare.span()), t
    assert found > 1000  # the texts hold many secrets in every language
    assert dropped > len(texts)  # and most searches try only some of the entries


def test_a_text_with_a_letter_an_ascii_letter_takes_keeps_every_entry() -> None:
    parted = reading._w().SENSITIVE
    assert len(parted.part("your PIN, please")) < len(parted._entries)
    for odd in REACHING:
        assert len(parted.part(f"your {odd}ey, please")) == len(parted._entries)
    # A Chinese text keeps its own language's entries and the Latin ones whose words it holds.
    kept = parted.part("请提供您的卡号和 CVV")
    assert 0 < len(kept) < len(parted._entries)
    assert reading.asks_for_secrets("请提供您的卡号和 CVV")


def test_the_card_data_scan_reads_as_with_the_whole_alternation(monkeypatch: object) -> None:
    texts = [*_texts(), *_secret_texts(), *_eval_texts()]
    fast = [reading.asks_for_secrets(t) for t in texts]
    whole = reading._w().SENSITIVE.whole
    monkeypatch.setattr(reading._w(), "SENSITIVE", whole)  # type: ignore[attr-defined]
    assert [reading.asks_for_secrets(t) for t in texts] == fast
    assert sum(map(bool, fast)) > 100


def _months() -> list[str]:
    return [
        str(n)
        for _, pack in words.languages("facts")
        for value in dict(pack.get("months", {})).values()
        for n in (value if isinstance(value, list) else [value])
    ]


def _spelled(month: str, rng: random.Random) -> str:
    """One way ``month`` (a pack's pattern) is written."""
    plain = re.sub(r"\(\?:([^)|]*)\)\?", lambda m: rng.choice(["", m.group(1)]), month)
    plain = re.sub(r"(.)\?", lambda m: rng.choice(["", m.group(1)]), plain)
    return plain.replace("\\", "")


def test_the_month_first_date_is_screened_and_finds_what_the_plain_pattern_finds() -> None:
    w = facts._w()
    months = _months()
    every = "|".join(months)
    screened = [
        (d, re.compile(p.replace("{month}", f"(?:{every})"), re.I))
        for d, p in zip(w.dates, words.entries("facts", "dates.patterns"), strict=True)
        if isinstance(d, facts._MonthFirst)
    ]
    assert screened  # the English "December 14"
    rng = random.Random(44)
    gaps = [" ", "  ", ". ", ".  ", ".\n", "\u00a0", "\t", "", ".", " .", "\n\n", " , "]
    dated = []
    for _ in range(3000):
        month = _spelled(rng.choice(months), rng)
        month = rng.choice((month, month.upper(), month.title()))
        day = rng.choice(["1", "14", "31", "7th", "3rd", "２", "123", "0"])
        lead = rng.choice(["", "on ", "x", "5 ", "am ", "le ", "，", "order O-1 "])
        tail = rng.choice(["", ", 2026", " 2027", " und ", "。", " or 5 days"])
        dated.append(f"{lead}{month}{rng.choice(gaps)}{day}{tail}")
    found = 0
    for text in [*_texts(), *dated, *_eval_texts()]:
        for t in (text, reading.normalise(text)):
            for fast, plain in screened:
                want = [(m.span(), m.groupdict()) for m in plain.finditer(t)]
                assert [(m.span(), m.groupdict()) for m in fast.finditer(t)] == want, t
                found += len(want)
    assert found > 1000


def test_a_text_without_a_month_before_a_day_is_not_searched() -> None:
    fast = next(d for d in facts._w().dates if isinstance(d, facts._MonthFirst))
    assert not fast.may_match("We will refund 39.99 USD within 3-5 business days.")
    assert not fast.may_match("Decision: refund for order O-1001 (delivered); email 5")
    assert fast.may_match("It arrives on Dec. 5")
    assert fast.may_match("It arrives on december\u00a014")


RUN_GLUE = ["", " ", "-", "_", ".", "/", ":", ",", "'", "’", "..", "-.", ", ", "\u00a0", "，", "（"]
RUN_PIECES = ["a", "Ab", "xyz", "1", "42", "0x9", "7L", "O", "cpu", "é", "１２", "五", "K\u212a"]


@functools.cache
def _run_texts() -> list[str]:
    """The corpora's texts and runs of letters, digits and separators glued anyhow."""
    rng = random.Random(45)
    texts = [*_texts(), *_eval_texts()]
    for _ in range(4000):
        texts.append(
            "".join(
                rng.choice(RUN_PIECES) + rng.choice(RUN_GLUE) for _ in range(rng.randrange(1, 12))
            )
        )
    return texts


def test_the_digit_runs_are_the_runs_with_a_digit() -> None:
    found = 0
    for text in _run_texts():
        for t in (text, reading.normalise(text)):
            want = tuple(
                (m.group(), m.start(), m.end())
                for m in numbers.RUN.finditer(t)
                if not m.group().isalpha() and re.search(r"\d", m.group())
            )
            assert numbers.digit_runs.__wrapped__(t) == want, t
            found += len(want)
    assert found > 10000


def test_a_text_without_a_link_mark_holds_no_link() -> None:
    # The characters other than ASCII letters that the link pattern's letters take.
    letters = re.compile("[a-z]", re.I)
    odd = "".join(chr(c) for c in range(128, sys.maxunicode + 1) if letters.match(chr(c)))
    rng = random.Random(46)
    pieces = ["shop", "x", "com", "de", "WWW", "http", "ftp", "s", "://", ".", "/", "-", " "]
    pieces += [*odd, "1", "@", "é", "，", "。", "_"]
    texts = [*_texts(), *_eval_texts()]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randrange(1, 12))) for _ in range(6000)]
    linked = 0
    for text in texts:
        want = [m.group() for m in reading._URL.finditer(text)]
        if not reading._LINKED.search(text):
            assert want == [], text
        linked += bool(want)
    assert linked > 50


def test_the_characters_an_ascii_literal_takes_are_the_four_known() -> None:
    every = "".join(chr(c) for c in range(128, sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    taken = {c for a in range(128) for c in re.findall(re.escape(chr(a)), every, re.I)}
    assert taken == set(parted.REACHING)


def test_the_held_words_scan_holds_a_secret_where_the_whole_alternation_finds_one() -> None:
    parted = reading._w().SENSITIVE
    plain = re.compile(words.alternation("credentials", "secrets", end=False), re.I)
    held = 0
    for text in [*_texts(), *_secret_texts(), *_eval_texts()]:
        for t in (text, reading.normalise(text), text.lower()):
            want = plain.search(t) is not None
            assert parted.holds(t) is want, t
            held += want and t.isascii()
    assert held > 100  # many ASCII texts hold a secret, found by one word's entries

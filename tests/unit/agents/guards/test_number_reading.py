"""The cheaper number and money reading: runs found from their first digit, spaced groups led by a
digit, plain digits read at once: the same numbers and money as the plain reading kept here."""

from __future__ import annotations

import functools
import importlib
import random
import re
from collections.abc import Callable, Iterator
from typing import Any

from baton_kafka.agents import packs
from baton_kafka.agents.guards import numbers, words
from baton_kafka.agents.guards.numbers import Number
from tests.unit.agents.guards.test_led_reading import _texts
from tests.unit.agents.guards.test_parted_reading import _eval_texts
from tests.unit.agents.rules.test_matching_terms import _strings

money_module = importlib.import_module("baton_kafka.agents.guards.money")  # not the function

# The plain reading, as it was written before it was made cheaper.
PLAIN_DIGIT_RUN = re.compile(
    r"(?<![A-Za-z0-9])"
    r"(?=(?:[A-Za-z]+[-_./:,'’](?=[A-Za-z0-9]))*[A-Za-z]*[0-9])"
    r"[A-Za-z0-9]+(?:[-_./:,'’][A-Za-z0-9]+)*(?![A-Za-z0-9])"
)
PLAIN_SPACED = re.compile(
    r"(?<![A-Za-z0-9.,\-])\d{1,3}(?:[ \u00a0\u2009\u202f]\d{3})+(?:[.,]\d{1,2})?(?![A-Za-z0-9])"
)


def plain_digit_runs(text: str) -> tuple[tuple[str, int, int], ...]:
    return tuple((m.group(), m.start(), m.end()) for m in PLAIN_DIGIT_RUN.finditer(text))


def plain_value(token: str) -> float | None:
    grouped = words.compiled(numbers._grouping)
    if grouped is not None and grouped.fullmatch(token) and not numbers._PLAIN.fullmatch(token):
        token = numbers._NOT_FIGURE.sub("", token)
    if not numbers._PLAIN.fullmatch(token):
        return None
    if numbers._EUROPEAN.fullmatch(token):
        token = token.replace(".", "").replace(",", ".")
    elif numbers._DECIMAL_COMMA.fullmatch(token):
        token = token.replace(",", ".")
    return float(token.replace(",", ""))


def _plain_run(text: str, token: str, at: int) -> Iterator[Number]:
    value = plain_value(token)
    if value is not None:
        yield numbers._with_scale(text, Number(value, at, at + len(token)))
        return
    if r := numbers._RANGE.fullmatch(token):
        if float(r.group(1)) >= float(r.group(2)):
            return
        low, high = r.span(1), r.span(2)
        a = (at + low[0], at + low[1])
        b = (at + high[0], at + high[1])
        yield Number(float(r.group(1)), *a, partner=b)
        yield numbers._with_scale(text, Number(float(r.group(2)), *b, partner=a))
        return
    if glued := words.compiled(numbers._codes).fullmatch(token):
        group = 1 if glued.group(1) else 2
        if (v := plain_value(glued.group(group))) is not None:
            yield Number(v, at + glued.start(group), at + glued.end(group))
        return
    if k := numbers._THOUSANDS_K.fullmatch(token):
        yield Number(float(k.group(1)) * 1000, at, at + len(token), k=True)
        return
    if "," in token and not numbers._LETTER.search(token):
        offset = 0
        for part in token.split(","):
            if part and (v := plain_value(part)) is not None:
                yield Number(v, at + offset, at + offset + len(part))
            offset += len(part) + 1


def plain_digit_numbers(text: str, skip: list[tuple[int, int]]) -> Iterator[Number]:
    taken = list(skip)

    def free(start: int, end: int) -> bool:
        return all(end <= a or start >= b for a, b in taken)

    for m in PLAIN_SPACED.finditer(text):
        value = plain_value(numbers._SPACES.sub("", m.group()))
        if value is not None and free(*m.span()):
            taken.append(m.span())
            yield numbers._with_scale(text, Number(value, *m.span()))
    for token, start, end in plain_digit_runs(text):
        if free(start, end):
            yield from _plain_run(text, token, start)


def plain_all_numbers(
    text: str, skip: list[tuple[int, int]], language: str | None = None
) -> list[Number]:
    if language is None:
        language = numbers._own_language(text)
    digits = [numbers._grouped(text, n, language) for n in plain_digit_numbers(text, skip)]
    return sorted([*digits, *numbers._words_read(text, language)], key=lambda n: n.start)


# Pieces of texts with numbers: digits, separators, currencies and every pack's number words.
DIGITS = ["0", "1", "5", "12", "80", "299", "000", "1000", "2026", "12345", "007", "1.5", "3-5"]
SPACED = ["1 299", "12\u00a0345\u00a0678", "1\u2009000,50", "4\u202f500.00", "999 000"]
SEPARATORS = [
    *",.'’-–_/: ",
    "\u00a0",
    "\u2009",
    "\u202f",
    "，",
    "。",
    "..",
    ", ",
    "k",
    "K",
    "x",
    "O-",
    "cpu",
    "é",
    "１２",
    "\n",
]


@functools.cache
def _pack_strings() -> list[str]:
    """Every string of every shipped language's numbers and money pack, keys and values."""
    found: set[str] = set()
    for language in packs.LANGUAGES:
        for concern in ("numbers", "money"):
            pack = packs.pack(concern, language)
            found.update(s for s in _strings(pack) if len(s) < 40)
            found.update(_keys(pack))
    return sorted(found)


def _keys(value: object) -> Iterator[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _keys(v)


@functools.cache
def _number_texts() -> list[str]:
    """The corpora, the eval set, the packs' strings, and texts glued of digits, separators,
    currencies and number words in every language."""
    pieces = _pack_strings()
    assert len(pieces) > 300
    rng = random.Random(47)
    texts = [*_texts(), *_eval_texts(), *pieces]
    for _ in range(4000):
        parts = []
        for _ in range(rng.randrange(1, 12)):
            kind = rng.random()
            if kind < 0.1:
                parts.append(rng.choice(SPACED))
            elif kind < 0.4:
                parts.append(rng.choice(DIGITS))
            elif kind < 0.75:
                parts.append(rng.choice(SEPARATORS))
            else:
                parts.append(rng.choice(pieces))
            parts.append(rng.choice(["", "", " ", rng.choice(SEPARATORS)]))
        texts.append("".join(parts))
    return texts


def _skips(text: str, rng: random.Random) -> list[tuple[int, int]]:
    skip = []
    for _ in range(rng.randrange(3)):
        a = rng.randrange(len(text) + 1)
        skip.append((a, min(len(text), a + rng.randrange(1, 8))))
    return skip


def test_the_digit_runs_and_spaced_groups_are_the_plain_patterns() -> None:
    runs = spaced_found = 0
    for text in _number_texts():
        want = plain_digit_runs(text)
        assert numbers.digit_runs.__wrapped__(text) == want, text
        spaced = [m.span() for m in PLAIN_SPACED.finditer(text)]
        assert [m.span() for m in numbers._SPACED.finditer(text)] == spaced, text
        runs += len(want)
        spaced_found += len(spaced)
        for token, _, _ in want:
            for part in (token, *token.split(",")):
                assert numbers.plain_value(part) == plain_value(part), part
    # Digits of other scripts and superscripts: a plain digit token is only ASCII digits.
    for token in [*_pack_strings(), *DIGITS, *SPACED, "²", "12²", "１２", "٣٤", "1 299", ""]:
        assert numbers.plain_value(token) == plain_value(token), token
    assert runs > 10000
    assert spaced_found > 1000


def test_every_number_and_money_read_is_the_plain_reading() -> None:
    rng = random.Random(48)
    numbers_found = money_found = 0
    plain_money = _plain_money()
    for text in _number_texts():
        words.forget_readings()
        skip = _skips(text, rng)
        for left_out in ([], skip):
            want = plain_all_numbers(text, left_out)
            assert numbers.all_numbers(text, left_out) == want, (text, left_out)
            for language in ("en", "de"):
                got = numbers.all_numbers(text, left_out, language)
                assert got == plain_all_numbers(text, left_out, language), (text, language)
            numbers_found += len(want)
            # The customer's product names hold some of the text's numbers.
            names = tuple(n.value for n in want if rng.random() < 0.3)
            for carry in (False, True):
                want_money = plain_money(text, left_out, names, carry=carry)
                got = money_module.money(text, left_out, names, carry=carry)
                assert got == want_money, (text, left_out, names)
                money_found += len(want_money)
    assert numbers_found > 20000
    assert money_found > 3000


def _plain_money() -> Callable[..., list[Any]]:
    """``money`` reading with the plain number reading and the plain money reading."""
    m = money_module

    def read(
        text: str, skip: list[tuple[int, int]], names: tuple[float, ...] = (), *, carry: bool
    ) -> list[Any]:
        numbers_read = plain_all_numbers(text, skip)
        if not numbers_read:
            return []
        spans = m._spans(text, m._SENTENCE_END)
        clauses = m._spans(text, m._w().CLAUSE_END)
        reach = spans
        if carry:
            reach = tuple((spans[i - 1][0] if i else a, b) for i, (a, b) in enumerate(spans))
        reading = m._Reading(text, spans, clauses, reach, m._w())
        found = []
        for n in numbers_read:
            money, bare = _plain_read(reading, n)
            if money is not None and not (bare and not n.spelled and n.value in names):
                found.append(money)
        return found

    return read


def _plain_read(read: Any, n: Number) -> tuple[Any, bool]:
    """The money of ``n``, as ``money._read`` read it before (promise and report searched first)."""
    m, Money, _ANY = money_module, money_module.Money, money_module._ANY
    text, w = read.text, read.words
    first, last = n.start, n.end
    if n.partner:
        first, last = min(first, n.partner[0]), max(last, n.partner[1])
    left = text[max(0, first - 24) : first]
    right_at = last
    if tail := w.RANGE_TAIL.match(text, last):
        right_at = tail.end()
    clause = m._around(read.clauses, n.start)
    promise = read.promise(m._around(read.sentences, n.start))
    reported = read.reported(clause)
    written = text[n.start : n.end]
    pct = w.PERCENT_AFTER.match(text, right_at)
    if pct or any(left.endswith(p) for p in w.PERCENT_BEFORE):
        written = text[n.start : pct.end()] if pct else written
        return Money(n.value, "percent", written, _ANY, True, promise, reported, n.start), False
    if off := w.TENTHS_AFTER.match(text, right_at):
        tenths = n.value if n.value < 10 else n.value / 10
        off_pct = round(100 - 10 * tenths, 2)
        found = Money(
            off_pct, "percent", text[n.start : off.end()], _ANY, True, True, reported, n.start
        )
        return found, False
    if grand := w.GRAND_AFTER.match(text, right_at):
        written = text[n.start : grand.end()]
        return Money(
            n.value * 1000, "amount", written, _ANY, True, promise, reported, n.start
        ), False
    if marker := m._currency(w, text, n, first, right_at):
        value = n.value / 100 if marker.word.upper() in w.hundredths else n.value
        written = text[min(marker.start, first) : max(marker.end, n.end)].strip()
        return Money(
            value, "amount", written, marker.currencies, True, promise, reported, n.start
        ), False
    if n.k:
        if m._credit_near(w, text, n, clause):
            return Money(n.value, "amount", written, _ANY, True, promise, reported, n.start), False
        return None, False
    if m._not_money(w, text, n, left, right_at):
        return None, False
    if m._credit_near(w, text, n, clause) or w.OFF_AFTER.match(text, right_at):
        return Money(n.value, "amount", written, _ANY, True, promise, reported, n.start), False
    small_word = n.spelled and (n.value < 10 or n.end - n.start == 1)
    carried = not promise and read.promise(m._around(read.reach, n.start))
    if carried and w.COUNTED.match(text, right_at):
        return None, False
    promise = promise or carried
    if small_word or not promise:
        return None, False
    return Money(n.value, "amount", written, _ANY, False, promise, reported, n.start), True

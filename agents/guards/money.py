"""Money in text: each amount with its currency, and whether its sentence promises money."""

from __future__ import annotations

import re
import sys
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Literal

from baton_kafka.agents import text_cache
from baton_kafka.agents.guards import words
from baton_kafka.agents.guards.numbers import Number, all_numbers
from baton_kafka.agents.guards.skipping import Sieved, skipping, starts
from baton_kafka.agents.languages import HAN_RE

_ANY: frozenset[str] = frozenset()  # "元", "块": a currency unit, which one is not said


@words.builder
class _Words:
    """The money and number words of every language pack, compiled."""

    def __init__(self) -> None:
        alt = words.alternation
        self.before = {
            k.upper(): frozenset(v) for k, v in words.table("money", "currency.before").items()
        }
        self.after = {
            k.upper(): frozenset(v) for k, v in words.table("money", "currency.after").items()
        }
        self.counts = {k: str(v) for k, v in words.table("money", "currency.counts").items()}
        self.hundredths = frozenset(
            e.upper() for e in words.entries("money", "currency.hundredths")
        )
        before = "|".join(
            re.escape(w) if not w[:1].isalpha() or words.cjk(w) else rf"(?<![A-Za-z]){re.escape(w)}"
            for w in sorted(words.table("money", "currency.before"), key=len, reverse=True)
        )
        self.BEFORE = skipping(rf"(?:{before})\s*[:：]?\s*$", re.I)
        after = "|".join(
            rf"{re.escape(w)}(?![A-Za-z])" if w[:1].isalpha() and not words.cjk(w) else re.escape(w)
            for w in sorted(words.table("money", "currency.after"), key=len, reverse=True)
        )
        self.AFTER = skipping(rf"\s*(?:{after})", re.I)
        self.PERCENT_AFTER = skipping(
            rf"\s*(?:{alt('money', 'amounts.percent', start=False)})", re.I
        )
        self.PERCENT_BEFORE = tuple(words.entries("money", "amounts.percent_before"))
        self.TENTHS_AFTER = re.compile(rf"\s*(?:{alt('money', 'amounts.tenths_paid')})")
        numerals = "".join(words.table("numbers", "scales")) + "一二两三四五六七八九十百"
        self.RANGE_TAIL = re.compile(
            rf"\s*(?:{alt('numbers', 'range')})\s*(?:\d+(?:[.,]\d+)?|[{numerals}]+)", re.I
        )
        lead = alt("numbers", "unit_adjectives")
        about = alt("numbers", "about")
        self.UNIT_AFTER = skipping(
            rf"\s*(?:(?:{lead})\s+)?(?:{about})?\s*(?:{alt('numbers', 'units', start=False)})", re.I
        )
        self.NOT_MONEY_BEFORE = skipping(
            rf"(?:{alt('numbers', 'not_money_before')})\s*[:#]?\s*$", re.I
        )
        ordinal = alt("numbers", "ordinal_suffixes", start=False)
        months = alt("numbers", "months")
        self.MONTH_BEFORE = skipping(rf"(?:{months})\.?\s*(?:\d{{1,2}}(?:{ordinal})?,?\s*)?$", re.I)
        self.YEAR_BEFORE = skipping(rf"(?:{alt('numbers', 'year_before')})\s*$", re.I)
        joiners = alt("numbers", "month_joiners")
        self.DATE_AFTER = re.compile(
            rf"\s*(?:{ordinal}|\.)?\s*(?:(?:{joiners})\s+)?(?:{months})", re.I
        )
        contrast = alt("money", "sentences.contrast", script="latin")
        contrast_cjk = alt("money", "sentences.contrast", script="cjk")
        # Every space starts a try of the contrast words: first told whether one can follow.
        first = starts(contrast, re.I)
        lead = f"(?=[{''.join(sorted(first))}])" if first else ""
        self.CLAUSE_END = skipping(
            r"(?<=[.!?])\s+|[。！？；;\n、]+|(?<!\d)[,，:：]|[,，:：](?!\d)"
            rf"|\s+{lead}(?:{contrast})\s+|{contrast_cjk}",
            re.I,
        )
        self.PROMISE = Sieved(alt("money", "promise.stems", start=False, end=False), re.I)
        self.CREDIT = Sieved(alt("money", "promise.credit", start=False, end=False), re.I)
        still = alt("money", "amounts.still_money")
        self.COUNTED = re.compile(rf"\s*(?!(?:{still}))(?:[^\W\d_]{{2,}}|[\u3400-\u9fff])", re.I)
        self.GRAND_AFTER = re.compile(rf"\s*(?:{alt('money', 'amounts.thousands')})", re.I)
        self.OFF_AFTER = re.compile(rf"\s*(?:{alt('money', 'amounts.off')})", re.I)
        self.REPORTED = Sieved(alt("money", "promise.reported"), re.I)
        self.COMMITS = Sieved(alt("money", "promise.commits"), re.I)


def _w() -> _Words:
    return words.compiled(_Words)


class _Current:
    """One of the packs' patterns as it is now (a shop's folder added changes it)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def search(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        """As ``re.Pattern.search``."""
        found: re.Match[str] | None = getattr(_w(), self.name).search(text, pos, endpos)
        return found

    def finditer(
        self, text: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> Iterator[re.Match[str]]:
        """As ``re.Pattern.finditer``."""
        found: Iterator[re.Match[str]] = getattr(_w(), self.name).finditer(text, pos, endpos)
        return found

    def now(self) -> Sieved:
        """The pattern as it is now, for one text's many searches."""
        found: Sieved = getattr(_w(), self.name)
        return found


# "(?<=[.!?])\s+|[。！？；;\n]+", led by the character every end starts with, consumed: the engine
# scans for it itself (it does not for a leading lookahead), and the look behind then tells which
# kind of end it starts.
_SENTENCE_END = re.compile(r"[\s。！？；;\n](?:(?<=[.!?]\s)\s*|(?<=[。！？；;\n])[。！？；;\n]*)")
PROMISE = _Current("PROMISE")  # a sentence with a match promises money
COMMITS = _Current("COMMITS")  # a clause with a match commits the shop
_CREDIT_GAP = 20
_LIST_MARK = re.compile(r"\s*[.)、]")
_DIGIT = re.compile(r"\d")

Kind = Literal["amount", "percent"]


@dataclass(frozen=True)
class Money:
    """One mention of money: an amount (or a percentage off), as a reader would take it."""

    value: float
    kind: Kind
    written: str  # as written, with its currency or unit ("80元", "$5k", "fifty dollars")
    currencies: frozenset[str]  # the currencies its marker allows; empty when not said
    marked: bool  # a currency, a credit word or a percent sign says it is money
    promise: bool  # its sentence promises money (refund, compensation, voucher, ...)
    reported: bool  # its clause reports what the customer asked for, not a promise
    at: int = 0  # where it starts in the text


Spans = tuple[tuple[int, int], ...]


def _spans(text: str, ends: re.Pattern[str]) -> Spans:
    spans, start = [], 0
    for m in ends.finditer(text):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(text)))
    return tuple(spans)


@text_cache.across_tickets(256)
def clauses_of(text: str) -> Spans:
    """Where each clause of ``text`` starts and ends (commas, "but", "aber", "但是" end one)."""
    return _spans(text, _w().CLAUSE_END)


# The offer check reads the sentences of the text the money reading just split.
@text_cache.across_tickets(256)
def sentences(text: str) -> Spans:
    """Where each sentence of ``text`` starts and ends."""
    return _spans(text, _SENTENCE_END)


def _around(spans: Spans, at: int) -> tuple[int, int]:
    return next((s for s in spans if s[0] <= at <= s[1]), (0, 0))


@dataclass(frozen=True)
class _Marker:
    currencies: frozenset[str]
    word: str
    start: int
    end: int


def _currency(w: _Words, text: str, n: Number, left_at: int, right_at: int) -> _Marker | None:
    """The currency symbol, code or word next to ``n``, and the span it and ``n`` cover."""
    before = w.BEFORE.search(text[max(0, left_at - 24) : left_at])
    if before:
        word = before.group().strip().rstrip(":：").strip()
        start = max(0, left_at - 24) + before.start()
        return _Marker(w.before.get(word.upper(), _ANY), word, start, n.end)
    after = w.AFTER.match(text, right_at)
    if after is None:
        return None  # and "4K" without any currency is a screen, not money
    word = after.group().strip()
    if word in w.counts:  # "一块手表": a unit that counts things unless money follows
        nxt = text[after.end() : after.end() + 1]
        if nxt and HAN_RE.match(nxt) and nxt not in w.counts[word]:
            return None
    return _Marker(w.after.get(word.upper(), _ANY), word, n.start, after.end())


def marked(text: str, start: int, end: int) -> bool:
    """A currency symbol, code or word stands right before ``start`` or right after ``end``."""
    w = _w()
    if w.BEFORE.search(text[max(0, start - 24) : start]):
        return True
    return w.AFTER.match(text, end) is not None


def _credit_near(w: _Words, text: str, n: Number, clause: tuple[int, int]) -> bool:
    """A credit word ("voucher", "积分", ...) right before or after ``n`` in its clause."""
    for m in w.CREDIT.finditer(text, clause[0], clause[1]):
        gap = text[n.end : m.start()] if m.start() >= n.end else text[m.end() : n.start]
        if len(gap) <= _CREDIT_GAP and not _DIGIT.search(gap):
            return True
    return False


def _not_money(w: _Words, text: str, n: Number, left: str, right_at: int) -> bool:
    """A quantity, duration, date, ordinal or list number: not an amount of money."""
    if w.UNIT_AFTER.match(text, right_at) or w.NOT_MONEY_BEFORE.search(left):
        return True
    if w.MONTH_BEFORE.search(left) or w.DATE_AFTER.match(text, right_at):
        return True
    year = n.value.is_integer() and 1900 <= n.value <= 2100 and n.end - n.start == 4
    if year and w.YEAR_BEFORE.search(left):
        return True
    line_start = left.rsplit("\n", 1)[-1].strip() in ("", "(")
    return line_start and _LIST_MARK.match(text, n.end) is not None


def money(
    text: str, skip: list[tuple[int, int]], names: Collection[float] = (), *, carry: bool = False
) -> list[Money]:
    """Every mention of money in ``text``, numbers inside ``skip`` (ids, tracking) left out.

    A number is money when a currency symbol, code or word stands next to it ("80元", "$5k",
    "fifty dollars"), when a credit word does ("a 20 voucher", "500积分"), when a percent sign
    or "折" follows it, or "grand" ("2 grand"), or, without any unit, when its sentence promises
    money ("we will refund 120"); with ``carry``, also when the sentence before it does ("We
    will refund you. You get 900."), unless a noun follows it ("2 filters"). Bare numbers in
    ``names`` (digits of the customer's own product names, "Pro 3") are names there.
    Durations, quantities, dates, sizes and list numbers are not money.
    """
    numbers = all_numbers(text, skip)
    if not numbers:
        return []
    read = _reading(text, carry)
    found = (read.money(n, names) for n in numbers)
    return [m for m in found if m is not None]


# The audit, the offer check and the cited facts read the same reply's money: its sentences,
# clauses and each number's reading are kept for the text, whatever each caller leaves out.
@words.per_text(maxsize=256)
def _reading(text: str, carry: bool) -> _Reading:
    spans = sentences(text)
    reach = spans
    if carry:  # a promise reaches a bare number in the next sentence
        reach = tuple((spans[i - 1][0] if i else a, b) for i, (a, b) in enumerate(spans))
    return _Reading(text, spans, None, reach, _w())


@dataclass
class _Reading:
    """One text's sentences and clauses, each searched once for a promise or a report however
    many numbers stand in it, and each number read as money once."""

    text: str
    sentences: Spans
    clauses: Spans | None  # None until a number's clause is asked (most are dates or counts)
    reach: Spans
    words: _Words
    _promise: dict[tuple[int, int], bool] = field(default_factory=dict)
    _reported: dict[tuple[int, int], bool] = field(default_factory=dict)
    # Each number's money, and whether it is a bare number (none where it is a name's).
    _money: dict[Number, tuple[Money | None, bool]] = field(default_factory=dict)

    def money(self, n: Number, names: Collection[float]) -> Money | None:
        """``n`` as money, or None; a bare number of ``names`` is a name."""
        if (hit := self._money.get(n)) is None:
            hit = self._money[n] = _read(self, n)
        found, bare = hit
        if bare and not n.spelled and n.value in names:
            return None
        return found

    def clause(self, at: int) -> tuple[int, int]:
        """Where the clause that holds ``at`` starts and ends."""
        if self.clauses is None:
            self.clauses = clauses_of(self.text)
        return _around(self.clauses, at)

    def promise(self, span: tuple[int, int]) -> bool:
        """Whether ``text[span]`` promises money."""
        if (hit := self._promise.get(span)) is None:
            hit = self._promise[span] = bool(self.words.PROMISE.search(self.text, *span))
        return hit

    def reported(self, clause: tuple[int, int]) -> bool:
        """Whether the clause reports what the customer asked for rather than commits."""
        if (hit := self._reported.get(clause)) is None:
            text = self.text
            w = self.words
            hit = bool(w.REPORTED.search(text, *clause)) and not w.COMMITS.search(text, *clause)
            self._reported[clause] = hit
        return hit


def _read(read: _Reading, n: Number) -> tuple[Money | None, bool]:
    """``n`` as money, or None when it is a quantity, a date or a bare number without a
    promise; and whether it is a bare number (which a name's number is not)."""
    text, w = read.text, read.words
    first, last = n.start, n.end
    if n.partner:  # a range: the unit or currency of either end applies to both
        first, last = min(first, n.partner[0]), max(last, n.partner[1])
    left = text[max(0, first - 24) : first]
    right_at = last
    if tail := w.RANGE_TAIL.match(text, last):
        right_at = tail.end()
    written = text[n.start : n.end]

    def said(kind: Kind, value: float, written: str, currencies: frozenset[str]) -> Money:
        # Whether its sentence promises and its clause reports is searched only for money.
        promise = read.promise(_around(read.sentences, n.start))
        reported = read.reported(read.clause(n.start))
        return Money(value, kind, written, currencies, True, promise, reported, n.start)

    pct = w.PERCENT_AFTER.match(text, right_at)
    if pct or left.endswith(w.PERCENT_BEFORE):
        written = text[n.start : pct.end()] if pct else written
        return said("percent", n.value, written, _ANY), False
    if off := w.TENTHS_AFTER.match(text, right_at):
        # "8折" (pay 80%) is 20% off, and always an offer of money.
        tenths = n.value if n.value < 10 else n.value / 10
        off_pct = round(100 - 10 * tenths, 2)
        reported = read.reported(read.clause(n.start))
        found = Money(
            off_pct, "percent", text[n.start : off.end()], _ANY, True, True, reported, n.start
        )
        return found, False
    if grand := w.GRAND_AFTER.match(text, right_at):
        return said("amount", n.value * 1000, text[n.start : grand.end()], _ANY), False
    if marker := _currency(w, text, n, first, right_at):
        value = n.value / 100 if marker.word.upper() in w.hundredths else n.value
        written = text[min(marker.start, first) : max(marker.end, n.end)].strip()
        return said("amount", value, written, marker.currencies), False
    if n.k:  # "1K in store credit" is money; "a 4K screen" is not
        if _credit_near(w, text, n, read.clause(n.start)):
            return said("amount", n.value, written, _ANY), False
        return None, False
    if _not_money(w, text, n, left, right_at):
        return None, False
    if _credit_near(w, text, n, read.clause(n.start)) or w.OFF_AFTER.match(text, right_at):
        return said("amount", n.value, written, _ANY), False
    small_word = n.spelled and (n.value < 10 or n.end - n.start == 1)
    promise = read.promise(_around(read.sentences, n.start))
    carried = not promise and read.promise(_around(read.reach, n.start))
    if carried and w.COUNTED.match(text, right_at):
        return None, False  # "We will refund you. Pack the 1 kettle and 2 filters."
    promise = promise or carried
    if small_word or not promise:
        return None, False
    reported = read.reported(read.clause(n.start))
    return Money(n.value, "amount", written, _ANY, False, promise, reported, n.start), True


_w()  # compiled at import, as module patterns are; again only when a shop adds words

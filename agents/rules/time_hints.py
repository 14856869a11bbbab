"""Time hints ("last month", "上周", "3 days ago"): found in a text, scored against a date.

The words are the language packs' (``<lang>/recall.toml``, table ``time``): a text is read with
its language's hints and English's and Chinese's, as the other offline rules read it.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from baton_kafka.agents import packs
from baton_kafka.agents.languages import KANA
from baton_kafka.agents.rules.phrases import ALWAYS, written_in
from baton_kafka.agents.rules.screen import ascii_starts

CONCERN = "recall"
# A count no word of the pack spells ("几", "several"): a few.
_FEW = 3


@dataclass(frozen=True, eq=False)
class Hint:
    """One hint pattern: its unit and count, or (both None) read from groups 1 and 2."""

    rx: re.Pattern[str]
    unit: str | None
    count: int | None
    words: Mapping[str, Any]  # the pack's ``time`` table it came from: its numbers and units


def _count(words: Mapping[str, Any]) -> str:
    if words.get("count"):
        return str(words["count"])
    return "|".join([r"\d+", *sorted(words.get("numbers", {}), key=len, reverse=True)])


@functools.cache
def _language(language: str) -> tuple[tuple[Hint, ...], tuple[Hint, ...]]:
    """``language``'s counted hints ("3 days ago") and fixed ones ("yesterday"), compiled."""
    words = packs.pack(CONCERN, language).get("time", {})
    count = _count(words)
    counted = tuple(
        Hint(re.compile(p.replace("{count}", count), re.I), None, None, words)
        for p in words.get("ago", [])
    )
    fixed = tuple(
        Hint(re.compile(h["rx"], re.I), str(h["unit"]), int(h["count"]), words)
        for h in words.get("hints", [])
    )
    return counted, fixed


def _joined(languages: tuple[str, ...]) -> tuple[Hint, ...]:
    """The hints of ``languages``: every counted one first, then the fixed ones, in order."""
    read = [_language(lang) for lang in languages]
    return tuple(h for counted, _ in read for h in counted) + tuple(
        h for _, fixed in read for h in fixed
    )


def _chosen(language: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*ALWAYS, language)))


# Every hint is written in Latin letters or in Han/kana, and a text with none of one kind is
# not searched for that kind's hints (each search a scan of the text); the hints keep their
# order, the first of two found at one place being the one kept.
_CJK = re.compile(f"[\u4e00-\u9fff{KANA}]")
_LATIN = re.compile(r"[a-zA-Z]")


@functools.cache
def hints(language: str) -> dict[tuple[bool, bool], tuple[Hint, ...]]:
    """The hints a text in ``language`` is read with (its own, English's and Chinese's), by
    whether the text has Latin letters and whether it has Han or kana."""
    every = _joined(_chosen(language))
    return {
        (latin, cjk): tuple(h for h in every if (cjk if _CJK.search(h.rx.pattern) else latin))
        for latin in (False, True)
        for cjk in (False, True)
    }


@functools.cache
def every_hint() -> tuple[Hint, ...]:
    """The hints of every language with a pack, English's and Chinese's first."""
    return _joined(tuple(dict.fromkeys((*ALWAYS, *packs.languages(CONCERN)))))


# The lower-case starts of each hint's matches in an ASCII text (None: not told, "3 days ago"):
# in such a text a hint is searched for only from the first of its starts the text has.
@functools.cache
def _starts(rx: re.Pattern[str]) -> frozenset[str] | None:
    return ascii_starts(rx)


def warm() -> None:
    """Compile every language's hints (and their ASCII starts) now, not for a ticket."""
    for language in packs.languages(CONCERN):
        for tried in hints(language).values():
            for h in tried:
                _starts(h.rx)
    every_hint()


warm()


def extract_time_hint(text: str, language: str | None = None) -> str | None:
    """The first time reference in ``text`` ("last month", "上周", "3 days ago"), or None;
    read in ``language`` (the text's own when not given) and English and Chinese."""
    tried_in = hints(language or written_in(text))
    text = unicodedata.normalize("NFKC", text)
    best: re.Match[str] | None = None
    tried = tried_in[_LATIN.search(text) is not None, _CJK.search(text) is not None]
    low = text.lower() if text.isascii() else None
    for hint in tried:
        match = _first(hint.rx, text, low)
        if match and (best is None or match.start() < best.start()):
            best = match
    return best.group(0).strip().lower() if best else None


def _first(pattern: re.Pattern[str], text: str, low: str | None) -> re.Match[str] | None:
    """``pattern.search(text)``, from the first start of its matches in ``low`` (``text`` in
    lower case when it is ASCII, else None: searched from its beginning)."""
    starts = _starts(pattern) if low is not None else None
    if low is None or starts is None:
        return pattern.search(text)
    at = [i for i in map(low.find, starts) if i >= 0]
    # No match begins sooner; what comes before still counts for a "\b".
    return pattern.search(text, min(at)) if at else None


def _number(raw: str, words: Mapping[str, Any]) -> int:
    """The count ``raw`` spells in the pack's ``words``: digits, a word, or tens ("二十")."""
    if raw.isdigit():
        return int(raw)
    numbers, digits, tens = words.get("numbers", {}), words.get("digits", {}), words.get("tens")
    if raw in numbers:
        return int(numbers[raw])
    if tens and tens in raw:
        high, _, low = raw.partition(tens)
        return int(digits.get(high, 1)) * 10 + int(digits.get(low, 0))
    return int(digits.get(raw, _FEW))


def _parse_hint(hint: str) -> tuple[str, int] | None:
    """The unit and count of a hint: by the first pattern that is the whole hint (an extracted
    hint is one pattern's match: "一昨日", not the "昨日" in it), else the first found in it."""
    text = unicodedata.normalize("NFKC", hint)
    every = every_hint()
    whole = next(((h, m) for h in every if (m := h.rx.fullmatch(text))), None)
    found = whole or next(((h, m) for h in every if (m := h.rx.search(text))), None)
    if found is not None:
        h, match = found
        if h.unit is not None and h.count is not None:
            return h.unit, h.count
        raw_count, raw_unit = match.group(1).lower(), match.group(2).lower()
        unit = h.words.get("units", {}).get(raw_unit)
        return (str(unit), _number(raw_count, h.words)) if unit else None
    return None


def _month_start(year: int, month: int) -> date:
    year, month = year + (month - 1) // 12, (month - 1) % 12 + 1
    return date(year, month, 1)


def _window(unit: str, n: int, today: date) -> tuple[date, date, int]:
    """Dates the hint points at (first, last) and how many days it takes to fade out."""
    if unit == "day":
        day = today - timedelta(days=n)
        return day, day, max(3, n)
    if unit == "week":
        if n == 0:
            return today - timedelta(days=today.weekday()), today, 7
        start = today - timedelta(days=today.weekday() + 7 * n)
        return start, start + timedelta(days=6), 7
    if unit == "month":
        start = _month_start(today.year, today.month - n)
        end = _month_start(start.year, start.month + 1) - timedelta(days=1)
        return start, min(end, today), 30
    if unit == "year":
        return date(today.year - n, 1, 1), min(date(today.year - n, 12, 31), today), 180
    return today - timedelta(days=14), today, 14


def _as_utc_date(moment: datetime) -> date:
    return (moment.astimezone(UTC) if moment.tzinfo else moment).date()


def time_score(time_hint: str | None, ordered_at: datetime, now: datetime) -> float:
    """How well an order date fits a time hint, 0..1; 0.5 when there is no usable hint."""
    parsed = _parse_hint(time_hint) if time_hint else None
    if parsed is None:
        return 0.5
    try:
        first, last, fade = _window(*parsed, _as_utc_date(now))
    except (ValueError, OverflowError):
        return 0.5  # "5000 years ago" names no date a calendar holds: no usable hint
    ordered = _as_utc_date(ordered_at)
    if first <= ordered <= last:
        return 1.0
    distance = (first - ordered).days if ordered < first else (ordered - last).days
    return round(max(0.05, 1.0 - distance / fade), 4)


def day_of(iso_date: str) -> datetime | None:
    """Noon UTC of an ISO date (the facts' ``today``), or None when it is empty or invalid."""
    try:
        return datetime.combine(date.fromisoformat(iso_date[:10]), time(12), UTC)
    except ValueError:
        return None

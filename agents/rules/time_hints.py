"""Time hints ("last month", "上周", "3 days ago"): found in a text, scored against a date."""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, date, datetime, time, timedelta

from baton_kafka.agents.rules.screen import ascii_starts

_EN_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "couple of": 2, "a few": 3, "few": 3, "several": 3,
}  # fmt: skip
_ZH_DIGITS = {
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_UNIT_WORDS = {
    "day": "day", "days": "day", "week": "week", "weeks": "week", "month": "month",
    "months": "month", "year": "year", "years": "year", "天": "day", "日": "day",
    "周": "week", "星期": "week", "个星期": "week", "礼拜": "week", "个礼拜": "week",
    "个月": "month", "月": "month", "年": "year",
}  # fmt: skip
_EN_COUNT = "|".join([r"\d+", *sorted(_EN_NUMBERS, key=len, reverse=True)])
_ZH_COUNT = r"\d+|[一二两三四五六七八九十几]+"

# (pattern, unit, count); count None means it is read from group 1, unit None from group 2.
_HINTS: tuple[tuple[re.Pattern[str], str | None, int | None], ...] = tuple(
    (re.compile(p, re.I), unit, n)
    for p, unit, n in (
        (rf"\b({_EN_COUNT})\s+(days?|weeks?|months?|years?)\s+ago\b", None, None),
        (
            rf"({_ZH_COUNT})\s*(天|日|个星期|星期|个礼拜|礼拜|周|个月|年)\s*(?:前|之前|以前)",
            None,
            None,
        ),
        (r"\bthe day before yesterday\b", "day", 2),
        (r"\byesterday\b", "day", 1),
        (r"\btoday\b|\bthis morning\b|\bearlier today\b", "day", 0),
        (r"\blast week(?:end)?\b", "week", 1),
        (r"\bthis week\b", "week", 0),
        (r"\blast month\b", "month", 1),
        (r"\bthis month\b", "month", 0),
        (r"\blast year\b", "year", 1),
        (r"\bthis year\b", "year", 0),
        (r"\brecently\b|\bthe other day\b|\bfew days back\b", "recent", 0),
        (r"大前天", "day", 3),
        (r"前天", "day", 2),
        (r"昨天|昨日", "day", 1),
        (r"今天|今日", "day", 0),
        (r"上周|上个?星期|上个?礼拜|上週", "week", 1),
        (r"这周|本周|这个?星期|这个?礼拜", "week", 0),
        (r"上个?月", "month", 1),
        (r"这个月|本月", "month", 0),
        (r"前年", "year", 2),
        (r"去年", "year", 1),
        (r"今年", "year", 0),
        (r"最近|前几天|前些天|前阵子", "recent", 0),
    )
)


# Every hint is written in English letters or in Han characters, and a text with none of one
# kind is not searched for that kind's hints (each search a scan of the text); the hints keep
# their order, the first of two found at one place being the one kept.
_HAN = re.compile(r"[\u4e00-\u9fff]")
_LATIN = re.compile(r"[a-zA-Z]")
_BY_SCRIPT: dict[tuple[bool, bool], tuple[re.Pattern[str], ...]] = {
    (latin, han): tuple(p for p, _, _ in _HINTS if (han if _HAN.search(p.pattern) else latin))
    for latin in (False, True)
    for han in (False, True)
}


# The lower-case starts of each hint's matches in an ASCII text (None: not told, "3 days ago"):
# in such a text a hint is searched for only from the first of its starts the text has.
_STARTS = {p: ascii_starts(p) for p, _, _ in _HINTS}


def extract_time_hint(text: str) -> str | None:
    """The first time reference in ``text`` ("last month", "上周", "3 days ago"), or None."""
    text = unicodedata.normalize("NFKC", text)
    best: re.Match[str] | None = None
    tried = _BY_SCRIPT[_LATIN.search(text) is not None, _HAN.search(text) is not None]
    low = text.lower() if text.isascii() else None
    for pattern in tried:
        match = _first(pattern, text, low)
        if match and (best is None or match.start() < best.start()):
            best = match
    return best.group(0).strip().lower() if best else None


def _first(pattern: re.Pattern[str], text: str, low: str | None) -> re.Match[str] | None:
    """``pattern.search(text)``, from the first start of its matches in ``low`` (``text`` in
    lower case when it is ASCII, else None: searched from its beginning)."""
    starts = _STARTS[pattern] if low is not None else None
    if low is None or starts is None:
        return pattern.search(text)
    at = [i for i in map(low.find, starts) if i >= 0]
    # No match begins sooner; what comes before still counts for a "\b".
    return pattern.search(text, min(at)) if at else None


def _zh_number(raw: str) -> int:
    if raw.isdigit():
        return int(raw)
    if raw == "几":
        return 3
    if "十" in raw:
        tens, _, ones = raw.partition("十")
        return _ZH_DIGITS.get(tens, 1) * 10 + _ZH_DIGITS.get(ones, 0)
    return _ZH_DIGITS.get(raw, 3)


def _parse_hint(hint: str) -> tuple[str, int] | None:
    for pattern, unit, count in _HINTS:
        match = pattern.search(unicodedata.normalize("NFKC", hint))
        if not match:
            continue
        if unit is not None and count is not None:
            return unit, count
        raw_count, raw_unit = match.group(1).lower(), match.group(2).lower()
        number = int(raw_count) if raw_count.isdigit() else _EN_NUMBERS.get(raw_count)
        return _UNIT_WORDS[raw_unit], number if number is not None else _zh_number(raw_count)
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

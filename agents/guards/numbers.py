"""Reading numbers in text: digits with any separators, and number words (English, Chinese, and
every language pack's ``numbers.toml``)."""

from __future__ import annotations

import operator
import re
from collections.abc import Iterator
from dataclasses import dataclass

from baton_kafka.agents import packs, text_cache
from baton_kafka.agents.guards import numerals, words

# An ASCII run of letters and digits, joined by the separators ids, dates and decimals use.
# CJK characters end a run, so "补偿您80元" reads 80 (a \w boundary would not: 您 is a word char).
RUN = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]+(?:[-_./:,'’][A-Za-z0-9]+)*(?![A-Za-z0-9])")
# The runs of ``RUN`` that hold a digit are found from their first digit, which the engine finds
# without trying each letter: a run reaches back from it over letters, digits and the single
# separators between them (read in the reversed text, as ``_BACK``), and forward as ``RUN`` does.
_A_DIGIT = re.compile("[0-9]")
_BACK = re.compile(r"[A-Za-z0-9]*(?:[-_./:,'’][A-Za-z0-9]+)*")
_PLAIN = re.compile(
    r"\d{1,3}(?:,\d{3})+(?:\.\d+)?"  # 1,299.00
    r"|\d{1,3}(?:\.\d{3})+,\d{1,2}"  # 1.299,00
    r"|\d+,\d{2}"  # 59,00
    r"|\d+(?:\.\d+)?"
)
_RANGE = re.compile(r"(\d+(?:\.\d+)?)[-–](\d+(?:\.\d+)?)")
_THOUSANDS_K = re.compile(r"(\d+(?:\.\d+)?)[kK]")
_CODE = re.compile("[A-Z]{3}")
_NOT_FIGURE = re.compile(r"[^\d.,]")
_SPACES = re.compile(r"[ \u00a0\u2009\u202f]")


@words.builder
def _codes() -> re.Pattern[str]:
    """A currency code glued to an amount ("RMB2000", "500USD"): the packs' three-letter codes."""
    codes = [c for c in words.table("money", "currency.after") if _CODE.fullmatch(c)]
    either = "|".join(codes) or "(?!)"
    return re.compile(rf"(?:(?i:{either}))(\d[\d,.]*)|(\d[\d,.]*)(?:(?i:{either}))")


@words.builder
def _scales() -> tuple[re.Pattern[str] | None, dict[str, float]]:
    """Scale words written right after digits ("5万", "1.5千"), unless a unit follows ("千克")."""
    scales = {k: float(v) for k, v in words.table("numbers", "scales").items()}
    if not scales:
        return None, {}
    not_before = words.table("numbers", "scales_not_before")
    parts = [
        re.escape(k) + (f"(?![{re.escape(str(not_before[k]))}])" if not_before.get(k) else "")
        for k in sorted(scales, key=len, reverse=True)
    ]
    return re.compile(f"({'|'.join(parts)})"), scales


@words.builder
def _grouping() -> re.Pattern[str] | None:
    """Digits grouped by the packs' other thousands separators ("1'000")."""
    marks = [
        g for g in words.entries("numbers", "group") if g not in (",", ".") and not g.isspace()
    ]
    if not marks:
        return None
    sep = "|".join(marks)
    return re.compile(rf"\d{{1,3}}(?:(?:{sep})\d{{3}})+(?:[.,]\d{{1,2}})?")


# Led by a digit, so the engine skips to the digits at once; the look behind then tests the
# character before that first digit.
_SPACED = re.compile(
    r"\d(?<![A-Za-z0-9.,\-]\d)\d{0,2}(?:[ \u00a0\u2009\u202f]\d{3})+(?:[.,]\d{1,2})?"
    r"(?![A-Za-z0-9])"
)


@dataclass(frozen=True)
class Number:
    """One number read from text, with where it is: ``text[start:end]`` is how it is written."""

    value: float
    start: int
    end: int
    spelled: bool = False
    # Set on both ends of a range ("5-7 days", "¥50-100"): the other end's span.
    partner: tuple[int, int] | None = None
    k: bool = False  # written with a thousands "k" ("$5k"): money only with a currency symbol


_EUROPEAN = re.compile(r"\d{1,3}(?:\.\d{3})+,\d{1,2}")
_DECIMAL_COMMA = re.compile(r"\d+,\d{2}")
_LETTER = re.compile(r"[A-Za-z]")
_DIGIT = re.compile(r"\d")


def plain_value(token: str) -> float | None:
    """The value of a digits-only token with thousands separators or a decimal comma, or None."""
    if token.isdigit() and token.isascii():  # most tokens: plain digits, read as they are
        return float(token)
    if not _PLAIN.fullmatch(token):
        grouped = words.compiled(_grouping)
        if grouped is None or not grouped.fullmatch(token):
            return None
        token = _NOT_FIGURE.sub("", token)
        if not _PLAIN.fullmatch(token):
            return None
    if _EUROPEAN.fullmatch(token):
        token = token.replace(".", "").replace(",", ".")
    elif _DECIMAL_COMMA.fullmatch(token):
        token = token.replace(",", ".")
    return float(token.replace(",", ""))


def _with_scale(text: str, number: Number) -> Number:
    """``5万`` / ``1.5千``: the Chinese scale word after digits multiplies them."""
    after, scales = words.compiled(_scales)
    scale = after.match(text, number.end) if after is not None else None
    if not scale:
        return number
    value = number.value * scales[scale.group(1)]
    return Number(value, number.start, scale.end(), partner=number.partner)


def digit_numbers(text: str, skip: list[tuple[int, int]]) -> Iterator[Number]:
    """Digit numbers: ``80``, ``1,299.00``, ``1.299,00``, ``1 299``, ranges, ``5k``, ``1.5万``.

    Tokens overlapping ``skip`` (ids, tracking numbers, names already read) are left out;
    letter-and-digit tokens ("XM6", "4K", "1.7L") are names, never numbers.
    """
    return iter(_digits(text, skip))


def _digits(text: str, skip: list[tuple[int, int]]) -> list[Number]:
    spaced, runs = _digits_read(text)
    taken = list(skip)
    found = []
    for start, end, number in spaced:
        if _free(start, end, taken):
            taken.append((start, end))
            found.append(number)
    if not taken:  # nothing left out: every run's numbers
        found += [n for _, _, numbers in runs for n in numbers]
        return found
    for start, end, numbers in runs:
        if _free(start, end, taken):
            found += numbers
    return found


def _free(start: int, end: int, taken: list[tuple[int, int]]) -> bool:
    """Whether ``start:end`` overlaps none of ``taken``."""
    # A plain loop, not all() over a generator: it runs for each of a text's runs.
    for a, b in taken:  # noqa: SIM110
        if end > a and start < b:
            return False
    return True


_Spaced = tuple[tuple[int, int, Number], ...]
_Runs = tuple[tuple[int, int, tuple[Number, ...]], ...]


# Every guard reads a reply's numbers, each with its own ids and names to leave out: the
# reading of the text is made once, what a caller leaves out is applied to it after.
@words.per_text(maxsize=256)
def _digits_read(text: str) -> tuple[_Spaced, _Runs]:
    """Each digit group written with spaces ("1 299") that has a value, and each run's numbers,
    with where they stand."""
    spaced = []
    for m in _SPACED.finditer(text):
        value = plain_value(_SPACES.sub("", m.group()))
        if value is not None:
            spaced.append((m.start(), m.end(), _with_scale(text, Number(value, *m.span()))))
    runs = tuple(
        (start, end, tuple(_read_run(text, token, start))) for token, start, end in digit_runs(text)
    )
    return tuple(spaced), runs


# The id finder and the number reader go through the same text's runs, one after the other.
@text_cache.across_tickets(256)
def digit_runs(text: str) -> tuple[tuple[str, int, int], ...]:
    """Every run of ``text`` (``RUN``) with a digit in it, and where it starts and ends."""
    found = []
    size = len(text)
    back = ""
    at = 0
    while digit := _A_DIGIT.search(text, at):
        back = back or text[::-1]
        # Both always match: ``_BACK`` may match nothing, and a run starts at a letter or digit.
        start = size - _BACK.match(back, size - digit.start()).end()  # type: ignore[union-attr]
        end = RUN.match(text, start).end()  # type: ignore[union-attr]
        found.append((text[start:end], start, end))
        at = end
    return tuple(found)


def _read_run(text: str, token: str, at: int) -> Iterator[Number]:
    value = plain_value(token)
    if value is not None:
        yield _with_scale(text, Number(value, at, at + len(token)))
        return
    if r := _RANGE.fullmatch(token):
        if float(r.group(1)) >= float(r.group(2)):
            return  # "2026-11": a year and a month, not a range
        low, high = r.span(1), r.span(2)
        a = (at + low[0], at + low[1])
        b = (at + high[0], at + high[1])
        yield Number(float(r.group(1)), *a, partner=b)
        yield _with_scale(text, Number(float(r.group(2)), *b, partner=a))
        return
    if glued := words.compiled(_codes).fullmatch(token):
        group = 1 if glued.group(1) else 2
        if (v := plain_value(glued.group(group))) is not None:
            yield Number(v, at + glued.start(group), at + glued.end(group))
        return
    if k := _THOUSANDS_K.fullmatch(token):
        yield Number(float(k.group(1)) * 1000, at, at + len(token), k=True)
        return
    if "," in token and not _LETTER.search(token):
        # "1,2,3" or "5,10": a list, each part read on its own.
        offset = 0
        for part in token.split(","):
            if part and (v := plain_value(part)) is not None:
                yield Number(v, at + offset, at + offset + len(part))
            offset += len(part) + 1


def english_numbers(text: str) -> Iterator[Number]:
    """Spelled-out English numbers: "fifty", "one hundred and twenty", "a thousand"."""
    return (Number(v, a, b, spelled=True) for v, a, b in numerals.english_numbers(text))


def chinese_numbers(text: str) -> Iterator[Number]:
    """Chinese numerals ("五十", "一百二十", "两百"), idioms like "十分" and "千万" left out."""
    return (Number(v, a, b, spelled=True) for v, a, b in numerals.chinese_numbers(text))


english_any = numerals.english_any
zh_value = numerals.zh_value


# "1.000" with a currency: a thousand in German or Spanish, one in English.
_DOT_THOUSANDS = re.compile(r"\d{1,3}(?:\.\d{3})+")
_READ_IN = packs.LANGUAGES  # the shipped languages, whose separators differ
_START = operator.attrgetter("start")


@text_cache.across_tickets(2048)
def _language(text: str) -> str | None:
    """The language of ``text`` (for the words and separators that depend on it)."""
    from baton_kafka.agents.languages import detect

    return detect(text, _READ_IN)


def _grouped(text: str, n: Number, language: str | None) -> Number:
    """``n`` read with ``language``'s separators ("1.000" is 1000 where "." groups thousands)."""
    if language is None or n.spelled or not _DOT_THOUSANDS.fullmatch(text[n.start : n.end]):
        return n
    from babel.numbers import NumberFormatError, get_group_symbol, parse_decimal

    try:
        if get_group_symbol(language) != ".":
            return n
        value = float(parse_decimal(text[n.start : n.end], locale=language, strict=True))
    except (NumberFormatError, ValueError, LookupError):
        return n
    return Number(value, n.start, n.end, partner=n.partner, k=n.k)


def all_numbers(
    text: str, skip: list[tuple[int, int]], language: str | None = None
) -> list[Number]:
    """Every number in ``text`` outside ``skip``, in reading order: digits (with the
    separators of ``language``, the text's own when not given), and number words in English,
    Chinese and every language pack's number words."""
    if language is None:
        language = _own_language(text)
    digits = _digits(text, skip)
    if language is not None:  # else every number reads as it is written
        digits = [_grouped(text, n, language) for n in digits]
    return sorted([*digits, *_words_read(text, language)], key=_START)


@words.per_text(maxsize=256)
def _own_language(text: str) -> str | None:
    """The language ``text`` is read in, only where the reading depends on it."""
    from baton_kafka.agents.guards.number_words import holds_ambiguous

    if _dot_thousands(text) or holds_ambiguous(text):
        return _language(text)
    return None


def _dot_thousands(text: str) -> bool:
    """Whether ``text`` writes digits grouped by dots ("1.000")."""
    if not text.isascii():  # a digit of another script is a digit to the pattern too
        return _DOT_THOUSANDS.search(text) is not None
    # In an ASCII text such digits stand within one of its runs, each already read for numbers:
    # its few runs with a dot are searched instead of the whole text.
    return any("." in run and _DOT_THOUSANDS.search(run) for run, _, _ in digit_runs(text))


@words.per_text(maxsize=256)
def _words_read(text: str, language: str | None) -> tuple[Number, ...]:
    """The number words of ``text``: English, Chinese and every language pack's."""
    from baton_kafka.agents.guards.number_words import spelled_numbers

    return (
        *english_numbers(text),
        *chinese_numbers(text),
        *(Number(v, a, b, spelled=True) for v, a, b in spelled_numbers(text, language)),
    )

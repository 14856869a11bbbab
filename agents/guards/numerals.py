"""Spelled numbers read by the packs' tables: English words ("one hundred and twenty") and
Chinese and Japanese numerals ("一百二十", "两百", "1.5万" is read by the digit reader)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from baton_kafka.agents.guards import whole_words, words

Spelled = tuple[float, int, int]  # a number's value, and where it is written: text[start:end]


# --- English number words (agents/packs/en/numbers.toml, table "spelled") ---------------------


@dataclass(frozen=True)
class _English:
    word_value: dict[str, int]
    scale_value: dict[str, int]
    tens: frozenset[str]
    hundred: str
    joiner: str
    article: str
    any: re.Pattern[str]
    # Each word ``_en_groups`` reads: a number word, the joiner or the article, whole.
    read: re.Pattern[str]
    # ``any`` told from an ASCII text's words, read once for every number screen (None: read it).
    screen: re.Pattern[str] | None


@words.builder
def _english() -> _English:
    spelled = words.table("numbers", "spelled")
    units = [str(w).lower() for w in spelled.get("units", [])]
    tens = [str(w).lower() for w in spelled.get("tens", [])]
    value = {w: i for i, w in enumerate(units)} | {w: 20 + 10 * i for i, w in enumerate(tens)}
    scales = {str(k).lower(): int(v) for k, v in dict(spelled.get("scales", {})).items()}
    known = [*value, *scales]
    first = re.escape("".join(sorted({w[0] for w in known})))
    pattern = "|".join(map(re.escape, known)) or "(?!)"
    joiner = str(spelled.get("joiner", "")).lower()
    article = str(spelled.get("article", "")).lower()
    # A word is a run of ASCII letters, in any case: ASCII ones only ("ſix" is no "six").
    read = frozenset(w for w in (*known, joiner, article) if w.isascii() and w.isalpha())
    lead = "".join(sorted({w[0] for w in read}))
    whole = f"(?=[{lead}])(?<![A-Za-z])(?:{whole_words.tree(read)})(?![A-Za-z])"
    return _English(
        value,
        scales,
        frozenset(tens),
        str(spelled.get("hundred", "")).lower(),
        joiner,
        article,
        re.compile(rf"(?<![A-Za-z])(?=[{first}])(?:{pattern})(?![A-Za-z])", re.I),
        re.compile(whole if read else "(?!)", re.I | re.A),
        whole_words.screen([(known, False)]),
    )


def english_any() -> re.Pattern[str]:
    """Any English number word, to skip a text without one at once."""
    return words.compiled(_english).any


_EN_GAP = re.compile(r"[\s-]+")


def _en_groups(
    text: str, en: _English, reading: re.Pattern[str] | None = None
) -> Iterator[list[re.Match[str]]]:
    """Runs of number words that make one number: "one hundred and twenty", "twenty-five"
    (the words found by ``reading``, by default those that may stand in a number)."""
    _WORD_VALUE, _SCALE_VALUE, _TENS = en.word_value, en.scale_value, en.tens
    group: list[re.Match[str]] = []
    # Only the words that may stand in a number are read: any other word between two of them
    # leaves a gap that is not a space or a hyphen, which ends the number as that word would.
    for m in (reading or en.read).finditer(text):
        word = m.group().lower()
        previous = group[-1].group().lower() if group else ""
        joined = bool(group) and _EN_GAP.fullmatch(text[group[-1].end() : m.start()])
        if word in _WORD_VALUE or word in _SCALE_VALUE:
            # "one two" are two numbers; "twenty five" and "hundred and five" are one.
            small = _WORD_VALUE.get(word, 10) < 10
            follows = previous in (*_SCALE_VALUE, en.joiner, en.article) or (
                previous in _TENS and small
            )
            if joined and (follows or word in _SCALE_VALUE):
                group.append(m)
                continue
        elif word == en.joiner and joined and previous in _SCALE_VALUE:
            group.append(m)
            continue
        if group:
            yield group
        group = [m] if word in _WORD_VALUE or word in _SCALE_VALUE or word == en.article else []
    if group:
        yield group


def _en_value(parts: list[str], en: _English) -> float:
    total, current = 0, 0
    for word in parts:
        if word in en.word_value:
            current += en.word_value[word]
        elif word == en.hundred:
            current = (current or 1) * en.scale_value[word]
        elif word in en.scale_value:
            total += (current or 1) * en.scale_value[word]
            current = 0
    return float(total + current)


def english_numbers(text: str) -> Iterator[Spelled]:
    """Spelled-out English numbers: "fifty", "one hundred and twenty", "a thousand"."""
    en = words.compiled(_english)
    if not whole_words.holds(en.any, en.screen, text):
        return
    for group in _en_groups(text, en):
        while group and group[-1].group().lower() == en.joiner:
            group = group[:-1]
        parts = [m.group().lower() for m in group]
        if parts and parts[0] == en.article and (len(parts) == 1 or parts[1] not in en.scale_value):
            continue  # "a" alone, or "a" before anything but "hundred", "thousand", ...
        yield _en_value(parts, en), group[0].start(), group[-1].end()


# --- Chinese numerals ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Numerals:
    digits: dict[str, int]
    units: dict[str, int]
    big: dict[str, int]
    idioms: tuple[str, ...]
    run: re.Pattern[str]
    ascii_free: bool  # no numeral is an ASCII character: an ASCII text holds none


@words.builder
def _numerals() -> _Numerals:
    table = words.table("numbers", "numerals")
    digits = {str(k): int(v) for k, v in dict(table.get("digits", {})).items()}
    units = {str(k): int(v) for k, v in dict(table.get("units", {})).items()}
    big = {str(k): int(v) for k, v in dict(table.get("big", {})).items()}
    every = "".join([*digits, *units, *big])
    run = re.compile(f"[{re.escape(every)}]+" if every else "(?!)")
    idioms = tuple(table.get("idioms", ()))
    return _Numerals(digits, units, big, idioms, run, not any(c.isascii() for c in every))


def zh_value(run: str) -> float | None:
    """The value of a Chinese numeral run ("一百二十", "两百", "一千五" = 1500), or None."""
    n = words.compiled(_numerals)
    _ZH_DIGITS, _ZH_UNITS, _ZH_BIG = n.digits, n.units, n.big
    total = section = digit = 0
    last_unit = 0
    seen = False
    for ch in run:
        if ch in _ZH_DIGITS:
            if seen and last_unit == 0 and digit:
                digit = digit * 10 + _ZH_DIGITS[ch]  # "一二三": read digit by digit
            else:
                digit = _ZH_DIGITS[ch]
            if _ZH_DIGITS[ch] == 0:
                last_unit = 0
            seen = True
        elif ch in _ZH_UNITS:
            section += (digit or 1) * _ZH_UNITS[ch]
            digit, last_unit, seen = 0, _ZH_UNITS[ch], True
        elif ch in _ZH_BIG:
            if not seen and not section:
                return None
            total = (total + section + digit) * _ZH_BIG[ch]
            section = digit = 0
            last_unit, seen = _ZH_BIG[ch], True
    if not seen:
        return None
    # "一千五" is 1500 and "两百五" 250: a bare digit after a unit counts in the next unit down.
    tail = digit * last_unit // 10 if digit and last_unit >= 100 and digit < 10 else digit
    return float(total + section + tail)


def chinese_numbers(text: str) -> Iterator[Spelled]:
    """Chinese numerals ("五十", "一百二十", "两百"), idioms like "十分" and "千万" left out."""
    n = words.compiled(_numerals)
    if n.ascii_free and text.isascii():
        return  # most texts: no scan of each character for a numeral
    for m in n.run.finditer(text):
        run = m.group()
        if any(idiom in text[m.start() : m.end() + 1] for idiom in n.idioms):
            continue
        value = zh_value(run)
        if value is not None:
            yield value, m.start(), m.end()

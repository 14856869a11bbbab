"""Facts a text states that a shop is liable for: delivery and dispatch times and dates, sizes
and measures, validity, warranty and return periods, prices, fees and shipping costs; each with
its kinds, unit and figures, read with the ``facts`` language packs and the number readers."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from re import _parser as parser  # type: ignore[attr-defined]

from baton_kafka.agents.guards import words
from baton_kafka.agents.guards.money import money
from baton_kafka.agents.guards.numbers import Number, all_numbers
from baton_kafka.agents.guards.skipping import anywhere, led, starts

KINDS = ("delivery", "dispatch", "validity", "size", "price")
TIMED = frozenset({"delivery", "dispatch", "validity"})  # the kinds of a duration or a date
# A written unit -> the unit it is compared in and the factor to it: a year is 365 days, so
# "2 years" and a window of 730 days are one figure.
SCALES: dict[str, tuple[str, float]] = {
    "day": ("day", 1.0),
    "week": ("day", 7.0),
    "month": ("day", 365 / 12),
    "year": ("day", 365.0),
    "hour": ("hour", 1.0),
    "minute": ("hour", 1 / 60),
    "cm": ("cm", 1.0),
    "mm": ("cm", 0.1),
    "m": ("cm", 100.0),
    "inch": ("cm", 2.54),
    "g": ("kg", 0.001),
    "kg": ("kg", 1.0),
    "l": ("l", 1.0),
    "ml": ("l", 0.001),
    "size": ("size", 1.0),
}
DURATIONS = frozenset({"day", "hour"})
_MAX_DURATION = {"day": 36_500.0, "hour": 10_000.0}  # "2026年" is a year, not 2026 years
_SENTENCE = re.compile(r"(?<=[.!?])(?<!\d\.)\s+|[。！？；;\n]+")
_CLAUSE = re.compile(r"(?<!\d)[,，:：、]|[,，:：、](?!\d)")
_BEFORE_REACH = 24
# "a 5-year warranty", "30-day return": digits joined to their unit by a hyphen. The digit that
# leads it is consumed first (what comes before it looked at after), so the engine itself scans
# for digits: as ``(?<![\w.,])(\d+)(?=-[^\W\d_])``, which it would try at every position.
_HYPHENED = re.compile(r"(\d(?<![\w.,]\d)\d*)(?=-[^\W\d_])")


@dataclass(frozen=True)
class Fact:
    """One stated fact: its kinds (``KINDS``; empty when no word marks one), the unit it is
    compared in ("day", "hour", "cm", "kg", "l", "size", "date", "money"), its figures in that
    unit (a range has two; a date is month * 100 + day), and where it is written."""

    kinds: frozenset[str]
    unit: str
    values: tuple[float, ...]
    written: str
    start: int
    end: int
    currency: str | None = None


@words.builder
class _Words:
    """The ``facts`` packs of every language, compiled."""

    def __init__(self) -> None:
        alt = words.alternation
        # Led by the letters a kind's word starts with: each is searched in a fact's clause.
        self.kinds = {
            k: led(alt("facts", f"kinds.{k}", end=False), re.I)
            for k in ("delivery", "dispatch", "validity", "price")
        }
        about = alt("numbers", "about")
        self.units = {
            u: re.compile(
                rf"(?:\s*|-)(?:(?:{about})\s*)?(?:{alt('facts', f'units.{u}', start=False)})", re.I
            )
            for u in SCALES
            if words.entries("facts", f"units.{u}")
        }
        self.size_before = re.compile(rf"(?:{alt('facts', 'before.size')})\s*[:#]?\s*$", re.I)
        self.range = re.compile(rf"\s*(?:{alt('numbers', 'range')})\s*", re.I)
        months: dict[int, list[str]] = {}
        for _, pack in words.languages("facts"):
            for key, value in dict(pack.get("months", {})).items():
                names = value if isinstance(value, list) else [value]
                months.setdefault(int(key), []).extend(str(n) for n in names)
        self.months = {n: re.compile(f"(?:{'|'.join(v)})", re.I) for n, v in months.items()}
        every = "|".join(v for n in sorted(months) for v in months[n]) or "(?!)"
        # Led by the characters a date starts with: each pattern is tried along the whole text.
        packed = words.entries("facts", "dates.patterns")
        written = [p.replace("{month}", f"(?:{every})") for p in packed]
        pairs = zip(written, packed, strict=True)
        self.dates = [_month_first(led(w, re.I), p, every) for w, p in pairs]
        # The dates led by a digit, looked for at once: most texts hold none, and are not
        # searched with each of them.
        self.digit_led = frozenset(
            i
            for i, (d, p) in enumerate(zip(self.dates, written, strict=True))
            if not isinstance(d, _MonthFirst) and starts(p, re.I) == {r"\d"}
        )
        self.any_digit_led = anywhere([written[i] for i in sorted(self.digit_led)], re.I)


def _w() -> _Words:
    return words.compiled(_Words)


_MONTH_FIRST = "(?P<mname>{month})\\.?\\s+(?P<d>"
_GAP = re.compile(r"\s+(?=\d)")
# A month name that looks around itself could match in a whole text and not in a window of it.
_LOOKS_AROUND = re.compile(r"\(\?<|\\[bBAZ]|[$^]")


class _MonthFirst:
    """A date pattern that starts with a month name ("December 14"), tried only on a text where a
    month name ends right before the spaces before a digit: most texts have none."""

    def __init__(self, pattern: re.Pattern[str], month_end: re.Pattern[str], reach: int) -> None:
        self.compiled = pattern
        self.pattern = pattern.pattern
        self._month_end = month_end
        self._reach = reach

    def may_match(self, text: str) -> bool:
        """False only when no match can stand in ``text``: no month name ends where a match's
        ``\\.?\\s+`` before its day could start."""
        ends = self._month_end
        for gap in _GAP.finditer(text):
            start, digit = gap.span()
            ats = range(start - (text[start - 1 : start] == "."), digit)
            if any(ends.search(text, max(0, at - self._reach), at) for at in ats):
                return True
        return False

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """As ``re.Pattern.finditer``."""
        return self.compiled.finditer(text) if self.may_match(text) else iter(())


def _month_first(
    pattern: re.Pattern[str], written: str, every: str
) -> re.Pattern[str] | _MonthFirst:
    """``pattern`` (the pack's ``written``), screened when it starts with a month name."""
    if not written.startswith(_MONTH_FIRST) or _LOOKS_AROUND.search(every):
        return pattern
    longest = parser.parse(every, re.I).getwidth()[1]
    if longest >= 1000:  # unbounded: no window holds every month name
        return pattern
    return _MonthFirst(pattern, re.compile(rf"(?:{every})\Z", re.I), longest)


def spans(text: str, pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    """The pieces of ``text`` between the matches of ``pattern``."""
    out, at = [], 0
    for m in pattern.finditer(text):
        out.append((at, m.start()))
        at = m.end()
    out.append((at, len(text)))
    return [(a, b) for a, b in out if b > a]


def kinds_at(text: str, at: int) -> frozenset[str]:
    """The kinds the words around position ``at`` mark: its clause's, else its sentence's."""
    return _Kinds(text).at(at)


class _Kinds:
    """The kinds marked around positions of one text: its sentences are split once, and each
    clause and sentence searched once, however many facts stand in it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._sentences: list[tuple[int, int]] | None = None
        self._found: dict[str, frozenset[str]] = {}
        # Each sentence's clauses, split once however many facts stand in it.
        self._clauses: dict[tuple[int, int], list[tuple[int, int]]] = {}

    def at(self, at: int) -> frozenset[str]:
        """As ``kinds_at(text, at)``."""
        text = self.text
        if self._sentences is None:
            self._sentences = spans(text, _SENTENCE)
        sentence = next(((a, b) for a, b in self._sentences if a <= at <= b), (0, len(text)))
        part = text[sentence[0] : sentence[1]]
        offset = at - sentence[0]
        cut = self._clauses.get(sentence)
        if cut is None:
            cut = self._clauses[sentence] = spans(part, _CLAUSE)
        clause = next((part[a:b] for a, b in cut if a <= offset <= b), part)
        for piece in (clause, part):
            found = self._found.get(piece)
            if found is None:
                kinds = _w().kinds.items()
                found = self._found[piece] = frozenset(k for k, p in kinds if p.search(piece))
            if found:
                return found
        return frozenset()


def _overlaps(a: int, b: int, skip: Sequence[tuple[int, int]]) -> bool:
    return any(a < y and x < b for x, y in skip)


def dates(
    text: str, skip: Sequence[tuple[int, int]] = (), kinds: _Kinds | None = None
) -> Iterator[Fact]:
    """Every date ``text`` writes ("2026-12-14", "14. Dezember", "12月14日")."""
    w = _w()
    kinds = kinds or _Kinds(text)
    taken: list[tuple[int, int]] = list(skip)
    screen = w.any_digit_led
    none_led = screen is not None and screen.search(text) is None
    for i, pattern in enumerate(w.dates):
        if none_led and i in w.digit_led:
            continue
        for m in pattern.finditer(text):
            if _overlaps(*m.span(), taken):
                continue
            groups = m.groupdict()
            month = int(groups["m"]) if groups.get("m") else None
            if month is None and groups.get("mname"):
                month = next((n for n, p in w.months.items() if p.fullmatch(groups["mname"])), None)
            day = int(groups["d"]) if groups.get("d") else 0
            if month is None or not (1 <= month <= 12 and 1 <= day <= 31):
                continue
            taken.append(m.span())
            marked = kinds.at(m.start()) & TIMED
            yield Fact(marked, "date", (month * 100.0 + day,), m.group(), *m.span())


def _unit_after(text: str, at: int) -> tuple[str, int] | None:
    """The unit written right after position ``at`` and where it ends (the longest one)."""
    best: tuple[str, int] | None = None
    for unit, pattern in _w().units.items():
        m = pattern.match(text, at)
        if m and (best is None or m.end() > best[1]):
            best = (unit, m.end())
    return best


def _measured(text: str, numbers: Sequence[Number], marks: _Kinds) -> Iterator[Fact]:
    """Figures with a unit of time or measure after them (or a size word before them); the
    first of a range ("3 to 5 days", "3〜5 営業日") takes its partner's unit."""
    w = _w()
    by_start = {n.start: n for n in numbers}
    used: set[int] = set()
    for i, n in enumerate(numbers):
        if n.start in used:
            continue
        unit = _unit_after(text, n.end)
        second: Number | None = None
        if n.partner is not None:
            second = by_start.get(n.partner[0]) if n.partner[0] > n.start else None
        elif (r := w.range.match(text, n.end)) and i + 1 < len(numbers):
            following = numbers[i + 1]
            second = following if following.start == r.end() else None
        if unit is None and second is not None:
            unit = _unit_after(text, second.end)
        if unit is None:
            before = text[max(0, n.start - _BEFORE_REACH) : n.start]
            if w.size_before.search(before):
                unit = ("size", n.end if second is None else second.end)
        if unit is None:
            continue
        name, end = unit
        base, factor = SCALES[name]
        figures = [n] + ([second] if second is not None else [])
        values = tuple(round(f.value * factor, 6) for f in figures)
        if base in DURATIONS and max(values) > _MAX_DURATION[base]:
            continue
        used.update(f.start for f in figures)
        end = max(end, figures[-1].end)
        kinds = marks.at(n.start) & TIMED if base in DURATIONS else frozenset({"size"})
        yield Fact(kinds, base, values, text[n.start : end], n.start, end)


def _prices(text: str, skip: list[tuple[int, int]], marks: _Kinds) -> Iterator[Fact]:
    """Amounts with a currency in a clause that speaks of a price, fee or shipping cost."""
    for m in money(text, skip):
        if m.kind != "amount" or not m.marked:
            continue
        if "price" not in marks.at(m.at):
            continue
        currency = next(iter(m.currencies)) if len(m.currencies) == 1 else None
        end = m.at + len(m.written)
        yield Fact(frozenset({"price"}), "money", (m.value,), m.written, m.at, end, currency)


def stated(text: str, skip: Sequence[tuple[int, int]] = ()) -> list[Fact]:
    """Every fact ``text`` states, outside ``skip`` (ids, phone numbers, product names, the
    customer's quoted words), in reading order. A duration or a date counts only where a word
    marks its kind; a measure always does; an amount only where a price word stands by it."""
    marks = _Kinds(text)  # the kinds of every fact of the text, read with one split
    found, skip = _dated_and_measured(text, skip, marks)
    taken = skip + [(f.start, f.end) for f in found]
    found += _prices(text, taken, marks)
    return sorted(found, key=lambda f: f.start)


def measures(text: str) -> list[Fact]:
    """The facts ``stated(text)`` gives but its amounts: dates, durations and measures."""
    # Its amounts are read last and change none of the other facts: they are not read at all.
    found, _ = _dated_and_measured(text, (), _Kinds(text))
    return sorted(found, key=lambda f: f.start)


def _dated_and_measured(
    text: str, skip: Sequence[tuple[int, int]], marks: _Kinds
) -> tuple[list[Fact], list[tuple[int, int]]]:
    """The dates, durations and measures of ``text`` outside ``skip``; ``skip`` and the dates."""
    skip = list(skip)
    found = list(dates(text, skip, marks))
    skip += [(f.start, f.end) for f in found]
    numbers = all_numbers(text, skip)
    hyphened = [
        Number(float(m.group(1)), *m.span())
        for m in _HYPHENED.finditer(text)
        if not _overlaps(*m.span(), [*skip, *((n.start, n.end) for n in numbers)])
    ]
    found += _measured(text, sorted([*numbers, *hyphened], key=lambda n: n.start), marks)
    return found, skip


_w()  # compiled at import, as module patterns are; again only when a shop adds words

"""A pack list's alternation searched with only the entries that can match the text at hand:
an entry whose words an ASCII text lacks is dropped before the engine tries it at each position."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as parser  # type: ignore[attr-defined]
from typing import Any

from baton_kafka.agents.guards import words
from baton_kafka.agents.guards.skipping import Sieved, _needed, _Unknown, skipping

# The characters outside ASCII that a case-insensitive ASCII literal takes ("İ", "ı", "ſ", the
# Kelvin sign); a test checks this against every character.
REACHING = frozenset("\u0130\u0131\u017f\u212a")


class Parted:
    """``words.alternation`` of ``entries`` compiled (as ``Sieved``), searched in an ASCII text
    with only the entries one of whose needed words the text holds.

    An entry that can match nowhere in the text changes no match of the alternation (the engine
    takes, at the leftmost position, the first entry in order that matches there): the matches
    are those of the whole alternation, entry by entry in the same order.
    """

    def __init__(self, entries: list[str], flags: int = 0, *, end: bool = True) -> None:
        self._flags = flags
        self._end = end
        self._fold = bool(flags & re.I)
        self.whole = Sieved(words.alternation_of(entries, end=end), flags)
        self.pattern = self.whole.pattern
        # In the order the alternation tries them (its sort is stable: a part keeps the order).
        self._entries = tuple(sorted(entries, key=len, reverse=True))
        parsed = [_parsed(e, flags) for e in self._entries]
        self._needs = tuple(self._needs_of(p) for p in parsed)
        # In any other text only an entry all of whose characters are ASCII: its needed words
        # then stand in a text no character of which a case-insensitive ASCII letter takes.
        self._needs_any = tuple(
            ws if ws and p is not None and _ascii_only(p) else None
            for p, ws in zip(parsed, self._needs, strict=True)
        )
        self._all = tuple(range(len(self._entries)))
        self._ascii = _by_word(self._needs)
        self._other = _by_word(self._needs_any)
        # The parts most texts keep (a text holding none of the words, or one word of an ASCII
        # text), compiled now; a text needing any other part is searched with the whole
        # alternation, never a pattern compiled while a ticket waits (milliseconds each).
        self._parts = {kept: self._compile(kept) for kept in (self._ascii[0], self._other[0])}
        always, by_word = self._ascii
        self._words_parts = {w: self._part_of((*always, *places)) for w, places in by_word}

    def _needs_of(self, parsed: Any) -> frozenset[str] | None:
        """Words one of which every match of an entry holds in an ASCII text (None: any text)."""
        if parsed is None or parsed.state.groups > 1:
            return None  # its groups would be numbered anew in a part: always kept
        try:
            return _needed(parsed, self._flags)
        except _Unknown:
            return None

    def part(self, text: str) -> tuple[int, ...]:
        """The entries (their places in order) that may match somewhere in ``text``."""
        always, by_word = self._ascii
        if not text.isascii():
            if self._fold and not REACHING.isdisjoint(text):
                return self._all
            always, by_word = self._other
        folded = text.lower() if self._fold else text
        kept = [i for w, places in by_word if w in folded for i in places]
        return tuple(sorted({*always, *kept})) if kept else always

    def _part_of(self, kept: tuple[int, ...]) -> re.Pattern[str] | Sieved | None:
        kept = tuple(sorted(set(kept)))
        if kept not in self._parts:
            self._parts[kept] = self._compile(kept)
        return self._parts[kept]

    def _compile(self, kept: tuple[int, ...]) -> re.Pattern[str] | Sieved | None:
        if not kept:
            return None
        if kept == self._all:
            return self.whole
        chosen = [self._entries[i] for i in kept]
        return skipping(words.alternation_of(chosen, end=self._end), self._flags)

    def _for(self, text: str, pos: int, endpos: int) -> re.Pattern[str] | Sieved | None:
        kept = self.part(text[pos:endpos] if pos or endpos < len(text) else text)
        return self._parts.get(kept, self.whole)

    def search(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        """As ``re.Pattern.search``."""
        pattern = self._for(text, pos, endpos)
        return None if pattern is None else pattern.search(text, pos, endpos)

    def holds(self, text: str) -> bool:
        """Whether ``search(text)`` finds a match: searched with each held word's entries."""
        if not text.isascii():
            return self.search(text) is not None
        folded = text.lower() if self._fold else text
        # A match of the alternation is a match of one of its entries: of one held word's part.
        held = [self._words_parts[w] for w, _ in self._ascii[1] if w in folded]
        for pattern in held or [self._parts[self._ascii[0]]]:
            if pattern is not None and pattern.search(text) is not None:
                return True
        return False

    def finditer(
        self, text: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> Iterator[re.Match[str]]:
        """As ``re.Pattern.finditer``."""
        pattern = self._for(text, pos, endpos)
        return iter(()) if pattern is None else pattern.finditer(text, pos, endpos)


def _parsed(entry: str, flags: int) -> Any:
    """``entry`` parsed as the engine reads it, or None when it is not read here."""
    try:
        return parser.parse(entry, flags | re.UNICODE)
    except re.error:
        return None


def _by_word(
    needs: tuple[frozenset[str] | None, ...],
) -> tuple[tuple[int, ...], tuple[tuple[str, tuple[int, ...]], ...]]:
    """The entries always kept (their words not worked out), and each needed word with the
    entries it keeps; an entry needing no ASCII word (``frozenset()``) is kept by none."""
    always = tuple(i for i, ws in enumerate(needs) if ws is None)
    places: dict[str, list[int]] = {}
    for i, ws in enumerate(needs):
        for w in sorted(ws or ()):
            places.setdefault(w, []).append(i)
    return always, tuple((w, tuple(p)) for w, p in sorted(places.items()))


_NESTED = (
    sre.IN,
    sre.BRANCH,
    sre.SUBPATTERN,
    sre.ASSERT,
    sre.ASSERT_NOT,
    sre.MAX_REPEAT,
    sre.MIN_REPEAT,
    sre.POSSESSIVE_REPEAT,
    sre.ATOMIC_GROUP,
)


def _ascii_only(parsed: Any) -> bool:
    """Whether every character a parsed pattern names (literals, ranges) is ASCII."""
    for op, av in parsed:
        if op in (sre.LITERAL, sre.NOT_LITERAL) and av > 127:
            return False
        if op is sre.RANGE and av[1] > 127:
            return False
        nested = op in _NESTED and not all(_ascii_only(sub) for sub in _parts(op, av))
        if nested:
            return False
    return True


def _parts(op: Any, av: Any) -> list[Any]:
    """The parsed sequences inside one item of a parsed pattern."""
    if op is sre.IN:
        return [av]
    if op is sre.BRANCH:
        return list(av[1])
    if op is sre.SUBPATTERN:
        return [av[3]]
    if op in (sre.ASSERT, sre.ASSERT_NOT):
        return [av[1]]
    if op is sre.ATOMIC_GROUP:
        return [av]
    return [av[2]]  # a repeat

"""A cheap pre-screen for many patterns read over one text: the patterns that cannot match it,
told by the literal text each of their matches must start with, are not run at all."""

from __future__ import annotations

import re
from collections.abc import Mapping
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any, Generic, TypeVar

K = TypeVar("K")
# Ops that match no character: a match passes them without consuming any text.
_ZERO_WIDTH = frozenset({sre.AT, sre.ASSERT, sre.ASSERT_NOT})
# A start this long tells a pattern apart well enough: it is not followed further.
_LONG_ENOUGH = 6
# More starts than this are not spelled out (the ones so far are kept, each still a start).
_MOST = 256
# A class of at most this many single characters is spelled out, one start for each.
_CLASS_CHARS = 8


def _chars(av: list[tuple[Any, Any]]) -> list[str] | None:
    """The characters of a class that is only a few of them (``[汉款]``), else None."""
    if len(av) > _CLASS_CHARS or any(op is not sre.LITERAL for op, _ in av):
        return None
    return [chr(c) for _, c in av]


def _starts(items: list[tuple[Any, Any]]) -> set[str]:
    """The texts one of which every match of the parsed sequence ``items`` starts with; "" among
    them when a match may start with anything (a class, a repeat, a flag: no literal text)."""
    heads = {""}
    for at, (op, av) in enumerate(items):
        if min(map(len, heads)) >= _LONG_ENOUGH or len(heads) > _MOST:
            return heads
        rest = items[at + 1 :]
        if op in _ZERO_WIDTH:
            continue
        if op is sre.LITERAL:
            heads = {h + chr(av) for h in heads}
            continue
        options: list[list[tuple[Any, Any]]] | None = None
        if op is sre.IN and (chars := _chars(av)) is not None:
            options = [[(sre.LITERAL, ord(c)), *rest] for c in chars]
        elif op is sre.BRANCH:
            options = [[*branch, *rest] for branch in av[1]]
        elif op is sre.SUBPATTERN and not av[1] and not av[2]:  # a group with no flags of its own
            options = [[*av[3], *rest]]
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT) and av[0] == 0 and av[1] == 1:
            options = [rest, [*av[2], *rest]]  # optional: skipped, or matched once
        if options is None:
            return heads
        tails = set().union(*(_starts(option) for option in options))
        return {h + t for h in heads for t in tails}
    return heads


def starts(rx: re.Pattern[str]) -> frozenset[str] | None:
    """The texts one of which every match of ``rx`` starts with; None when they cannot be told
    (or the pattern folds case, where the text's own letters need not be the pattern's)."""
    if rx.flags & (re.IGNORECASE | re.VERBOSE):
        return None
    parsed = sre_parse.parse(rx.pattern, rx.flags)
    if parsed.state.flags & re.IGNORECASE:  # an inline (?i) for the whole pattern
        return None
    found = _starts(list(parsed))
    return None if "" in found else frozenset(found)


def ascii_starts(rx: re.Pattern[str]) -> frozenset[str] | None:
    """The texts, in lower case, one of which every match of ``rx`` in an ASCII text starts
    with (case aside when ``rx`` folds case); None when they cannot be told.

    A start with a character no ASCII one folds to can never be in an ASCII text: it is left
    out (all of them left out: ``rx`` never matches one). One with a character that folds to an
    ASCII one ("K", the Kelvin sign) is not told.
    """
    if rx.flags & re.VERBOSE:
        return None
    parsed = sre_parse.parse(rx.pattern, rx.flags)
    if parsed.state.flags & re.VERBOSE:
        return None
    found = _starts(list(parsed))
    if "" in found:
        return None
    kept = set()
    for start in found:
        if start.isascii():
            kept.add(start.lower())
        elif any(_folds_to_ascii(c) for c in start if not c.isascii()):
            return None
    return frozenset(kept)


def _folds_to_ascii(char: str) -> bool:
    """Whether a case-folding pattern's ``char`` may match an ASCII character."""
    return any(c.isascii() for c in char.lower() + char.upper() + char.casefold() + char.title())


class Screen(Generic[K]):
    """The keys of ``patterns`` that may match a text: those with a start in it (found by its
    first three characters, then the whole start), and those whose starts cannot be told."""

    def __init__(self, patterns: Mapping[K, re.Pattern[str]]) -> None:
        self.always: frozenset[K] = frozenset()
        # The starts by their first three characters (a shorter start by itself), each with the
        # keys it may begin a match of.
        self.by_head: dict[int, dict[str, dict[str, set[K]]]] = {1: {}, 2: {}, 3: {}}
        always: set[K] = set()
        for key, rx in patterns.items():
            found = starts(rx)
            if found is None:
                always.add(key)
                continue
            for start in found:
                head = min(len(start), 3)
                self.by_head[head].setdefault(start[:head], {}).setdefault(start, set()).add(key)
        self.always = frozenset(always)
        # The first characters of the short starts (Chinese and Japanese words, mostly): a text
        # with none of them is not sliced for those.
        short = {start[0] for size in (1, 2) for start in self.by_head[size]}
        self.short_first = re.compile(
            f"[{''.join(map(re.escape, sorted(short)))}]" if short else "(?!)"
        )

    def possible(self, text: str) -> set[K]:
        """The keys whose pattern may match ``text``: every key whose pattern does is here."""
        found = set(self.always)
        short = self.short_first.search(text) is not None
        for size, index in self.by_head.items():
            if not index or (size < 3 and not short):
                continue
            heads = {text[at : at + size] for at in range(len(text) - size + 1)}
            for head in heads.intersection(index):
                for start, keys in index[head].items():
                    if len(start) == size or start in text:
                        found |= keys
        return found

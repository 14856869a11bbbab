"""Patterns that skip at once the positions no match can start at: same matches, fewer tries."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Iterator
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as parser  # type: ignore[attr-defined]
from typing import Any

# "(?i)", "(?ms)": flags for the whole pattern; "(?P<name>" opens a group, which a lead may precede.
_INLINE_FLAGS = re.compile(r"\(\?[aiLmsux]+\)")
_CATEGORIES = {sre.CATEGORY_DIGIT: r"\d", sre.CATEGORY_SPACE: r"\s", sre.CATEGORY_WORD: r"\w"}


class _Unknown(Exception):
    """The pattern starts in a way whose first characters are not worked out here."""


def _char(code: int) -> str:
    return f"\\U{code:08x}"


def _first_of(items: Any) -> tuple[set[str], bool]:
    """The class items a match of ``items`` (a parsed sequence) can start with, and whether
    it can match the empty string."""
    found: set[str] = set()
    for op, av in items:
        first, empty = _first_of_one(op, av)
        found |= first
        if not empty:
            return found, False
    return found, True


def _first_of_one(op: Any, av: Any) -> tuple[set[str], bool]:
    if op is sre.LITERAL:
        return {_char(av)}, False
    if op is sre.IN:
        return {_item(iop, iav) for iop, iav in av}, False
    if op is sre.BRANCH:
        found: set[str] = set()
        empty = False
        for alternative in av[1]:
            first, may_be_empty = _first_of(alternative)
            found |= first
            empty = empty or may_be_empty
        return found, empty
    if op is sre.SUBPATTERN:
        _, add_flags, del_flags, sub = av
        if add_flags or del_flags:
            raise _Unknown  # the lookahead would be read with the outer flags
        return _first_of(sub)
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
        low, _, sub = av
        first, empty = _first_of(sub)
        return first, empty or low == 0
    if op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
        return set(), True  # zero-width: the first character comes after
    raise _Unknown


def _item(op: Any, av: Any) -> str:
    if op is sre.LITERAL:
        return _char(av)
    if op is sre.RANGE:
        return f"{_char(av[0])}-{_char(av[1])}"
    if op is sre.CATEGORY and av in _CATEGORIES:
        return _CATEGORIES[av]
    raise _Unknown  # a negated class or category: its complement is no class item


def skipping(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``pattern`` compiled, led by a lookahead of the characters its matches can start with.

    The lookahead is read with the pattern's own flags, so a case-insensitive literal and its
    class item take the same characters; a pattern whose start is not worked out here (a
    negated class, any character, inner flags, an empty match) is compiled as it is.
    """
    compiled = re.compile(pattern, flags)
    if _INLINE_FLAGS.match(pattern):
        return compiled  # global inline flags must stay first
    try:
        first, empty = _first_of(parser.parse(pattern, compiled.flags))
    except _Unknown:
        return compiled
    if empty or not first:
        return compiled
    return re.compile(f"(?=[{''.join(sorted(first))}])(?:{pattern})", flags)


def _scanned(parsed: Any, flags: int) -> bool:
    """Whether the engine itself scans a text for ``parsed``'s literal prefix or set of first
    characters (uncased literals first): a lead would only slow it down."""
    try:
        from re import _compiler  # type: ignore[attr-defined]

        prefix, _, _ = _compiler._get_literal_prefix(parsed, flags)
        return bool(prefix or _compiler._get_charset_prefix(parsed, flags))
    except Exception:  # the engine's internals moved: lead as ``skipping`` does
        return False


def led(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``pattern`` compiled as ``skipping`` leads it, unless the engine already scans for its
    first characters (an alternation of Chinese words): same matches, fewer tries either way.

    The pattern is parsed once for both (the packs' long alternations are many).
    """
    if _INLINE_FLAGS.match(pattern):
        return re.compile(pattern, flags)  # global inline flags must stay first
    parsed = parser.parse(pattern, flags | re.UNICODE)
    if _scanned(parsed, parsed.state.flags):
        return re.compile(pattern, flags)
    try:
        first, empty = _first_of(parsed)
    except _Unknown:
        return re.compile(pattern, flags)
    if empty or not first:
        return re.compile(pattern, flags)
    return re.compile(f"(?=[{''.join(sorted(first))}])(?:{pattern})", flags)


def starts(pattern: str, flags: int = 0) -> frozenset[str] | None:
    """The class items one of which starts every match of ``pattern`` (None: not worked out)."""
    if _INLINE_FLAGS.match(pattern):
        return None
    try:
        first, empty = _first_of(parser.parse(pattern, flags | re.UNICODE))
    except (_Unknown, re.error):
        return None
    return None if empty or not first else frozenset(first)


# A group named twice, referred to or tested by name or number: the patterns are not joined.
_REFERS = re.compile(r"\\[1-9]|\(\?P=|\(\?\(")
_NAMED = re.compile(r"\(\?P<(\w+)>")


def anywhere(patterns: list[str], flags: int = 0) -> re.Pattern[str] | None:
    """A pattern that matches where one of ``patterns`` does (None: not worked out). It is led
    by a class of their first characters that it consumes, so the engine itself scans a text
    for them (it does not for a leading lookahead), and tries the patterns only there."""
    lead: set[str] = set()
    joined = []
    for i, pattern in enumerate(patterns):
        first = starts(pattern, flags)
        if first is None or _REFERS.search(pattern):
            return None
        lead |= first
        # Each group's name made its own: the parses show nothing but the names changed.
        own = _NAMED.sub(rf"(?P<\g<1>_{i}>", pattern)
        if repr(parser.parse(own, flags)) != repr(parser.parse(pattern, flags)):
            return None
        joined.append(f"(?:{own})")
    if not joined:
        return None
    either = f"[{''.join(sorted(lead))}]"
    try:
        return re.compile(f"{either}(?<=(?=(?:{'|'.join(joined)})){either})", flags)
    except re.error:  # inner flags, too many groups
        return None


def plain(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """The pattern ``skipping`` led with a lookahead, without it (to check both agree)."""
    text = pattern.pattern
    if text.startswith("(?=[") and (end := text.find("])(?:")) > 0:
        return re.compile(text[end + len("])(?:") : -1], pattern.flags)
    return pattern


def tree(words: frozenset[str]) -> str:
    """An alternation of ``words`` that shares their common beginnings ("vier(?:zehn|zig)?")."""
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def branch(node: dict[str, Any]) -> str:
        nexts = [re.escape(c) + branch(sub) for c, sub in sorted(node.items()) if c]
        if not nexts:
            return ""
        body = nexts[0] if len(nexts) == 1 else f"(?:{'|'.join(nexts)})"
        if "" not in node:
            return body
        return f"(?:{body})?" if len(nexts) == 1 else f"{body}?"

    return branch(root)


# The same characters recur in every pack's words (all of a Chinese pack's): each tried once.
@functools.lru_cache(maxsize=4096)
def _reaches_ascii(char: str, flags: int) -> bool:
    """Whether ``char`` as a literal of a pattern with ``flags`` matches an ASCII character."""
    literal = re.compile(re.escape(char), flags)
    return any(literal.fullmatch(chr(code)) for code in range(128))


def reaches_ascii(char: str, flags: int) -> bool:
    """Whether ``char`` as a literal of a pattern with ``flags`` matches an ASCII character."""
    return _reaches_ascii(char, flags)


def _needed(items: Any, flags: int) -> frozenset[str] | None:
    """Words one of which every match of ``items`` (a parsed sequence) holds, as an ASCII text
    would write them; empty when no match fits an ASCII text; None when not worked out."""
    candidates: list[frozenset[str]] = []
    run: list[str] = []

    def close() -> None:
        if run:
            word = "".join(run)
            if word.isascii():
                candidates.append(frozenset({word.lower() if flags & re.I else word}))
            elif any(not c.isascii() and not _reaches_ascii(c, flags) for c in word):
                candidates.append(frozenset())  # a character no ASCII text holds
            run.clear()

    for op, av in items:
        if op is sre.LITERAL:
            run.append(chr(av))
            continue
        close()
        sub: frozenset[str] | None = None
        if op is sre.BRANCH:
            alternatives = [_needed(a, flags) for a in av[1]]
            if all(a is not None for a in alternatives):
                sub = frozenset().union(*(a for a in alternatives if a is not None))
        elif op is sre.IN and all(iop is sre.LITERAL for iop, _ in av):
            chars = [chr(c) for _, c in av]
            if not any(not c.isascii() and _reaches_ascii(c, flags) for c in chars):
                sub = frozenset(c.lower() if flags & re.I else c for c in chars if c.isascii())
        elif op is sre.SUBPATTERN and not av[1] and not av[2]:
            sub = _needed(av[3], flags)
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT) and av[0] >= 1:
            sub = _needed(av[2], flags)
        if sub is not None:
            candidates.append(sub)
    close()
    if not candidates:
        return None
    if frozenset() in candidates:
        return frozenset()
    return min(candidates, key=lambda words: (min(map(len, words)) < 3, len(words)))


class Sieved:
    """A compiled pattern that first looks, in an ASCII text, for a word every match holds:
    a text without any is no match, without a try at each of its positions."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.compiled = skipping(pattern, flags)
        self.pattern = self.compiled.pattern
        self._fold = bool(flags & re.I)
        try:
            self._words = _needed(parser.parse(pattern, self.compiled.flags), flags)
        except (_Unknown, re.error):
            self._words = None
        # Case-sensitive literals: the engine scans for their first characters at once.
        # As a tree of their shared beginnings: the engine tries a few branches at each position,
        # not every word.
        self._any_word = re.compile(tree(self._words)) if self._words else None

    def may_match(self, text: str) -> bool:
        """False only when no match can stand anywhere in ``text`` (nor in a part of it): an
        ASCII ``text`` without any word every match holds."""
        return self._may_match(text)

    def _may_match(self, text: str) -> bool:
        words = self._words
        if words is None or not text.isascii():
            return True
        return self._any_word is not None and bool(
            self._any_word.search(text.lower() if self._fold else text)
        )

    def search(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        """As ``re.Pattern.search``."""
        if not self._may_match(text[pos:endpos] if pos or endpos < len(text) else text):
            return None
        return self.compiled.search(text, pos, endpos)

    def holds(self, text: str) -> bool:
        """Whether ``search(text)`` finds a match."""
        return self.search(text) is not None

    def finditer(
        self, text: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> Iterator[re.Match[str]]:
        """As ``re.Pattern.finditer``."""
        if not self._may_match(text[pos:endpos] if pos or endpos < len(text) else text):
            return iter(())
        return self.compiled.finditer(text, pos, endpos)

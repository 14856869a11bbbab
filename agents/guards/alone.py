"""Where a text writes a given phrase, found with ``str.find``: no pattern is compiled per
phrase (a product's name, a model number), so a worker compiles nothing for a new order."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

# A phrase written alone: no Latin letter, digit, "." or "," right before it; no Latin letter or
# digit, nor a "." or "," and a digit ("42171.5"), right after it (a Chinese character may be).
_BEFORE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.,")
_AFTER = re.compile(r"[A-Za-z0-9]|[.,]\d")


class Found:
    """One place ``text[start:end]`` where the phrase is written (as a match reports it)."""

    __slots__ = ("end", "start", "text")

    def __init__(self, text: str, start: int, end: int) -> None:
        self.text, self.start, self.end = text, start, end

    def span(self) -> tuple[int, int]:
        return self.start, self.end

    def group(self) -> str:
        return self.text[self.start : self.end]


@dataclass(frozen=True, slots=True)
class Alone:
    """``phrase`` written alone, not inside a longer word or number: what
    ``(?<![A-Za-z0-9.,])<phrase>(?![A-Za-z0-9]|[.,]\\d)`` matches, left to right, without
    overlaps."""

    phrase: str

    def finditer(self, text: str) -> Iterator[Found]:
        """Every place ``text`` writes the phrase alone, as ``re.finditer`` finds them."""
        phrase, size = self.phrase, len(self.phrase)
        if not size:  # empty: written alone between any two characters a pattern reads so
            edges = re.finditer(r"(?<![A-Za-z0-9.,])(?![A-Za-z0-9]|[.,]\d)", text)
            yield from (Found(text, m.start(), m.end()) for m in edges)
            return
        at = text.find(phrase)
        while at >= 0:
            end = at + size
            if (at == 0 or text[at - 1] not in _BEFORE) and not _AFTER.match(text, end):
                yield Found(text, at, end)
                at = text.find(phrase, end)
            else:
                at = text.find(phrase, at + 1)


def spans(needle: str, text: str) -> Iterator[tuple[int, int]]:
    """Where ``text`` writes ``needle`` (a non-empty literal), left to right, without overlaps:
    what ``re.finditer(re.escape(needle), text)`` finds."""
    size = len(needle)
    if not size:  # an empty needle is found at every position, as a pattern finds it
        yield from ((at, at) for at in range(len(text) + 1))
        return
    at = text.find(needle)
    while at >= 0:
        yield at, at + size
        at = text.find(needle, at + size)

"""Whether an ASCII text holds one of a list of whole words, told from its words read once."""

from __future__ import annotations

import re
from collections.abc import Iterable

from baton_kafka.agents.guards.skipping import reaches_ascii, tree
from baton_kafka.agents.ticket_memo import read_once

# An ASCII text's letters lowercased, any other character a space: ``split`` then finds its words.
_LETTERS_ONLY = str.maketrans(
    {code: chr(code).lower() if chr(code).isalpha() else " " for code in range(128)}
)
Group = tuple[Iterable[str], bool]
__all__ = ["Group", "holds", "letter_words", "screen", "tree"]


def letter_words(text: str) -> str | None:
    """The words (runs of ASCII letters) of an ASCII ``text``, lowercased, each between line
    breaks ("\\nwe\\nrefund\\n"); None for a text with any other character."""
    if not text.isascii():
        return None  # a non-ASCII letter may stand in a word, or match a word case-insensitively
    # The number reader's screens read the same text one after the other: its words once.
    return read_once(("letter words", text), lambda: _words(text))


def _words(text: str) -> str:
    # One translation and a split: cheaper than lowercasing, then a pattern's substitution.
    return "\n" + "\n".join(text.translate(_LETTERS_ONLY).split()) + "\n"


def screen(groups: Iterable[Group]) -> re.Pattern[str] | None:
    """A pattern that finds in ``letter_words(text)`` a word of one of ``groups`` (or, where its
    flag is set, a word made of several of its words) exactly when the pattern
    ``(?<![^\\W\\d_])(?:words)+(?![^\\W\\d_])`` read case-insensitively finds a whole one in the
    ASCII ``text``; None when a word is not lowercase letters (the pattern must be read)."""
    parts = []
    for entries, compound in groups:
        kept = []
        for word in entries:
            if word.isascii():
                if not (word.isalpha() and word == word.lower()):
                    return None
                kept.append(word)
            elif any(not c.isascii() and reaches_ascii(c, re.I) for c in word):
                return None  # "ſ", the Kelvin sign: an ASCII letter read case-insensitively
            # Else a letter no ASCII text holds: such a word is never found in one.
        if kept:
            alternatives = f"(?:{tree(frozenset(kept))})"
            parts.append(f"{alternatives}+" if compound else alternatives)
    return re.compile(f"\n(?:{'|'.join(parts)})\n" if parts else "(?!)")


def holds(pattern: re.Pattern[str], screened: re.Pattern[str] | None, text: str) -> bool:
    """Whether ``pattern`` finds a match in ``text``, told by ``screened`` (its ``screen``) from
    the text's words when it is ASCII."""
    found = letter_words(text) if screened is not None else None
    if found is None or screened is None:
        return pattern.search(text) is not None
    return screened.search(found) is not None

"""Customer-facing text as sentences and clauses, read with a language pack's markers."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from baton_kafka.agents import packs, text_cache
from baton_kafka.agents.guards.reading import normalise
from baton_kafka.agents.guards.skipping import Sieved, led

# The customer's words quoted back ("you wrote “refund me twice”") promise nothing: blanked.
_QUOTED = re.compile(
    r"“[^”]{0,400}”|„[^“”]{0,400}[“”]|«[^»]{0,400}»|「[^」]{0,400}」|『[^』]{0,400}』"
)
# A sentence ends at . ! ? followed by space (not inside "39.90"), at CJK stops and line breaks.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")
# A clause ends at , ; : and CJK commas, and before a pack's ``contrast`` words ("but").
_CLAUSE_END = re.compile(r"[;；,，:：]")


@dataclass(frozen=True)
class Marks:
    """One language's markers of a concern, compiled: each is one alternation or None."""

    language: str
    words: Mapping[str, re.Pattern[str]]
    markers: Mapping[str, re.Pattern[str] | None]
    reach: Mapping[str, int] = field(default_factory=dict)
    # Every entry of ``words`` in one alternation: a text it does not match holds none of them.
    any_word: re.Pattern[str] | None = None
    # The words one of which every match of ``any_word`` holds: a text without any is not read.
    sieve: Sieved | None = None
    # The ``contrast`` marker sieved: a text without any of its words is not cut by it.
    contrast: Sieved | None = None

    def may_hold(self, text: str) -> bool:
        """False only when ``text`` holds none of ``words``' entries (a quick test first)."""
        if self.any_word is None:
            return True
        # Most clauses hold none of the words every entry needs: looked for at once, they spare
        # the try of every entry at each position of the clause.
        if self.sieve is not None and not self.sieve.may_match(text):
            return False
        return self.any_word.search(text) is not None

    def may_read(self, text: str) -> bool:
        """False only when no part of ``text`` (no sentence, no clause) holds one of ``words``'
        entries: a text in another script than every entry's is not split and read at all."""
        return self.sieve is None or self.sieve.may_match(text)

    def has(self, marker: str, text: str) -> bool:
        """Whether ``text`` holds one of ``marker``'s words."""
        pattern = self.markers.get(marker)
        return bool(pattern and pattern.search(text))


@dataclass(frozen=True)
class Sentence:
    """A sentence and its clauses."""

    text: str
    clauses: tuple[str, ...]


# A reply and its solution are read by every guard in every language: each text is made
# readable, and split by each language's contrast words, once (for the last few texts).
@text_cache.across_tickets(64)
def readable(text: str) -> str:
    """``text`` as the packs read it: normalised, the customer's quoted words blanked."""
    text = normalise(text)
    return _QUOTED.sub(lambda m: " " * len(m.group()), text)


def sentences(text: str, marks: Marks) -> Iterator[Sentence]:
    """Every sentence of ``readable(text)`` with its clauses, as ``marks``' language splits
    them."""
    yield from _sentences(text, marks.markers.get("contrast"), marks.contrast)


@text_cache.across_tickets(256)
def _sentences(
    text: str, contrast: re.Pattern[str] | None, sieve: Sieved | None = None
) -> tuple[Sentence, ...]:
    if contrast is not None and sieve is not None and not sieve.may_match(text):
        # No contrast word stands anywhere in the text, so none cuts a clause: the text is split
        # as a language without contrast words splits it, once for every such language.
        return _sentences(text, None, None)
    if contrast is not None:
        # Every language cuts the same sentences and clauses, its contrast words then cut these:
        # the split without them is made once for the text, whichever languages read it.
        return tuple(
            Sentence(s.text, tuple(c for part in s.clauses for c in _before(contrast, part)))
            for s in _sentences(text, None, None)
        )
    return tuple(
        Sentence(sentence, tuple(_split(_CLAUSE_END, sentence)))
        for sentence in _split(_SENTENCE_END, text)
    )


def _before(pattern: re.Pattern[str], text: str) -> list[str]:
    """``text`` cut before each match of ``pattern``."""
    cuts = [m.start() for m in pattern.finditer(text) if m.start() > 0]
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds) if text[a:b].strip()]


def _split(pattern: re.Pattern[str], text: str) -> list[str]:
    return [part for part in pattern.split(text) if part and part.strip()]


def marks(concern: str, language: str, group: str) -> Marks | None:
    """``concern``'s pack in ``language``: the table ``group`` of words and its markers."""
    words = packs.pack(concern, language)
    key = (concern, language, group)
    known = _compiled.get(key)
    # A shop's pack added later (packs.extend) is a new mapping: compiled again.
    if known is None or known[0] is not words:
        known = (words, _marks(language, words, group))
        _compiled[key] = known
    return known[1]


_compiled: dict[tuple[str, str, str], tuple[Mapping[str, Any], Marks | None]] = {}


def _marks(language: str, words: Mapping[str, Any], group: str) -> Marks | None:
    if not words or group not in words:
        return None
    table: Mapping[str, Any] = words[group]
    compiled = {kind: _any(kind, entries) for kind, entries in table.items()}
    markers = {name: _any(name, entries) for name, entries in words.get("markers", {}).items()}
    reach = {k: int(v) for k, v in words.get("reach", {}).items()}
    every = [e for entries in table.values() for e in entries]
    any_word = _any(group, every) if every else None
    sieve = Sieved(_alternation(every), re.I) if every else None
    kinds = {k: p for k, p in compiled.items() if p is not None}
    cut = words.get("markers", {}).get("contrast")
    contrast = Sieved(_alternation(cut), re.I) if cut else None
    return Marks(language, kinds, markers, reach, any_word, sieve, contrast)


def _any(name: str, entries: Sequence[str]) -> re.Pattern[str] | None:
    if not entries:
        return None
    try:
        # Led by the characters a match starts with: markers are searched in every clause.
        return led(_alternation(entries), re.I)
    except re.error as exc:
        raise packs.PackError(f"{name}: {exc}") from None


def _alternation(entries: Sequence[str]) -> str:
    return "|".join(f"(?:{e})" for e in entries)


def unasked(
    sentence: Sentence, words: Marks, markers: Marks, needs: str | None = None
) -> Iterator[str]:
    """The clauses of ``sentence`` that may hold one of ``words``, are not reported speech and,
    with ``needs``, hold that marker; none from the first such clause on if the sentence asks."""
    # Most clauses hold none of the words: that is looked at first, and whether the sentence
    # asks only once one of its clauses could hold something.
    asks: bool | None = None
    for clause in sentence.clauses:
        if not words.may_hold(clause) or markers.has("reported", clause):
            continue
        if needs is not None and not markers.has(needs, clause):
            continue
        if asks is None:
            asks = markers.has("question", sentence.text)
        if asks:
            return
        yield clause


def denied(marks: Marks, clause: str, start: int, end: int) -> bool:
    """Whether ``clause`` denies what stands at ``start:end`` ("we cannot refund it").

    Only the words next to it are read ("No problem at all, I'll refund you" is no denial): as
    many as the pack's ``reach`` says before and after (words of a spaced language, characters
    of one without spaces; six and ten by default).
    """
    before = marks.markers.get("negation_before")
    after = marks.markers.get("negation_after")
    back, ahead = marks.reach.get("before", _NEAR), marks.reach.get("after", _NEAR)
    return bool(
        (before and before.search(_near(clause[:start], back, last=True)))
        or (after and after.search(_near(clause[end:], ahead, last=False)))
    )


_NEAR = 6


def _near(text: str, words: int, *, last: bool) -> str:
    spaced = text.split(" ")
    if len(spaced) > 1:
        return " ".join(spaced[-words - 1 :] if last else spaced[: words + 1])
    chars = max(10, words * 2)
    return text[-chars:] if last else text[:chars]

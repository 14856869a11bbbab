"""Notes for staff as a person is shown them: who wrote them, links inert, and instructions
aimed at staff ("MANAGER OVERRIDE", "ignore the policy", "approve this refund") flagged.

The words are the language packs' ``staff_instructions`` (every language's, whatever the
ticket's: a note may be written in any). The check reads patterns, not meaning: it flags, it
never removes, and a note without a flag is still the model's unverified text.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from baton_kafka.agents import packs
from baton_kafka.agents.rules import screen
from baton_kafka.schemas.handoff import NoteAuthor, StaffNote, defang

CONCERN = "staff_instructions"


@functools.cache
def _kinds(version: str) -> dict[str, list[re.Pattern[str]]]:
    """Every pack's patterns, by kind (``version``: the packs' hash, a changed pack re-read)."""
    kinds: dict[str, list[re.Pattern[str]]] = {}
    for language, words in packs.all_packs(CONCERN).items():
        for kind, patterns in dict(words.get("kinds", {})).items():
            for pattern in patterns:
                try:
                    kinds.setdefault(kind, []).append(re.compile(pattern, re.I))
                except re.error as exc:
                    raise packs.PackError(f"{language}/{CONCERN}.toml: {kind}: {exc}") from None
    return kinds


@functools.cache
def _screened(version: str) -> dict[str, list[tuple[re.Pattern[str], frozenset[str] | None]]]:
    """``_kinds(version)``, each pattern with the starts of its matches in an ASCII text (in
    lower case; None: not told)."""
    return {
        kind: [(rx, screen.ascii_starts(rx)) for rx in patterns]
        for kind, patterns in _kinds(version).items()
    }


def flags(text: str) -> list[str]:
    """The kinds of instruction to staff ``text`` holds, in the packs' order."""
    # Fullwidth letters, zero-width characters and runs of spaces do not hide a phrase.
    seen = " ".join(unicodedata.normalize("NFKC", text).replace("\u200b", "").split())
    kinds = _screened(packs.version())
    if not seen.isascii():
        return [kind for kind, found in kinds.items() if any(rx.search(seen) for rx, _ in found)]
    # Most patterns cannot match an ASCII text without one of their starts in it (the other
    # languages' never can): each search scans the note, a start is one substring test, and a
    # match begins no sooner than the first start found.
    low = seen.lower()
    return [
        kind for kind, found in kinds.items() if any(_in(rx, at, seen, low) for rx, at in found)
    ]


def _in(rx: re.Pattern[str], starts: frozenset[str] | None, seen: str, low: str) -> bool:
    """Whether ``rx`` matches the ASCII text ``seen`` (``low`` in lower case), every match of it
    starting with one of ``starts`` (None: not told)."""
    if starts is None:
        return rx.search(seen) is not None
    at = [i for i in map(low.find, starts) if i >= 0]
    # Searched from there: what comes before still counts for a "\b" or a look-behind.
    return bool(at) and rx.search(seen, min(at)) is not None


def note(text: str, written_by: NoteAuthor = "model") -> StaffNote:
    """``text`` as a note for staff: labelled with its author, links inert, instructions
    flagged (looked for in the text as written, before its links are made inert)."""
    inert, links = defang(text)
    return StaffNote(written_by=written_by, text=inert, links=links, flagged=flags(text))

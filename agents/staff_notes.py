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


def flags(text: str) -> list[str]:
    """The kinds of instruction to staff ``text`` holds, in the packs' order."""
    # Fullwidth letters, zero-width characters and runs of spaces do not hide a phrase.
    seen = " ".join(unicodedata.normalize("NFKC", text).replace("\u200b", "").split())
    kinds = _kinds(packs.version())
    return [kind for kind, patterns in kinds.items() if any(p.search(seen) for p in patterns)]


def note(text: str, written_by: NoteAuthor = "model") -> StaffNote:
    """``text`` as a note for staff: labelled with its author, links inert, instructions
    flagged (looked for in the text as written, before its links are made inert)."""
    inert, links = defang(text)
    return StaffNote(written_by=written_by, text=inert, links=links, flagged=flags(text))

"""The staff-note flags read through the starts of each pattern's matches: what running every
pattern over the note finds, on the corpora, the packs' words and texts generated from them."""

from __future__ import annotations

import re
import unicodedata

from baton_kafka.agents import packs
from baton_kafka.agents.rules.screen import ascii_starts
from baton_kafka.agents.staff_notes import _kinds, flags
from tests.unit.agents.rules.texts import every_text, generated, pack_words
from tests.unit.agents.test_staff_notes import CORPORA, cases


def _plain_flags(text: str) -> list[str]:
    """``flags`` as it read before the screen: every pattern searched over the whole note."""
    seen = " ".join(unicodedata.normalize("NFKC", text).replace("\u200b", "").split())
    kinds = _kinds(packs.version())
    return [kind for kind, patterns in kinds.items() if any(p.search(seen) for p in patterns)]


def _notes() -> list[str]:
    notes = [str(c["text"]) for name in CORPORA for c in cases(name)]
    mixed = generated([*notes, *pack_words()], 2000, seed=11)
    return [*notes, *every_text(), *generated(notes, 3000, seed=13), *mixed]


def test_the_screened_flags_are_the_plain_ones() -> None:
    texts = _notes()
    assert [flags(t) for t in texts] == [_plain_flags(t) for t in texts]
    # The screen is put to the test: ASCII notes that do hold an instruction, of every kind.
    flagged = {kind for t in texts if t.isascii() for kind in _plain_flags(t)}
    assert flagged == set(_kinds(packs.version()))
    assert sum(1 for t in texts if t.isascii() and _plain_flags(t)) > 150


def test_the_ascii_starts_are_where_every_match_in_an_ascii_text_starts() -> None:
    cases = {
        r"\b(?:Ignore|skip)\s+the": {"ignore", "skip"},
        r"authori[sz]ed": {"author"},
        # A start no ASCII text can hold is left out: the pattern never matches one.
        r"(?:リンク|URL)を": set(),
        r"über\w+|ohne": {"ohne"},
        # A character that folds to an ASCII one: the start is not told.
        "\u212aettle": None,  # the Kelvin sign matches "k"
        "\u017ftop": None,  # the long s matches "s"
        "\u0130tem": None,  # the dotted capital I matches "i"
        r"a|\w+": None,
        r"(?x) fire": None,
    }
    for pattern, expected in cases.items():
        rx = re.compile(pattern, re.I)
        found = ascii_starts(rx)
        assert (set(found) if found is not None else None) == expected, pattern
    assert re.compile("\u212aettle", re.I).search("kettle")

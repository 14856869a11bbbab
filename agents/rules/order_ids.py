"""Order ids as a customer writes them: found in a text as whole tokens, case and "#" aside."""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Sequence

# An id of fewer characters (of digits alone: a year, a quantity, a size) counts only after "#".
SHORT_ID = 4
SHORT_NUMBER = 5
# What may not touch a written id on either side: it would be part of a longer token.
_ID_EDGE = r"0-9a-z\u00c0-\u024f_/\-"


_EDGE_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyz_/-")
_AFTER_STOP = frozenset("0123456789abcdefghijklmnopqrstuvwxyz")


def _edge(c: str) -> bool:
    return c in _EDGE_CHARS or "\u00c0" <= c <= "\u024f"


@functools.lru_cache(maxsize=4096)
def _bare_id(order_id: str) -> tuple[str, bool]:
    """``order_id`` as text writes it, and whether it is short (written only after a "#")."""
    bare = unicodedata.normalize("NFKC", order_id).casefold().strip().lstrip("#")
    return bare, len(bare) < (SHORT_NUMBER if bare.isdigit() else SHORT_ID)


def _written_at(norm: str, order_id: str) -> int | None:
    """Where ``norm`` first writes ``order_id`` as a whole token (with its "#" if it has one),
    or None: the id with no id character (``_ID_EDGE``) or "#" before its "#" or first
    character, and none after it, nor a stop followed by a letter or digit ("O-1001.5")."""
    # Searched by hand, not by a pattern per id: compiling one costs about 0.4 ms.
    bare, short = _bare_id(order_id)
    if not bare:
        return None
    end = len(norm)
    at = norm.find(bare)
    while at >= 0:
        start = at - 1 if at and norm[at - 1] == "#" else at
        after = at + len(bare)
        if (
            (start < at or not short)
            and (start == 0 or not (_edge(norm[start - 1]) or norm[start - 1] == "#"))
            and not (after < end and _edge(norm[after]))
            and not (after + 1 < end and norm[after] in ".,:" and norm[after + 1] in _AFTER_STOP)
        ):
            return start
        at = norm.find(bare, at + 1)
    return None


def written_ids(text: str, order_ids: Sequence[str]) -> list[str]:
    """The ids among ``order_ids`` that ``text`` writes as a whole token, first written first
    (case, full-width digits and a leading "#" aside; a short id, ``SHORT_ID`` characters or
    ``SHORT_NUMBER`` digits, only with its "#")."""
    norm = unicodedata.normalize("NFKC", text).casefold()
    found: list[tuple[int, str]] = []
    for oid in dict.fromkeys(order_ids):
        at = _written_at(norm, oid)
        if at is not None:
            found.append((at, oid))
    return [oid for _, oid in sorted(found)]

"""Ids in text meant for people: a terminal line, a text log, a one-line message."""

from __future__ import annotations

import re

from baton_kafka.schemas.records import MAX_ID_CHARS

# Bare in text: no whitespace, quote or backslash, so a reader sees where the id ends.
_PLAIN = re.compile(r"[^\s\"'\\]+")


def shown(value: object, limit: int = MAX_ID_CHARS) -> str:
    """``value`` as text: bare when plain and printable, else double-quoted with quotes,
    backslashes and every unprintable character escaped; cut at ``limit`` characters ("…")."""
    if value is None:
        return "-"
    text = str(value)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    if text.isprintable() and _PLAIN.fullmatch(text):
        return text
    return '"' + "".join(_escaped(c) for c in text) + '"'


def _escaped(char: str) -> str:
    if char in '"\\':
        return "\\" + char
    if char.isprintable():
        return char
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def kept(value: object, limit: int = MAX_ID_CHARS) -> str:
    """``value`` for a machine-read field (a JSON log line): itself when it is printable and
    within ``limit``, else as :func:`shown` writes it."""
    text = str(value)
    return text if text.isprintable() and len(text) <= limit else shown(text, limit)

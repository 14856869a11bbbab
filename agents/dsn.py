"""Connection strings shown without their passwords: the one masking for output, logs, errors."""

from __future__ import annotations

import re
from urllib.parse import unquote

MASK = "***"
# scheme://user:password@host: the password runs to the last '@' of the authority, so an
# unencoded '@' in it is masked too.
_URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://[^\s:/?#@]*:)([^\s/?#]*)(?=@)")
# password=... as a URL query parameter or a libpq keyword (quoted or not); PGPASSWORD=...
_KEY_PASSWORD = re.compile(
    r"((?:^|(?<=[?&;\s]))(?:pg)?password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&;]*)", re.IGNORECASE
)
# Passwords shorter than this are not searched for literally: they would mask ordinary words.
MIN_LITERAL = 8


def mask_dsn(text: str) -> str:
    """``text`` with the password of every DSN or URL in it replaced by ``***``."""
    text = _URL_PASSWORD.sub(lambda m: m[1] + MASK, text)
    return _KEY_PASSWORD.sub(lambda m: m[1] + MASK, text)


def mask_url(url: str) -> str:
    """A connection URL as shown: masked like ``mask_dsn``, and a ``user:password@`` written
    without a scheme (``user:pw@host:9092``) hidden whole."""
    text = mask_dsn(url)
    head, at, tail = text.rpartition("@")
    if at and "://" not in head:
        return MASK + "@" + tail
    return text


def passwords(dsn: str) -> set[str]:
    """The passwords ``dsn`` carries, as written and percent-decoded."""
    found = {m[2] for m in _URL_PASSWORD.finditer(dsn)}
    found |= {m[2].strip("'") for m in _KEY_PASSWORD.finditer(dsn)}
    found |= {unquote(p) for p in found}
    return {p for p in found if p}


def scrub(text: str, dsn: str) -> str:
    """``text`` (an error about ``dsn``) with ``dsn``'s password masked wherever it appears."""
    text = mask_dsn(text)
    for secret in sorted(passwords(dsn), key=len, reverse=True):
        if len(secret) >= MIN_LITERAL:
            text = text.replace(secret, MASK)
    return text

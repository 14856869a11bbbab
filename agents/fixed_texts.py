"""The sentences baton writes to a customer itself, per language, read from ``fixed_texts.toml``."""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path

from baton_kafka.agents.languages import primary

_FILE = Path(__file__).with_name("fixed_texts.toml")


@functools.cache
def _table() -> dict[str, dict[str, str]]:
    return tomllib.loads(_FILE.read_text("utf-8"))


def has(key: str, language: str) -> bool:
    """``key`` is written in ``language`` (or its language subtag)."""
    texts = _table()[key]
    return language in texts or primary(language) in texts


def fixed(key: str, language: str, default: str = "en", **fill: str) -> str:
    """Sentence ``key`` in ``language``, else in ``default``, else English; ``fill`` put in."""
    texts = _table()[key]
    for lang in (language, primary(language), default, primary(default), "en"):
        if lang in texts:
            return texts[lang].format(**fill) if fill else texts[lang]
    raise KeyError(key)


def languages() -> tuple[str, ...]:
    """Every language some sentence of the file is written in, English first."""
    found = {lang for texts in _table().values() for lang in texts}
    return ("en", *sorted(found - {"en"}))


def keys() -> tuple[str, ...]:
    """The file's sentences by key."""
    return tuple(_table())


def fixed_or(key: str, language: str, otherwise: str, default: str = "en") -> str:
    """Sentence ``key`` as :func:`fixed` gives it, or ``otherwise`` when the file has no ``key``
    (a status or a remedy the file does not name)."""
    return fixed(key, language, default) if key in _table() else otherwise

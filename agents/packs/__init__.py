"""Language packs: the words a check reads text by, per language and concern, as data.

A pack is ``<language>/<concern>.toml`` in this folder (shipped) or in a shop's own folder
(added with ``extend``). Tables merge key by key; a list in a shop's pack extends the shipped
list, a scalar replaces it. No check keeps a phrase list of a language in Python.
"""

from __future__ import annotations

import functools
import hashlib
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "LANGUAGES",
    "SHIPPED",
    "PackError",
    "all_packs",
    "extend",
    "languages",
    "pack",
    "reset",
    "version",
]

SHIPPED = Path(__file__).parent
LANGUAGES: tuple[str, ...] = ("en", "zh", "de", "ja", "es", "fr")

_extra: list[Path] = []


class PackError(ValueError):
    """A pack file is not valid TOML or not of a pack's shape: one line naming the file."""


def extend(directory: Path) -> None:
    """Read ``directory``'s packs too, after the shipped ones (a shop's own words)."""
    directory = Path(directory)
    if directory not in _extra:
        _extra.append(directory)
        _cached.cache_clear()
        _version.cache_clear()


def reset() -> None:
    """Forget every directory added with ``extend`` (tests, a reloaded policy)."""
    _extra.clear()
    _cached.cache_clear()
    _version.cache_clear()


def languages(concern: str) -> tuple[str, ...]:
    """The languages with a pack for ``concern``, shipped order first."""
    return tuple(_cached(concern))


def pack(concern: str, language: str) -> Mapping[str, Any]:
    """``concern``'s words in ``language`` (its primary subtag), empty when it has none."""
    by_language = _cached(concern)
    return by_language.get(language) or by_language.get(language.split("-")[0].lower()) or {}


def all_packs(concern: str) -> Mapping[str, Mapping[str, Any]]:
    """``concern``'s words in every language that has them."""
    return _cached(concern)


def version() -> str:
    """A hash of every pack file read (shipped and a shop's): its version on every reply."""
    return _version(tuple(_extra))


@functools.cache
def _version(extra: tuple[Path, ...]) -> str:
    # Read once per set of folders, as the packs themselves are (``_cached``).
    digest = hashlib.sha256()
    for path in sorted(_files()):
        digest.update(str(path.relative_to(path.parent.parent)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _files() -> list[Path]:
    return [p for root in (SHIPPED, *_extra) for p in root.glob("*/*.toml")]


@functools.cache
def _cached(concern: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for root in (SHIPPED, *_extra):
        for path in sorted(root.glob(f"*/{concern}.toml")):
            try:
                data = tomllib.loads(path.read_text("utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
                raise PackError(f"{path}: {exc}") from None
            language = path.parent.name
            out[language] = _merge(out.get(language, {}), data)
    ordered = {lang: out[lang] for lang in LANGUAGES if lang in out}
    ordered.update({lang: words for lang, words in out.items() if lang not in ordered})
    return ordered


def _merge(base: dict[str, Any], more: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in more.items():
        old = merged.get(key)
        if isinstance(old, dict) and isinstance(value, Mapping):
            merged[key] = _merge(old, value)
        elif isinstance(old, list) and isinstance(value, list):
            merged[key] = [*old, *(v for v in value if v not in old)]
        else:
            merged[key] = value
    return merged

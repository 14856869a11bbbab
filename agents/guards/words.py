"""The language packs' words as patterns: each list of every language compiled once, again only
when a shop's folder is added (``packs.extend``)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ParamSpec, TypeVar

from baton_kafka.agents import packs, text_cache

T = TypeVar("T")
P = ParamSpec("P")
# Words in these scripts need no word boundary: a Chinese or Japanese word ends where it ends.
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]")
_cache: dict[Callable[[], Any], tuple[object, Any]] = {}
# Every builder ``compiled`` may make, in the order they were defined: ``warm`` makes them all.
_builders: dict[Callable[[], Any], None] = {}
B = TypeVar("B", bound=Callable[[], Any])


def builder(build: B) -> B:
    """Marks ``build`` as made from the packs alone: only a marked builder may be passed to
    ``compiled``, and ``warm`` makes every marked one before the first ticket."""
    _builders[build] = None
    return build


def compiled(build: Callable[[], T]) -> T:
    """``build()``, made once per version of the packs (a shop's folder added makes it again)."""
    token = packs.all_packs("money")  # a new object whenever the packs were read again
    hit = _cache.get(build)
    if hit is None or hit[0] is not token:
        if build not in _builders:  # else a worker would first make it during a ticket
            raise TypeError(f"{build.__qualname__}: mark it with @words.builder")
        hit = _cache[build] = (token, build())
    return hit[1]


def warm() -> None:
    """Make every marked builder's patterns now (those of the modules imported so far)."""
    for build in list(_builders):
        compiled(build)


def per_text(maxsize: int) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """A reading of a text kept for the last ``maxsize`` arguments, forgotten when the packs are
    read again: the guards share one reading of a reply instead of each making its own.

    The result is shared by every caller: it must be immutable (tuples, frozen dataclasses).
    """

    def wrap(read: Callable[P, T]) -> Callable[P, T]:
        cached = functools.lru_cache(maxsize=maxsize)(read)
        kept: Callable[..., T] = cached
        seen: list[object] = [None]

        @functools.wraps(read)
        def shared(*args: P.args, **kwargs: P.kwargs) -> T:
            token = packs.all_packs("money")  # a new object whenever the packs were read again
            if token is not seen[0]:
                cached.cache_clear()
                seen[0] = token
            return kept(*args, **kwargs)

        _readings.append(cached.cache_clear)
        text_cache.kept(cached.cache_clear)
        return shared

    return wrap


_readings: list[Callable[[], None]] = []


def forget_readings() -> None:
    """Forget every kept reading of a text (``per_text``): the next reading is made anew."""
    for clear in _readings:
        clear()


def _dig(words: Mapping[str, Any], key: str) -> Any:
    for part in key.split("."):
        if not isinstance(words, Mapping):
            return None
        words = words.get(part)  # type: ignore[assignment]
    return words


def entries(concern: str, key: str) -> list[str]:
    """The entries of list ``key`` ("wording.repeats") in every language's ``concern`` pack."""
    found: dict[str, None] = {}
    for words in packs.all_packs(concern).values():
        value = _dig(words, key)
        if isinstance(value, list):
            found.update((str(v), None) for v in value)
    return list(found)


def table(concern: str, key: str) -> dict[str, Any]:
    """Table ``key`` of every language's ``concern`` pack, merged: lists joined, else the later
    language's entry."""
    merged: dict[str, Any] = {}
    for words in packs.all_packs(concern).values():
        value = _dig(words, key)
        if not isinstance(value, Mapping):
            continue
        for k, v in value.items():
            old = merged.get(k)
            merged[k] = (
                [*old, *(x for x in v if x not in old)]
                if isinstance(old, list) and isinstance(v, list)
                else v
            )
    return merged


def cjk(entry: str) -> bool:
    """Whether ``entry`` is written in Chinese or Japanese characters."""
    return bool(_CJK.search(entry))


def alternation(
    concern: str,
    key: str,
    *,
    start: bool = True,
    end: bool = True,
    script: str = "any",
) -> str:
    """Every entry of ``key`` as one alternation, longest first; words in Latin letters start
    (``start``) and end (``end``) at a word boundary, Chinese and Japanese words anywhere.

    ``script`` "latin" or "cjk" keeps only the entries written in it.
    """
    return alternation_of(entries(concern, key), start=start, end=end, script=script)


def alternation_of(
    found: list[str], *, start: bool = True, end: bool = True, script: str = "any"
) -> str:
    """``found`` (a pack list's entries) as one alternation, as ``alternation`` makes it."""
    items = sorted(found, key=len, reverse=True)
    eastern = [e for e in items if cjk(e)]
    western = [e for e in items if not cjk(e)]
    if script == "latin":
        eastern = []
    elif script == "cjk":
        western = []
    # One boundary for the whole group: the engine then tries the words as one alternation.
    after = r"(?![^\W\d_])" if end else ""
    # An entry with its own lookbehind ("(?<=[^\W\d_])remos": any verb's ending) brings its start.
    lettered = [
        e
        for e in western
        if start and (e[:1].isalpha() or (e.startswith("(") and not e.startswith("(?<")))
    ]
    others = [e for e in western if e not in lettered]
    parts = []
    if lettered:
        parts.append(rf"(?<![^\W\d_])(?:{'|'.join(lettered)}){after}")
    if others:
        parts.append(rf"(?:{'|'.join(others)}){after}")
    if eastern:
        parts.append("|".join(eastern))
    return "|".join(parts) or "(?!)"


def languages(concern: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each language's ``concern`` pack."""
    yield from packs.all_packs(concern).items()

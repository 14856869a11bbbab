"""Readings of texts kept across tickets, and ``forget``: every one of them dropped at once."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# The ``cache_clear`` of every reading kept across tickets, in the order they were made.
_clears: list[Callable[[], None]] = []


def across_tickets(maxsize: int) -> Callable[[Callable[..., T]], functools._lru_cache_wrapper[T]]:
    """``functools.lru_cache(maxsize)``, and the cache known to ``forget``.

    A text often recurs ("Any update on this?"), so a reading of it is kept; but a benchmark
    whose few texts recur far more than a desk's would show that reading as nearly free.
    ``forget`` lets it measure as if every text were new.
    """

    def wrap(read: Callable[..., T]) -> functools._lru_cache_wrapper[T]:
        cached = functools.lru_cache(maxsize=maxsize)(read)
        _clears.append(cached.cache_clear)
        return cached

    return wrap


def kept(clear: Callable[[], None]) -> None:
    """Make a cache of texts kept elsewhere (its ``cache_clear``) known to ``forget``."""
    _clears.append(clear)


def forget() -> None:
    """Drop every reading of a text kept across tickets (the packs' patterns stay)."""
    for clear in _clears:
        clear()


def count() -> int:
    """How many caches of texts ``forget`` empties (those of the modules imported so far)."""
    return len(_clears)


__all__ = ["across_tickets", "count", "forget", "kept"]

"""Reading JSON Lines input for ``publish`` and ``orders import``: validate every line first."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import BaseModel

from baton_kafka.schemas.codec import InvalidRecord, parse

# Where it was first defined; its home is streams.progress.
from baton_kafka.streams.progress import Progress as Progress

M = TypeVar("M", bound=BaseModel)


@dataclass
class Loaded(Generic[M]):
    """Valid records and the invalid lines (line number, reason)."""

    records: list[M] = field(default_factory=list)
    errors: list[tuple[int, str]] = field(default_factory=list)


def _lines(source: str) -> Iterator[bytes]:
    if source == "-":
        yield from sys.stdin.buffer
        return
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {source}")
    with path.open("rb") as fh:
        yield from fh


def load(model: type[M], source: str) -> Loaded[M]:
    """Validate each non-blank line of ``source`` (a path or ``-``) as ``model``."""
    loaded: Loaded[M] = Loaded()
    for number, line in enumerate(_lines(source), start=1):
        if not line.strip():
            continue
        try:
            loaded.records.append(parse(model, line.strip()))
        except InvalidRecord as exc:
            loaded.errors.append((number, str(exc)))
    return loaded

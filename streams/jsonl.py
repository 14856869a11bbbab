"""Reading JSON Lines input for ``publish`` and ``orders import``: validate every line first."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Generic, TypeVar

from pydantic import BaseModel

from baton_kafka.schemas.codec import InvalidRecord, parse

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


class Progress:
    """A one-line progress bar on stderr, shown only for long runs."""

    def __init__(self, total: int, label: str, stream: IO[str] | None = None, min_total: int = 200):
        self.total = total
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = total >= min_total
        self.done = 0

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self.enabled and (self.done == self.total or self.done % 50 == 0):
            width = 30
            filled = int(width * self.done / max(self.total, 1))
            bar = "#" * filled + "-" * (width - filled)
            end = "\n" if self.done >= self.total else ""
            self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total}{end}")
            self.stream.flush()

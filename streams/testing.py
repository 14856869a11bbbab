"""In-memory doubles of the pipeline's sink and tables, for tests and in-process runs.

pipeline = Pipeline(settings=..., llm=..., store=..., sink=MemorySink(), state=MemoryState())
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

__all__ = ["MemorySink", "MemoryState", "MemoryTable"]

Records = list[tuple[str | None, bytes]]


@dataclass
class MemorySink:
    """Topics in memory: ``sent`` holds every record sent, ``take`` hands out the new ones.

    Tests may edit ``sent`` (pop a record to feed it to a stage, clear a topic to lose it);
    ``contains`` answers from ``sent``. ``headers`` holds each record's headers, in the order
    sent (not edited with ``sent``).
    """

    sent: defaultdict[str, Records] = field(default_factory=lambda: defaultdict(list))
    headers: defaultdict[str, list[list[tuple[str, bytes]]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    _untaken: defaultdict[str, deque[tuple[str | None, bytes]]] = field(
        default_factory=lambda: defaultdict(deque), init=False, repr=False
    )

    async def send(
        self,
        topic: str,
        key: str | None,
        value: bytes,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> None:
        self.sent[topic].append((key, value))
        self.headers[topic].append(list(headers or []))
        self._untaken[topic].append((key, value))

    async def contains(
        self, topic: str, key: str, since: datetime, match: Callable[[bytes], bool]
    ) -> bool:
        return any(k == key and match(v) for k, v in self.sent[topic])

    def take(self, topic: str) -> Records:
        """The records sent to ``topic`` since the last ``take`` of it."""
        queue = self._untaken[topic]
        taken = list(queue)
        queue.clear()
        return taken


@dataclass
class MemoryTable:
    """A table as a dict; ``tombstones`` lists the keys deleted, in order."""

    data: dict[str, bytes] = field(default_factory=dict)
    tombstones: list[str] = field(default_factory=list)

    def get(self, key: str) -> bytes | None:
        return self.data.get(key)

    def put(self, key: str, value: bytes) -> None:
        self.data[key] = value

    async def put_durably(self, key: str, value: bytes) -> None:
        self.put(key, value)

    def items(self) -> list[tuple[str, bytes]]:
        return list(self.data.items())

    def keys(self) -> list[str]:
        return list(self.data)

    def delete(self, key: str) -> None:
        self.data.pop(key, None)
        self.tombstones.append(key)


@dataclass
class MemoryState:
    """The pipeline's tables in memory."""

    batons: MemoryTable = field(default_factory=MemoryTable)
    customers: MemoryTable = field(default_factory=MemoryTable)

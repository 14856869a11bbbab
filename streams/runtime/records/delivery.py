"""One record as a stage reads it: its bytes, where and how it was read, its stage record
decoded at most once however many checks look at it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from baton_kafka.schemas.codec import InvalidRecord, parse
from baton_kafka.schemas.records import Ticket
from baton_kafka.schemas.stages import StageRecord
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.signing import Headers, Signer

_FIXED = (bytes, type(None))


@dataclass
class Delivery:
    """A record read off a stage's topic; ``record()`` decodes its bytes on first use only.

    The bytes stay as they came: the signature covers them, and dead letters keep them.
    """

    value: bytes | None
    source: Source
    headers: Headers | None = None
    _decoded: StageRecord | InvalidRecord | None = field(default=None, init=False, repr=False)
    # The last signature verdict with what it was made of (signer, topic, key and headers'
    # pairs; the bytes' object): the admission check, the shedding and the stage's checks each
    # ask, and the verdict is a function of those alone.
    _verdict: tuple[tuple[Any, ...], bytes | None, str | None] | None = field(
        default=None, init=False, repr=False
    )

    def record(self) -> StageRecord:
        """The stage record the bytes hold; raises ``InvalidRecord`` (the same reason each
        time) when they hold none."""
        decoded = self._decoded
        if decoded is None:
            try:
                decoded = parse(StageRecord, self.value)
            except InvalidRecord as exc:
                decoded = exc
            self._decoded = decoded
        if isinstance(decoded, InvalidRecord):
            raise InvalidRecord(str(decoded))
        return decoded

    def problem(self, signer: Signer, topic: str) -> str | None:
        """``signer.problem`` of the record read from ``topic``: computed once for the same
        signer, topic, key, bytes and headers."""
        if not signer.enabled:
            return None  # signing is off: every record is trusted, nothing to keep
        headers = self.headers
        pairs = tuple(headers.items() if isinstance(headers, Mapping) else headers or ())
        asked = (signer, topic, self.source.key, pairs)
        kept = self._verdict
        # Bytes cannot change under their object (a bytearray could: its verdict is not reused).
        fixed = type(self.value) in _FIXED
        if kept is not None and fixed and kept[1] is self.value and kept[0] == asked:
            return kept[2]
        problem = signer.problem(topic, self.source.key, self.value, pairs)
        self._verdict = (asked, self.value, problem)
        return problem

    def ticket(self) -> Ticket | None:
        """The record's ticket, or None when the bytes are not a valid stage record."""
        try:
            return self.record().ticket
        except InvalidRecord:
            return None

"""One record as a stage reads it: its bytes, where and how it was read, its stage record
decoded at most once however many checks look at it."""

from __future__ import annotations

from dataclasses import dataclass, field

from baton_kafka.schemas.codec import InvalidRecord, parse
from baton_kafka.schemas.records import Ticket
from baton_kafka.schemas.stages import StageRecord
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.signing import Headers


@dataclass
class Delivery:
    """A record read off a stage's topic; ``record()`` decodes its bytes on first use only.

    The bytes stay as they came: the signature covers them, and dead letters keep them.
    """

    value: bytes | None
    source: Source
    headers: Headers | None = None
    _decoded: StageRecord | InvalidRecord | None = field(default=None, init=False, repr=False)

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

    def ticket(self) -> Ticket | None:
        """The record's ticket, or None when the bytes are not a valid stage record."""
        try:
            return self.record().ticket
        except InvalidRecord:
            return None

"""The intake: a raw ticket validated, dated, bounded and forwarded keyed by its session."""

from __future__ import annotations

import orjson

from baton_kafka.schemas.codec import InvalidRecord, dumps, parse
from baton_kafka.schemas.framing import unframe
from baton_kafka.schemas.records import Ticket
from baton_kafka.schemas.stages import StageRecord
from baton_kafka.streams.observe import tracing
from baton_kafka.streams.runtime.answers.letters import Letters
from baton_kafka.streams.runtime.records.dead_letters import Source, read_as
from baton_kafka.streams.runtime.records.signing import Headers
from baton_kafka.streams.runtime.session import ownership
from baton_kafka.streams.runtime.trust.admission import Admission


class Intake(Letters):
    """Takes tickets in: every one becomes a stage record on the sessions topic or a dead
    letter."""

    admission: Admission
    consumer: tracing.Consumer

    async def intake(
        self, value: bytes | None, source: Source, headers: Headers | None = None
    ) -> None:
        """Validate a raw ticket and forward it keyed by session, or dead-letter it."""
        source = read_as(source, value, headers)
        with tracing.stage_span("intake", headers, source, self.consumer):
            await self._intake(value, source)

    async def _intake(self, value: bytes | None, source: Source) -> None:
        self.observer.record_in("intake")
        try:
            ticket = parse(Ticket, self._unframed(value))
            if (short := ownership.short_guest_id(ticket)) is not None:
                raise InvalidRecord(short)
        except InvalidRecord as exc:
            self.observer.stage_done("intake", "invalid", 0.0)
            await self._reject("intake", value, exc, source)
            return
        tracing.annotate(ticket.ticket_id, ticket.session_id)
        if self.admission.erased(ticket, source):
            self._drop_erased("intake", ticket)
            return
        self.observer.stage_done("intake", "ok", 0.0)
        ticket = self.admission.bounded(self.admission.dated(ticket, source))
        record = StageRecord(
            ticket=ticket,
            source_topic=source.topic,
            source_partition=source.partition,
            source_offset=source.offset,
        )
        await self.out.send(self.topics.sessions, ticket.session_id, dumps(record))

    def _unframed(self, value: bytes | None) -> bytes | None:
        """A ticket's JSON: a Schema Registry serializer's frame is taken off when the
        registry is on, and named in the error otherwise."""
        if not value:
            return value
        ref, payload = unframe(value)
        if ref is None or self.settings.schema_registry_url:
            return payload
        raise InvalidRecord(
            f"value is framed by a Schema Registry serializer (schema {ref.id or ref.guid}); "
            "set BATON_SCHEMA_REGISTRY_URL to accept the framed form"
        )


def session_key(value: bytes | None, raw_key: bytes | None) -> bytes:
    """The session a raw ticket names, as the bytes its tickets are forwarded in sequence by;
    the record's own key when the value names none (it will be dead-lettered).

    Never raises: a worker reads every record's key before it validates the record.
    """
    if value:
        try:
            named = orjson.loads(unframe(value)[1]).get("session_id")
        except (orjson.JSONDecodeError, AttributeError):
            named = None
        # A JSON number is the session its digits name (as the ticket's validation reads it).
        if isinstance(named, int) and not isinstance(named, bool):
            named = str(named)
        if isinstance(named, str) and named:
            return b"s:" + named.encode("utf-8", "surrogatepass")
    return b"k:" + (raw_key or b"")

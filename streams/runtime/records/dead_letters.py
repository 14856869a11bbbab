"""Dead letters: what could not be processed normally, with Kafka Connect style error headers."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime

from pydantic import ValidationError

from baton_kafka.agents.outcome import Failure
from baton_kafka.schemas.codec import InvalidRecord, dumps, parse
from baton_kafka.schemas.records import DeadLetter, StageName, Ticket
from baton_kafka.schemas.stages import StageRecord
from baton_kafka.streams.kafka.carrier import Headers
from baton_kafka.streams.observe.shown import shown

HEADER_PREFIX = "__connect.errors."


@dataclass(frozen=True)
class Source:
    """Where a record was read from and, once a stage has it, the record as it was read.

    ``key`` is the key as text (None for a record handed over in-process, whose place is not
    checked); ``raw_key`` the key's bytes as read, which a Connect-format dead letter keeps.
    """

    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    key: str | None = None
    # When the record was written (its broker timestamp), if known.
    timestamp: datetime | None = None
    raw_key: bytes | None = field(default=None, repr=False)
    value: bytes | None = field(default=None, repr=False)
    headers: tuple[tuple[str, bytes], ...] = field(default=(), repr=False)


def read_as(source: Source, value: bytes | None, headers: Headers | None) -> Source:
    """``source`` with the record as it was read: what a Connect-format dead letter keeps."""
    if type(source) is not Source:
        return replace(source, value=value, headers=tuple(headers or ()))
    # Every record a stage takes passes here: a copy of the fields costs a fifth of
    # ``replace``, which rebuilds the object through ``__init__`` field by field (Source has
    # no ``__post_init__`` to skip).
    read = object.__new__(Source)
    fields = read.__dict__
    fields.update(source.__dict__)
    fields["value"] = value
    fields["headers"] = tuple(headers or ())
    return read


def new_id() -> str:
    """A fresh dead-letter id."""
    return uuid.uuid4().hex[:16]


def readable(exc: BaseException) -> str:
    """A one-paragraph explanation of why a record was rejected."""
    if isinstance(exc, ValidationError):
        parts = []
        for err in exc.errors(include_url=False):
            where = ".".join(str(p) for p in err["loc"]) or "record"
            parts.append(f"{where}: {err['msg']}")
        return "; ".join(parts)
    return str(exc) or type(exc).__name__


def letter(
    *,
    stage: StageName,
    reason: str,
    error: str,
    payload: bytes | str,
    source: Source,
    ticket: Ticket | None = None,
    ticket_id: str | None = None,
    session_id: str | None = None,
    attempts: int = 1,
    model: str | None = None,
    prompt_version: str | None = None,
    request_id: str | None = None,
) -> DeadLetter:
    """Build a dead letter; ``payload`` bytes are kept as text (invalid UTF-8 escaped)."""
    text = payload.decode("utf-8", "backslashreplace") if isinstance(payload, bytes) else payload
    return DeadLetter(
        id=new_id(),
        ticket_id=ticket.ticket_id if ticket else ticket_id,
        session_id=ticket.session_id if ticket else session_id,
        stage=stage,
        reason=reason,
        error=error,
        payload=text,
        attempts=attempts,
        source_topic=source.topic,
        source_partition=source.partition,
        source_offset=source.offset,
        model=model,
        prompt_version=prompt_version,
        request_id=request_id,
        ticket=ticket,
    )


def from_failure(
    failure: Failure, *, stage: StageName, ticket: Ticket, source: Source
) -> DeadLetter:
    """The dead letter of a stage that fell back after a model or store failure."""
    return letter(
        stage=stage,
        reason=failure.reason,
        error=failure.error,
        payload=failure.payload,
        source=source,
        ticket=ticket,
        attempts=failure.attempts,
        model=failure.model,
        prompt_version=failure.prompt_version,
        request_id=failure.request_id,
    )


def conflict(stage: StageName, ticket: Ticket, problem: str, source: Source) -> DeadLetter:
    """The dead letter of a ticket that may not use its session; it carries the ticket.

    It is filed under its sender, not the session (``session_id`` empty, the pipeline keys it
    by the sender): the session's own history does not show another sender's text.
    """
    dl = letter(
        stage=stage,
        reason="session_conflict",
        error=problem,
        payload=dumps(ticket),
        source=source,
        ticket=ticket,
    )
    return dl.model_copy(update={"session_id": None})


def flood(stage: StageName, ticket: Ticket, source: Source, cap: int) -> DeadLetter:
    """The dead letter of a ticket its session had no room for: it gets no reply."""
    return letter(
        stage=stage,
        reason="session_flood",
        error=(
            f"session {shown(ticket.session_id)} already had {cap} tickets waiting in {stage} "
            "(BATON_MAX_QUEUED_PER_SESSION): this ticket was not processed and got no reply; "
            "re-drive it with `baton dlq requeue` once the session is quiet"
        ),
        payload=dumps(ticket),
        source=source,
        ticket=ticket,
    )


def untrusted(
    stage: StageName,
    value: bytes | None,
    problem: str,
    source: Source,
    ticket: Ticket | None = None,
) -> DeadLetter:
    """The dead letter of a record whose signature is missing or wrong: its bytes as they came.

    The ticket inside, if the record parses (``ticket``, when the caller decoded it already),
    is kept for a re-drive through the public tickets topic (where it is validated and signed
    again like any customer's ticket).
    """
    if ticket is None:
        try:
            ticket = parse(StageRecord, value).ticket
        except InvalidRecord:
            ticket = None
    return letter(
        stage=stage,
        reason="untrusted_record",
        error=problem,
        payload=value or b"",
        source=source,
        ticket=ticket,
    )


def headers(dl: DeadLetter) -> list[tuple[str, bytes]]:
    """Kafka Connect's ``__connect.errors.*`` headers, plus baton's own reason and stage."""
    pairs = {
        "topic": dl.source_topic,
        "partition": None if dl.source_partition is None else str(dl.source_partition),
        "offset": None if dl.source_offset is None else str(dl.source_offset),
        "stage": dl.stage,
        "connector.name": "baton",
        "exception.class.name": dl.reason,
        "exception.message": dl.error[:1000],
    }
    out = [(HEADER_PREFIX + k, v.encode()) for k, v in pairs.items() if v is not None]
    out.append(("baton.reason", dl.reason.encode()))
    out.append(("baton.dead_letter_id", dl.id.encode()))
    return out

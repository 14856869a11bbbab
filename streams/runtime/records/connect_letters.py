"""Dead letters in Kafka Connect's format: the failed record as read, plus Connect's headers.

A Connect-format dead letter is the record a stage read (its key, value and headers unchanged)
with the ``__connect.errors.*`` headers Kafka Connect's dead-letter reporter writes, so any
tool that re-drives Connect's dead letters (produce the value with its key and headers to
``__connect.errors.topic``) re-drives baton's. baton's own details ride along as ``baton.*``
headers, so that ``baton dlq`` reads these as it reads its ``DeadLetter`` records.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from pydantic import ValidationError

from baton_kafka.schemas.codec import InvalidRecord, parse
from baton_kafka.schemas.records import DeadLetter, Ticket
from baton_kafka.schemas.stages import StageRecord
from baton_kafka.streams.kafka.carrier import Headers
from baton_kafka.streams.runtime.records.dead_letters import HEADER_PREFIX, Source

# Connect's stage of a record that could not be decoded, and of one its task failed on.
DECODING_REASONS = frozenset({"invalid_input", "untrusted_record"})
# What Connect puts in one header: the message is cut there (the record's own size limit).
MAX_MESSAGE = 10_000
MAX_OUTPUT = 64_000

# baton's details of the failure, beside Connect's headers.
REASON = "baton.reason"
ID = "baton.dead_letter_id"
STAGE = "baton.stage"
ATTEMPTS = "baton.failure_attempts"
MODEL = "baton.model"
PROMPT_VERSION = "baton.prompt_version"
REQUEST_ID = "baton.request_id"
# The model's raw output behind a fallback: the one part of a DeadLetter not in the record.
OUTPUT = "baton.model_output"
OWN = frozenset({REASON, ID, STAGE, ATTEMPTS, MODEL, PROMPT_VERSION, REQUEST_ID, OUTPUT})


def exception_class(dl: DeadLetter) -> str:
    """A dotted class name for the failure: the exception's where there was one."""
    if dl.reason == "invalid_input":
        return f"{InvalidRecord.__module__}.{InvalidRecord.__qualname__}"
    if dl.reason == "stage_error" and (found := re.match(r"([A-Za-z_][\w.]*): ", dl.error)):
        return found.group(1)
    return "baton.errors." + "".join(part.capitalize() for part in dl.reason.split("_"))


def error_headers(dl: DeadLetter, source: Source, connector: str) -> Headers:
    """The whole ``__connect.errors.*`` set Kafka Connect writes, in its order and encoding."""
    decoding = dl.reason in DECODING_REASONS
    method = "intake" if dl.stage == "intake" else "run_stage"
    cls = exception_class(dl)
    message = dl.error[:MAX_MESSAGE]
    pairs = {
        "topic": source.topic,
        "partition": None if source.partition is None else str(source.partition),
        "offset": None if source.offset is None else str(source.offset),
        "connector.name": connector,
        # A worker owns partitions the way a Connect task does: the partition is the task.
        "task.id": str(source.partition or 0),
        "stage": "VALUE_CONVERTER" if decoding else "TASK_PUT",
        "class.name": f"baton_kafka.streams.runtime.pipeline.Pipeline.{method}",
        "exception.class.name": cls,
        "exception.message": message,
        "exception.stacktrace": f"{cls}: {message}\n\tat baton {dl.stage} ({dl.reason})",
    }
    return [(HEADER_PREFIX + k, v.encode()) for k, v in pairs.items() if v is not None]


def own_headers(dl: DeadLetter, source: Source) -> Headers:
    """baton's details: reason, id, stage, attempts, the model's, and its raw output."""
    pairs = {
        REASON: dl.reason,
        ID: dl.id,
        STAGE: dl.stage,
        ATTEMPTS: str(dl.attempts),
        MODEL: dl.model,
        PROMPT_VERSION: dl.prompt_version,
        REQUEST_ID: dl.request_id,
    }
    out = [(k, v.encode()) for k, v in pairs.items() if v is not None]
    read = (source.value or b"").decode("utf-8", "backslashreplace")
    if dl.payload and dl.payload != read:
        out.append((OUTPUT, dl.payload[:MAX_OUTPUT].encode()))
    return out


def connect_record(
    dl: DeadLetter, source: Source, connector: str
) -> tuple[bytes | None, bytes, Headers]:
    """The key, value and headers of ``dl`` in Connect's format.

    The record's own headers are kept in order, except the error headers of an earlier
    failure (a re-driven record that failed again): each error header appears once.
    """
    kept = [(k, v) for k, v in source.headers if not k.startswith(HEADER_PREFIX) and k not in OWN]
    headers = kept + error_headers(dl, source, connector) + own_headers(dl, source)
    return source.raw_key, source.value or b"", headers


def is_connect(headers: Headers) -> bool:
    """Whether a dead-letter topic record is in Connect's format (it has Connect's headers)."""
    return any(k == HEADER_PREFIX + "exception.class.name" for k, _ in headers)


def _ticket(value: bytes | None) -> Ticket | None:
    for read in (lambda: parse(Ticket, value), lambda: parse(StageRecord, value).ticket):
        try:
            return read()
        except InvalidRecord:
            continue
    return None


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def from_connect(
    key: bytes | None, value: bytes | None, headers: Headers, timestamp_ms: int, fallback_id: str
) -> DeadLetter | None:
    """The ``DeadLetter`` a Connect-format record stands for (None if it is not one).

    Records written by Connect itself, with no ``baton.*`` headers, read as dead letters of the
    intake stage with the exception's class as reason and ``fallback_id`` as id.
    """
    if not is_connect(headers):
        return None
    h = {k: v.decode("utf-8", "backslashreplace") for k, v in headers}
    ticket = _ticket(value)
    err = HEADER_PREFIX
    try:
        return DeadLetter(
            id=h.get(ID) or fallback_id,
            ticket_id=ticket.ticket_id if ticket else None,
            session_id=ticket.session_id
            if ticket
            else (key.decode("utf-8", "backslashreplace") if key else None),
            stage=h.get(STAGE) or "intake",
            reason=h.get(REASON) or h[err + "exception.class.name"],
            error=h.get(err + "exception.message", ""),
            payload=h.get(OUTPUT) or (value or b"").decode("utf-8", "backslashreplace"),
            attempts=_int(h.get(ATTEMPTS)) or 1,
            failed_at=datetime.fromtimestamp(timestamp_ms / 1000, UTC),
            source_topic=h.get(err + "topic"),
            source_partition=_int(h.get(err + "partition")),
            source_offset=_int(h.get(err + "offset")),
            model=h.get(MODEL),
            prompt_version=h.get(PROMPT_VERSION),
            request_id=h.get(REQUEST_ID),
            ticket=ticket,
        )
    except ValidationError:
        return None

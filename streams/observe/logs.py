"""Worker logs: one JSON line (or readable text) per event, secrets and prompts redacted."""

from __future__ import annotations

import contextlib
import logging
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson

from baton_kafka.agents.dsn import passwords
from baton_kafka.schemas.records import CallUsage, Reply
from baton_kafka.streams.observe.redaction import RedactFilter
from baton_kafka.streams.observe.shown import kept, shown
from baton_kafka.streams.observe.tracing import current_span_ids
from baton_kafka.streams.settings import Settings

FIELDS = (
    "ticket_id",
    "session_id",
    "stage",
    "outcome",
    "duration_ms",
    "request_id",
    "trace_id",
    "span_id",
)
# A JSON string (escapes and all) or a JSON integer: the id as the producer wrote it.
_TICKET_ID = re.compile(rb'"ticket_id"\s*:\s*("(?:[^"\\]|\\.){1,400}"|-?[0-9]{1,200})')
_SESSION_ID = re.compile(rb'"session_id"\s*:\s*("(?:[^"\\]|\\.){1,400}"|-?[0-9]{1,200})')
_SCAN_BYTES = 4096

log = logging.getLogger("baton.events")


# The second of the last line written and its text to the second: a worker writes many lines
# a second, and datetime's formatting of a moment costs more than the rest of a line's stamp.
_second: tuple[int, str] = (0, "1970-01-01T00:00:00")


def _ts(record: logging.LogRecord) -> str:
    """``record.created`` in UTC to the millisecond ("…T10:19:10.286Z"), as datetime writes it."""
    global _second
    # datetime.fromtimestamp's own rounding: the fraction to the microsecond, half to even,
    # a carry moving to the next second (so a stamp is never read from the float's floor).
    fraction, whole = math.modf(record.created)
    micros = round(fraction * 1e6)
    second = int(whole)
    if micros >= 1_000_000:
        micros -= 1_000_000
        second += 1
    elif micros < 0:
        micros += 1_000_000
        second -= 1
    last = _second
    if last[0] != second:
        text = datetime.fromtimestamp(second, UTC).isoformat(timespec="seconds")
        last = _second = (second, text.replace("+00:00", ""))
    return f"{last[1]}.{micros // 1000:03d}Z"


def _exception(formatter: logging.Formatter, record: logging.LogRecord) -> str | None:
    if record.exc_info and not record.exc_text:
        record.exc_text = formatter.formatException(record.exc_info)
    return record.exc_text or None


def _fields(record: logging.LogRecord) -> list[tuple[str, Any]]:
    """The record's known event fields; ``trace_id`` and ``span_id`` from the current span
    when not given.

    A handler formats in the task that logged, so the current span is the one of the ticket
    being processed.
    """
    # A record's attributes, ``extra`` ones included, are its instance's: read from there.
    given = record.__dict__
    if given.get("trace_id") is None:
        ids = current_span_ids()
        record.trace_id, record.span_id = ids if ids else (None, None)
    return [(name, given[name]) for name in FIELDS if given.get(name) is not None]


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg and the known event fields."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": _ts(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for name, value in _fields(record):
            line[name] = value
        exc = _exception(self, record)
        if exc:
            line["exc"] = exc
        return orjson.dumps(line, default=str).decode()


class TextFormatter(logging.Formatter):
    """``ts LEVEL logger: msg key=value …`` for people reading a terminal."""

    def format(self, record: logging.LogRecord) -> str:
        parts = [_ts(record), f"{record.levelname:<7}", f"{record.name}:", record.getMessage()]
        for name, value in _fields(record):
            parts.append(f"{name}={shown(value)}")
        text = " ".join(parts)
        exc = _exception(self, record)
        return f"{text}\n{exc}" if exc else text


_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}


def level_of(name: str) -> int:
    """A logging level from ``info``, ``WARN``, ``debug``…; INFO when unknown."""
    return _LEVELS.get(name.strip().lower(), logging.INFO)


def faust_loglevel(settings: Settings) -> str:
    """The level handed to Faust's worker: never WARN or above.

    At WARN and above Faust installs a terminal spinner and sets the root logger to DEBUG;
    the configured level is applied by our own configuration instead.
    """
    return "debug" if level_of(settings.log_level) <= logging.DEBUG else "info"


def lean_records() -> None:
    """Make every log record of this process skip the calling frame, thread and process it
    would look up: no line the worker writes shows them (the logging HOWTO's optimisation)."""
    # Each stage outcome and model call is a record: the lookups were a quarter of its cost.
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


def logging_config(settings: Settings) -> dict[str, Any]:
    """The worker's ``dictConfig``: handed to ``faust.Worker(logging_config=...)``."""
    secrets = [
        settings.anthropic_api_key or "",
        settings.web_token or "",
        settings.desk_token or "",
        settings.kafka.password,
        settings.kafka.key_password,
        settings.kafka.oauth_token,
        settings.kafka.oauth_client_secret,
        settings.schema_registry_user_info.partition(":")[2],
        *passwords(settings.orders_dsn),
        (settings.orders_auth_header or ("", ""))[1],
        *passwords(settings.schema_registry_url),
        *(secret for _, secret in settings.signing_keys),
    ]
    formatter = JsonFormatter if settings.log_format == "json" else TextFormatter
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"baton": {"()": f"{__name__}.{formatter.__name__}"}},
        "filters": {
            "redact": {
                "()": f"{RedactFilter.__module__}.RedactFilter",
                "secrets": secrets,
                "tracebacks": level_of(settings.log_level) <= logging.DEBUG,
            }
        },
        "handlers": {
            "default": {
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stderr",
                "formatter": "baton",
                "filters": ["redact"],
            }
        },
        # One line per HTTP request to the model API is noise at this volume.
        "loggers": {name: {"level": "WARNING"} for name in ("httpx", "httpx2")},
        "root": {"level": level_of(settings.log_level), "handlers": ["default"]},
    }


# The record whose ids were read last, and its ids: a stage logs several events per record.
_last_read: tuple[bytes, dict[str, str]] | None = None


# faust's ``current_event``, imported on the first log event (not at import: faust is heavy).
_current_event: Callable[[], Any] | None = None


def _event_of() -> Callable[[], Any]:
    global _current_event
    if _current_event is None:
        from faust import current_event

        _current_event = current_event
    return _current_event


def current_ids() -> dict[str, str]:
    """ticket_id and session_id of the record this task is processing, when there is one."""
    return dict(_read_ids())


def _read_ids() -> dict[str, str]:
    """``current_ids``, possibly the very dict handed out for the same record before: read it,
    never change it (the observer spreads it into each event's fields)."""
    global _last_read
    try:
        event = _event_of()()
        value = event.message.value if event is not None else None
    except Exception:
        return {}
    if isinstance(value, bytes):
        last = _last_read
        if last is not None and last[0] is value:
            return last[1]
        ids = _ids_in(value)
        # Bytes cannot change, so the same object always holds the same ids.
        _last_read = (value, ids)
        return ids
    if not isinstance(value, bytearray):
        return {}
    return _ids_in(bytes(value))


def _ids_in(value: bytes) -> dict[str, str]:
    """ticket_id and session_id as a record's bytes hold them, read before validation."""
    head = value[:_SCAN_BYTES]
    ids: dict[str, str] = {}
    for name, pattern in (("ticket_id", _TICKET_ID), ("session_id", _SESSION_ID)):
        found = pattern.search(head)
        if found:
            # Read before validation: the record may be invalid, its id anything.
            with contextlib.suppress(orjson.JSONDecodeError):
                ids[name] = kept(orjson.loads(found.group(1)))
    return ids


class LoggingObserver:
    """One structured log event per stage outcome, dead letter, context fallback and reply."""

    QUIET_OUTCOMES = frozenset({"ok", "reused"})

    def __init__(self, logger: logging.Logger = log) -> None:
        self.log = logger

    def record_in(self, stage: str) -> None:
        pass

    def stage_done(self, stage: str, outcome: str, seconds: float) -> None:
        level = logging.INFO if outcome in self.QUIET_OUTCOMES else logging.WARNING
        if not self.log.isEnabledFor(level):
            return
        extra: dict[str, Any] = {"stage": stage, "outcome": outcome, **_read_ids()}
        if seconds > 0:
            extra["duration_ms"] = round(seconds * 1000, 1)
        self.log.log(level, "%s %s", stage, outcome, extra=extra)

    def dead_letter(self, stage: str, reason: str) -> None:
        if self.log.isEnabledFor(logging.WARNING):
            extra = {"stage": stage, "outcome": "dead_letter", **_read_ids()}
            self.log.warning("dead letter from %s: %s", stage, reason, extra=extra)

    def model_calls(self, calls: list[CallUsage]) -> None:
        if not calls or not self.log.isEnabledFor(logging.INFO):
            return
        ids = _read_ids()
        for call in calls:
            # Every event line has a stage and an outcome; a model call's is "model_call".
            extra = {
                "stage": call.stage,
                "outcome": "model_call",
                "request_id": call.request_id,
                **ids,
            }
            self.log.info(
                "model call %s: %d tokens in, %d out",
                call.model,
                call.input_tokens + call.cache_read_tokens + call.cache_write_tokens,
                call.output_tokens,
                extra=extra,
            )

    def context(self, stage: str, level: str) -> None:
        if level == "full":
            return
        severity = logging.WARNING if level == "broken" else logging.INFO
        if self.log.isEnabledFor(severity):
            extra = {"stage": stage, "outcome": f"context_{level}", **_read_ids()}
            self.log.log(severity, "%s rebuilt its context: %s", stage, level, extra=extra)

    def reply(self, reply: Reply, end_to_end_s: float | None) -> None:
        level = logging.INFO if reply.status == "answered" else logging.WARNING
        if not self.log.isEnabledFor(level):
            return
        extra: dict[str, Any] = {
            "ticket_id": reply.ticket_id,
            "session_id": reply.session_id,
            "stage": "reply",
            "outcome": reply.status,
        }
        if end_to_end_s is not None:
            extra["duration_ms"] = round(end_to_end_s * 1000, 1)
        self.log.log(level, "reply %s", reply.status, extra=extra)

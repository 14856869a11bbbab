"""Redaction: API keys, configured secrets and prompt payloads taken out of log text."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

from baton_kafka.agents.dsn import mask_dsn

# Payload keys whose values are prompts: the model's instructions or the customer's context.
PAYLOAD_KEYS = frozenset({"system", "prompt", "messages"})
REDACTED = "[redacted]"
_API_KEY = re.compile(r"sk-ant-[A-Za-z0-9_\-]{6,}")
_HEADER_SECRET = re.compile(r"(?i)(x-api-key['\"]?\s*[:=]\s*['\"]?)[^\s'\",}]+")
_BEARER = re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=\-]+")
_PAYLOAD_TEXT = re.compile(
    r"""(['"]?\b(?:system|prompt|messages)\b['"]?\s*[:=]\s*)(['"])(?:\\.|(?!\2).)*\2""",
    re.DOTALL,
)
# What each pattern above (and ``mask_dsn``'s) needs in the text to match: no match of this,
# no substitution. Case-blind like the (?i) patterns, with re's own folding (K, ſ, İ).
_MAYBE_SECRET = re.compile(
    r"sk-ant-|x-api-key|bearer|://|password|system|prompt|messages", re.IGNORECASE
)

# How much of an exception's message a log line shows: enough to tell errors apart.
MAX_ERROR_CHARS = 160


def describe(exc: BaseException) -> str:
    """An exception as a log line shows it: its type and a short message, DSN passwords masked.

    A validation error is told by field and kind only: its message would quote the input, which
    may be a customer's text. Never a traceback (those are logged at debug level only).
    """
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        where = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'record'}: {e['type']}"
            for e in exc.errors(include_url=False, include_input=False, include_context=False)
        )
        message = f"{exc.error_count()} validation error(s): {where}"
    else:
        message = str(exc)
    message = " ".join(mask_dsn(message).split())
    if len(message) > MAX_ERROR_CHARS:
        message = message[:MAX_ERROR_CHARS] + "…"
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


class Redactor:
    """Replaces API keys, configured secrets and prompt payloads in text and log arguments."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # Short values would blank ordinary words; real keys and tokens are long.
        self.secrets = sorted({s for s in secrets if s and len(s) >= 8}, key=len, reverse=True)

    def text(self, value: str) -> str:
        # Most log lines ("understand ok") hold nothing to redact: one search tells, instead of
        # five substitutions that would each leave the text as it is.
        if _MAYBE_SECRET.search(value) is None:
            for secret in self.secrets:
                if secret in value:
                    return self._redacted(value)
            return value
        return self._redacted(value)

    def _redacted(self, value: str) -> str:
        for secret in self.secrets:
            value = value.replace(secret, REDACTED)
        value = _API_KEY.sub("sk-ant-" + REDACTED, value)
        value = _HEADER_SECRET.sub(r"\1" + REDACTED, value)
        value = _BEARER.sub(r"\1" + REDACTED, value)
        value = mask_dsn(value)
        return _PAYLOAD_TEXT.sub(r"\1" + REDACTED, value)

    def value(self, value: Any, depth: int = 0) -> Any:
        """``value`` with prompt payloads removed from mappings, lists and prompt objects."""
        if depth > 6 or type(value) in _PLAIN:
            return value
        if isinstance(value, Mapping):
            return {
                k: REDACTED if k in PAYLOAD_KEYS else self.value(v, depth + 1)
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return type(value)(self.value(v, depth + 1) for v in value)
        if hasattr(value, "system") and (hasattr(value, "context") or hasattr(value, "prompt")):
            return _Hidden(f"<{type(value).__name__} {REDACTED}>")
        return value


# Log arguments that hold no payload: most of them, passed through without the checks below.
_PLAIN = frozenset({str, int, float, bool, type(None)})


def _plain_args(args: object) -> bool:
    """No arguments, or a tuple of plain values only (the arguments of nearly every line)."""
    if not args:
        return True
    return type(args) is tuple and _PLAIN.issuperset(map(type, args))


class _Hidden(str):
    """A placeholder that reads the same through ``%s`` and ``%r``."""

    def __repr__(self) -> str:
        return str(self)


class RedactFilter(logging.Filter):
    """A handler filter: formats each record's message once, then redacts it.

    Without ``tracebacks`` (any level but debug) an exception is shown as ``describe`` tells
    it, one line: a traceback's frames and messages may carry record contents.
    """

    def __init__(self, secrets: Iterable[str] = (), tracebacks: bool = False) -> None:
        super().__init__()
        self.redactor = Redactor(secrets)
        self.tracebacks = tracebacks

    def filter(self, record: logging.LogRecord) -> bool:
        r = self.redactor
        msg, args = record.msg, record.args
        try:
            if type(msg) is str and _plain_args(args):
                # Nothing ``Redactor.value`` would change: a text and plain values.
                text = msg % args if args else msg
            else:
                if isinstance(args, Mapping):
                    args = r.value(args)
                elif args:
                    args = tuple(r.value(a) for a in args)
                msg = r.value(msg)
                text = str(msg) % args if args else str(msg)
        except Exception:
            text = f"{record.msg!s} {record.args!r}"
        record.msg, record.args = r.text(text), None
        given = record.__dict__
        for key in PAYLOAD_KEYS:
            if key in given:
                setattr(record, key, REDACTED)
        if record.exc_info and not self.tracebacks:
            exc = record.exc_info[1]
            record.exc_info = None
            record.exc_text = describe(exc) if exc is not None else None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = r.text(record.exc_text)
        return True

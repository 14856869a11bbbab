"""How a failed Messages API request ended: retryable or not, overloaded, when to retry."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anthropic

from baton_kafka.agents.models.llm import ModelFailure, SpendLimit, TimedOut, Unavailable

_SPEND_WORDS = re.compile(r"spend limit|spending limit|usage limit|credit balance", re.I)
_RETRY_STATUS = frozenset({408, 409, 429})
_OVERLOAD_STATUS = frozenset({429, 529})


def spend_limit_message(body: Any) -> str | None:
    """The API's explanation when an error body says the spend limit is reached, else None."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return None
    message = str(error.get("message") or "")
    details = error.get("details")
    code = str(details.get("error_code", "")) if isinstance(details, dict) else ""
    if "spend_limit" in code or _SPEND_WORDS.search(message):
        return message or code
    return None


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """The wait an answer asks for (``retry-after-ms`` or ``retry-after``), in seconds."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            return float(headers[name]) * scale
        except (KeyError, TypeError, ValueError):
            continue
    return None


@dataclass(frozen=True)
class Attempt:
    """How one failed request ended."""

    failure: ModelFailure
    retryable: bool
    overloaded: bool = False
    retry_after_s: float | None = None


def attempt_failure(model: str, exc: anthropic.AnthropicError, timeout_s: float) -> Attempt:
    """Classify one failed request of ``model`` (``timeout_s`` is what it was allowed)."""
    if isinstance(exc, anthropic.APITimeoutError):
        return Attempt(TimedOut(f"{model} did not answer within {timeout_s:g} s"), True)
    if isinstance(exc, anthropic.APIConnectionError):
        return Attempt(Unavailable(f"{model} unreachable: {exc}"), True)
    if not isinstance(exc, anthropic.APIStatusError):
        return Attempt(Unavailable(f"{model} failed: {type(exc).__name__}: {exc}"), False)
    request_id = exc.request_id
    spent = spend_limit_message(exc.body)
    if spent:
        failure = SpendLimit(f"spend limit reached ({model}): {spent}", request_id=request_id)
        return Attempt(failure, False)
    status = exc.status_code
    detail = f"{status} {getattr(exc, 'type', None) or 'error'}: {exc.message}"
    hint = exc.response.headers.get("x-should-retry")
    retryable = hint == "true" or (hint != "false" and (status in _RETRY_STATUS or status >= 500))
    return Attempt(
        Unavailable(f"{model} failed: {detail}", request_id=request_id),
        retryable,
        overloaded=status in _OVERLOAD_STATUS,
        retry_after_s=retry_after_s(exc.response.headers),
    )


def retry_cause(attempt: Attempt) -> str:
    """Why a request is repeated: timeout, overloaded (429, 529) or unavailable."""
    if isinstance(attempt.failure, TimedOut):
        return "timeout"
    return "overloaded" if attempt.overloaded else "unavailable"

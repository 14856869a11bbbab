"""Reading a model's text as a record: JSON recovered from fences or prose, then validated.

A provider that constrains its output (structured output) answers with the JSON alone; one that
does not, or that accepts the constraint and ignores it, may wrap the JSON in a Markdown fence or
put a sentence before it. The JSON object is recovered from such text and validated exactly as
an unwrapped answer would be; text with no JSON object in it is invalid, and the complaint says
how to answer, so the re-ask can fix it.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, TypeVar

import anthropic
from pydantic import BaseModel, ValidationError

from agents.models.llm import OutputInvalid

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|json5)?[ \t]*\r?\n?(.*?)```", re.S)
# Where to start decoding an object inside prose; bounded so a brace-heavy reply stays cheap.
_MAX_STARTS = 32
ONLY_JSON = "answer with the JSON object alone: no prose before or after it, no code fences"

_decoder = json.JSONDecoder()


def _object_at(text: str, start: int) -> str | None:
    try:
        value, end = _decoder.raw_decode(text, start)
    except ValueError:
        return None
    return text[start:end] if isinstance(value, dict) else None


def recover_json(text: str) -> str | None:
    """The JSON object in ``text``: the text itself, a fenced block's, or the first in prose."""
    stripped = text.strip()
    if stripped.startswith("{") and _object_at(stripped, 0) == stripped:
        return stripped
    for block in _FENCE.findall(text):
        inner = block.strip()
        if inner.startswith("{") and (found := _object_at(inner, 0)) is not None:
            return found
    start = text.find("{")
    for _ in range(_MAX_STARTS):
        if start < 0:
            break
        found = _object_at(text, start)
        if found is not None:
            return found
        start = text.find("{", start + 1)
    return None


def readable(exc: ValidationError) -> str:
    """A validation error as ``field: message`` parts, for a log line and for the re-ask."""
    errors = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "output"
        errors.append(f"{where}: {error['msg']}")
    return "; ".join(errors)


def _not_json(exc: ValidationError) -> bool:
    return any(error["type"] == "json_invalid" for error in exc.errors(include_url=False))


def parse_output(
    text: str, output_type: type[T], *, request_id: str | None = None
) -> tuple[T, bool]:
    """``text`` validated as ``output_type``, and whether the JSON had to be recovered.

    Raises ``OutputInvalid`` with what was wrong (its ``raw`` is ``text``).
    """
    try:
        return output_type.model_validate_json(text), False
    except ValidationError as exc:
        if not _not_json(exc):
            raise OutputInvalid(readable(exc), text, request_id=request_id) from None
        first = exc
    recovered = recover_json(text)
    if recovered is None:
        message = f"{readable(first)}; {ONLY_JSON}"
        raise OutputInvalid(message, text, request_id=request_id) from None
    try:
        return output_type.model_validate_json(recovered), True
    except ValidationError as exc:
        raise OutputInvalid(readable(exc), text, request_id=request_id) from None


@functools.cache
def output_schema(output_type: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema a provider's structured output is given for ``output_type``."""
    return anthropic.transform_schema(output_type)


@functools.cache
def schema_instruction(output_type: type[BaseModel]) -> str:
    """What the prompt says about the answer's form when the provider cannot constrain it."""
    return schema_text(output_schema(output_type))


def schema_text(schema_of_answer: dict[str, Any]) -> str:
    """The prompt's "Answer format" section for a JSON Schema."""
    schema = json.dumps(schema_of_answer, ensure_ascii=False, sort_keys=True)
    return (
        "\n\n# Answer format\n"
        "Answer with one JSON object and nothing else: no prose before or after it, no code "
        "fences. It must match this JSON Schema (every required field present, no other "
        f"fields):\n{schema}"
    )

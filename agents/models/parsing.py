"""Reading a model's text as a record: JSON recovered from fences or prose, then validated.

A provider that constrains its output (structured output) answers with the JSON alone; one that
does not, or that accepts the constraint and ignores it, may wrap the JSON in a Markdown fence or
put a sentence before it. The JSON objects in such text are recovered (fences first) and each
validated exactly as an unwrapped answer would be, until one is valid; text with no JSON object
in it is invalid, and the complaint says how to answer, so the re-ask can fix it.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, TypeVar

import anthropic
from pydantic import BaseModel, ValidationError

from baton_kafka.agents.models.llm import OutputInvalid

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|json5)?[ \t]*\r?\n?(.*?)```", re.S)
# Where to start decoding an object inside prose; bounded so a brace-heavy reply stays cheap.
_MAX_STARTS = 32
_MAX_CANDIDATES = 8
ONLY_JSON = "answer with the JSON object alone: no prose before or after it, no code fences"

_decoder = json.JSONDecoder()


def _object_at(text: str, start: int) -> str | None:
    try:
        value, end = _decoder.raw_decode(text, start)
    except ValueError:
        return None
    return text[start:end] if isinstance(value, dict) else None


def json_candidates(text: str) -> list[str]:
    """The JSON objects in ``text``, most likely answer first: the text itself, fenced blocks,
    then objects in the prose (a model may quote an example or the schema before answering)."""
    stripped = text.strip()
    if stripped.startswith("{") and _object_at(stripped, 0) == stripped:
        return [stripped]
    found: list[str] = []
    for block in _FENCE.findall(text):
        inner = block.strip()
        if inner.startswith("{") and (obj := _object_at(inner, 0)) is not None:
            found.append(obj)
    start, tries = text.find("{"), 0
    while start >= 0 and tries < _MAX_STARTS and len(found) < _MAX_CANDIDATES:
        tries += 1
        obj = _object_at(text, start)
        if obj is None:
            start = text.find("{", start + 1)
            continue
        if obj not in found:
            found.append(obj)
        start = text.find("{", start + len(obj))
    return found


def recover_json(text: str) -> str | None:
    """The most likely JSON answer in ``text`` (see ``json_candidates``), or None."""
    candidates = json_candidates(text)
    return candidates[0] if candidates else None


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
    candidates = json_candidates(text)
    if not candidates:
        message = f"{readable(first)}; {ONLY_JSON}"
        raise OutputInvalid(message, text, request_id=request_id) from None
    # The first object that is a valid answer; if none is, what is wrong with the likeliest.
    complaint = ""
    for candidate in candidates:
        try:
            return output_type.model_validate_json(candidate), True
        except ValidationError as exc:
            complaint = complaint or readable(exc)
    raise OutputInvalid(complaint, text, request_id=request_id) from None


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

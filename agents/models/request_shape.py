"""The Messages request of a prompt: system blocks with cache breakpoints, the user's context
with a re-ask's complaint, and the answer's schema as structured output or in the prompt."""

from __future__ import annotations

import functools
from typing import Any, TypeVar

from anthropic.types import JSONOutputFormatParam, TextBlockParam
from pydantic import BaseModel

from baton_kafka.agents.models.capabilities import Capabilities
from baton_kafka.agents.models.llm import Prompt
from baton_kafka.agents.models.parsing import output_schema, schema_instruction
from baton_kafka.agents.prompts import split_shared

T = TypeVar("T", bound=BaseModel)

FEEDBACK = "\n\nYour previous answer was rejected: {}\nAnswer again, fixing these errors."


def cache_blocks(system: str) -> list[TextBlockParam]:
    """The system prompt as cache breakpoints: the handbook all stages share, then the stage's.

    Stages on the same model then share the handbook's cache entry, so a rarely called stage
    reads what a busy one wrote.
    """
    return [
        {"type": "text", "text": p, "cache_control": {"type": "ephemeral"}}
        for p in _system_parts(system)
    ]


@functools.lru_cache(maxsize=64)
def _system_parts(system: str) -> tuple[str, ...]:
    # The system prompts are the stages' static texts (a few per worker): split each once, not
    # on every call. The blocks around the parts stay fresh per call.
    return tuple(split_shared(system))


@functools.cache
def _output_format(output_type: type[BaseModel]) -> JSONOutputFormatParam:
    # What messages.parse(output_format=...) would send; parse has no raw-response variant.
    return {"type": "json_schema", "schema": output_schema(output_type)}


def messages_request(
    prompt: Prompt[T], model: str, feedback: str | None, max_tokens: int, caps: Capabilities
) -> dict[str, Any]:
    """The request of ``prompt`` on ``model`` as a provider with ``caps`` takes it."""
    system = prompt.system
    if not caps.structured_output:
        system += schema_instruction(prompt.output_type)
    request: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "system": cache_blocks(system) if caps.caching else system,
        "messages": [
            {
                "role": "user",
                "content": prompt.context + (FEEDBACK.format(feedback) if feedback else ""),
            }
        ],
    }
    if caps.structured_output:
        request["output_config"] = {"format": _output_format(prompt.output_type)}
    return request

"""An answer's ``Message`` read from its response body: validated in one pass, the SDK's own
reading kept for a body holding a block it may not know."""

from __future__ import annotations

from typing import Any

import orjson
from anthropic.types import Message
from pydantic import ValidationError

# The content blocks a stage's answer holds. The SDK's models take an unknown block as the
# nearest known one when validated, so any other goes to the SDK's own reading.
PLAIN_BLOCKS = frozenset({"text", "thinking", "redacted_thinking", "tool_use"})


async def read_message(raw: Any) -> Message:
    """The ``Message`` of a raw Messages response, its request id attached.

    The SDK's ``parse()`` builds the same object field by field in Python (about 0.3 ms per
    answer, a tenth of a worker's CPU per ticket with a fast model); the compiled validator
    reads it in a tenth of that.
    """
    body = await raw.read()
    try:
        data = orjson.loads(body)
        blocks = data["content"]
        plain = all(block["type"] in PLAIN_BLOCKS for block in blocks)
    except (orjson.JSONDecodeError, KeyError, TypeError):
        plain = False
    if plain:
        try:
            message = Message.model_validate(data)
        except ValidationError:
            pass
        else:
            message._request_id = raw.request_id
            return message
    parsed: Message = await raw.parse()
    return parsed

"""The stand-in's request ids and error answers, shaped as the Messages API sends them."""

from __future__ import annotations

import uuid
from typing import Any

from aiohttp import web


def request_id() -> str:
    """A new ``request-id`` of the stand-in's."""
    return f"req_standin_{uuid.uuid4().hex[:20]}"


def error_response(status: int, kind: str, message: str, **extra: Any) -> web.Response:
    """An API error: ``{"type": "error", "error": {type, message, ...}, "request_id"}``."""
    error: dict[str, Any] = {"type": kind, "message": message, **extra}
    rid = request_id()
    body = {"type": "error", "error": error, "request_id": rid}
    return web.json_response(body, status=status, headers={"request-id": rid})

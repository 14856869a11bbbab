"""The one wire codec of baton: compact UTF-8 JSON bytes for every record on every topic."""

from __future__ import annotations

from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)

_OPTS = orjson.OPT_UTC_Z | orjson.OPT_NON_STR_KEYS


def dumps(value: BaseModel | Any) -> bytes:
    """Encode a model (or plain JSON-able value) as compact UTF-8 JSON bytes."""
    if isinstance(value, BaseModel):
        # Straight to JSON: the same bytes as model_dump(mode="json") through orjson, without
        # the intermediate dict.
        return value.__pydantic_serializer__.to_json(value)
    return orjson.dumps(value, option=_OPTS)


def loads(data: bytes | str) -> Any:
    """Decode JSON bytes; raises ``orjson.JSONDecodeError`` (a ``ValueError``) on bad input."""
    return orjson.loads(data)


def decode(model: type[M], data: bytes | str) -> M:
    """Decode and validate JSON bytes as ``model``; raises ``pydantic.ValidationError``."""
    return model.model_validate_json(data)


class InvalidRecord(ValueError):
    """Bytes that are not a valid record; the message says why, readably."""


def parse(model: type[M], data: bytes | str | None) -> M:
    """Decode and validate one record; raises ``InvalidRecord`` with a readable reason."""
    if data is None or len(data) == 0:
        raise InvalidRecord("empty value")
    try:
        # A valid record is parsed and validated in one pass; anything else is read again
        # below, step by step, for the reason it is not one.
        return model.model_validate_json(data)
    except ValidationError:
        pass
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidRecord(f"value is not valid UTF-8 (byte {exc.start})") from None
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InvalidRecord(f"value is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise InvalidRecord(f"a {model.__name__} must be a JSON object, got {_kind(value)}")
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        parts = []
        for err in exc.errors(include_url=False):
            where = ".".join(str(p) for p in err["loc"]) or "record"
            parts.append(f"{where}: {err['msg']}")
        raise InvalidRecord("; ".join(parts)) from None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {list: "an array", str: "a string", bool: "a boolean"}.get(type(value), "a number")

"""A valid answer built from a JSON Schema alone: how the stand-in answers a stage it has no
rules for (a shop's own stage), deterministically.

A check the schema does not state (a validator in code) is not known here. It reads the
schema as the SDK sends it: constraints the API does not take (``maximum``,
``minLength``, ``pattern``…) are moved into the description as ``{key: value, …}``, so they are
read from there as well as from the keywords.
"""

from __future__ import annotations

import ast
import math
import re
from re import _parser as sre  # type: ignore[attr-defined]
from typing import Any

# The keywords the SDK writes into a description; a value runs to the next one.
_HINT_KEYS = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "pattern",
    "format",
    "default",
)
_KEYS = "|".join(_HINT_KEYS)
_HINTS = re.compile(r"\{((?:" + _KEYS + r"|prefixItems): .*)\}\s*$", re.DOTALL)
# Any keyword may follow (``prefixItems``…); a value is a Python literal or a pattern.
_HINT_SPLIT = re.compile(r"(?:^|, )([A-Za-z][A-Za-z0-9]*): ")
_FORMATS = {
    "date-time": "2026-01-01T00:00:00Z",
    "date": "2026-01-01",
    "time": "00:00:00Z",
    "duration": "P1D",
    "email": "someone@example.org",
    "hostname": "example.org",
    "uri": "https://example.org/",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uuid": "00000000-0000-4000-8000-000000000000",
}
_MAX_DEPTH = 32


class SchemaAnswerError(ValueError):
    """No answer can be built from this schema (a required cycle, or an unknown ``$ref``)."""


def answer_from_schema(schema: dict[str, Any]) -> Any:
    """A value that the JSON Schema ``schema`` accepts: required fields only, the first enum
    value or ``anyOf`` branch that is not null, numbers and lengths inside their bounds."""
    return _Builder(schema).value(schema, "answer", 0, 0)


def hints(description: str) -> dict[str, Any]:
    """The constraints the SDK moved into a description (``{maximum: 9, minimum: 3}``)."""
    found = _HINTS.search(description)
    if found is None:
        return {}
    parts = _HINT_SPLIT.split(found.group(1))
    out: dict[str, Any] = {}
    for key, raw in zip(parts[1::2], parts[2::2], strict=True):
        try:
            out[key] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            out[key] = raw  # a pattern or a format: text as written
    return out


class _Builder:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root

    def _resolve(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        while "$ref" in schema:
            ref = str(schema["$ref"])
            if not ref.startswith("#/") or depth > _MAX_DEPTH:
                raise SchemaAnswerError(f"cannot follow $ref {ref!r}")
            target: Any = self.root
            for part in ref[2:].split("/"):
                if not isinstance(target, dict) or part not in target:
                    raise SchemaAnswerError(f"no {ref!r} in the schema")
                target = target[part]
            schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        extra = hints(str(schema.get("description", "")))
        return {**extra, **schema} if extra else schema

    def value(self, schema: Any, name: str, depth: int, variant: int) -> Any:
        if depth > _MAX_DEPTH:
            raise SchemaAnswerError(f"{name}: the schema requires itself (no finite answer)")
        if schema is True or schema == {}:
            return _text(name, {}, variant)
        if not isinstance(schema, dict):
            raise SchemaAnswerError(f"{name}: not a schema")
        s = self._resolve(schema, depth)
        if "const" in s:
            return s["const"]
        if isinstance(s.get("enum"), list) and s["enum"]:
            choices = [v for v in s["enum"] if v is not None] or s["enum"]
            return choices[variant % len(choices)]
        for key in ("anyOf", "oneOf"):
            if isinstance(s.get(key), list) and s[key]:
                branches = [b for b in s[key] if not _is_null(self._resolve(b, depth))]
                return self.value((branches or s[key])[0], name, depth + 1, variant)
        if isinstance(s.get("allOf"), list):
            merged = {k: v for k, v in s.items() if k != "allOf"}
            for part in s["allOf"]:
                merged = {**self._resolve(part, depth), **merged}
            return self.value(merged, name, depth + 1, variant)
        kind = s.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind is None:
            kind = "object" if "properties" in s else "array" if "items" in s else "string"
        if kind == "object":
            return self._object(s, depth)
        if kind == "array":
            return self._array(s, name, depth)
        if kind == "integer":
            return _number(s, integer=True, variant=variant)
        if kind == "number":
            return _number(s, integer=False, variant=variant)
        if kind == "boolean":
            return variant % 2 == 1
        if kind == "null":
            return None
        return _text(name, s, variant)

    def _object(self, s: dict[str, Any], depth: int) -> dict[str, Any]:
        properties = s.get("properties") or {}
        required = [k for k in s.get("required") or [] if isinstance(k, str)]
        out = {}
        for key in required:
            out[key] = self.value(properties.get(key, {}), key, depth + 1, 0)
        return out

    def _array(self, s: dict[str, Any], name: str, depth: int) -> list[Any]:
        # A tuple's items one by one, then ``items`` for any more.
        given = s.get("prefixItems")
        fixed: list[Any] = given if isinstance(given, list) else []
        low = max(int(s.get("minItems") or 0), len(fixed))
        high = s.get("maxItems")
        # One item shows the shape; no more than the schema allows.
        count = max(low, 1) if high is None else min(max(low, 1), int(high))
        items = s.get("items", {})
        return [
            self.value(fixed[i] if i < len(fixed) else items, name, depth + 1, i)
            for i in range(count)
        ]


def _is_null(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "null" or schema.get("const", 0) is None


def _bound(s: dict[str, Any], closed: str, opened: str, tighter: Any) -> tuple[float, bool] | None:
    """The tighter of a closed and an open bound, and whether it is open."""
    found = [(float(s[k]), k == opened) for k in (closed, opened) if s.get(k) is not None]
    if not found:
        return None
    best = tighter(v for v, _ in found)
    return best, any(v == best and is_open for v, is_open in found)


def _number(s: dict[str, Any], *, integer: bool, variant: int) -> int | float:
    lo = _bound(s, "minimum", "exclusiveMinimum", max)
    hi = _bound(s, "maximum", "exclusiveMaximum", min)
    if integer:
        lo_i = None if lo is None else math.floor(lo[0]) + 1 if lo[1] else math.ceil(lo[0])
        hi_i = None if hi is None else math.ceil(hi[0]) - 1 if hi[1] else math.floor(hi[0])
        start = lo_i if lo_i is not None else min(0, hi_i) if hi_i is not None else 0
        step = s.get("multipleOf")
        if isinstance(step, int) and step > 0:
            start = math.ceil(start / step) * step
        value = start + variant * (step if isinstance(step, int) and step > 0 else 1)
        return value if hi_i is None or value <= hi_i else start
    if lo is not None and hi is not None:
        return (lo[0] + hi[0]) / 2
    if lo is not None:
        return lo[0] + (1.0 if lo[1] else 0.0) + variant
    if hi is not None:
        return min(0.0, hi[0] - (1.0 if hi[1] else 0.0)) - variant
    return float(variant)


def _text(name: str, s: dict[str, Any], variant: int) -> str:
    pattern = s.get("pattern")
    if isinstance(pattern, str):
        return from_pattern(pattern, variant, int(s.get("minLength") or 0))
    if s.get("format") in _FORMATS:
        return _FORMATS[str(s["format"])]
    name = name or "text"
    text = f"{name} {variant}" if variant else name
    low = int(s.get("minLength") or 0)
    while len(text) < low:
        text += "-" + name
    if s.get("maxLength") is not None:
        text = text[: max(int(s["maxLength"]), low)]
    return text


def from_pattern(pattern: str, variant: int = 0, min_length: int = 0) -> str:
    """A short string matching the regular expression ``pattern`` (searched, as JSON Schema
    does): each repeat its minimum (at least once, more up to its maximum while the string is
    shorter than ``min_length``), each set its first member (the ``variant``-th of a range)."""
    parsed = sre.parse(pattern)
    text = "".join(_emit(parsed, variant, 0))
    more = 1
    while len(text) < min_length and more <= min_length:
        longer = "".join(_emit(parsed, variant, more))
        if len(longer) == len(text):
            break  # nothing in the pattern repeats: as long as it gets
        text, more = longer, more + 1
    return text


_CATEGORY = {
    "CATEGORY_DIGIT": "0",
    "CATEGORY_NOT_DIGIT": "a",
    "CATEGORY_SPACE": " ",
    "CATEGORY_NOT_SPACE": "a",
    "CATEGORY_WORD": "a",
    "CATEGORY_NOT_WORD": "-",
}


def _emit(parsed: Any, variant: int, more: int) -> list[str]:
    out: list[str] = []
    for op, arg in parsed:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif name == "ANY":
            out.append("a")
        elif name == "IN":
            out.append(_member(arg, variant))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, inner = arg
            for _ in range(min(max(low, 1) + more, high)):
                out.extend(_emit(inner, variant, more))
        elif name == "SUBPATTERN":
            out.extend(_emit(arg[-1], variant, more))
        elif name == "ATOMIC_GROUP":
            out.extend(_emit(arg, variant, more))
        elif name == "BRANCH":
            out.extend(_emit(arg[1][0], variant, more))
        elif name == "CATEGORY":
            out.append(_CATEGORY.get(str(arg), "a"))
        elif name in ("AT", "ASSERT", "ASSERT_NOT"):
            continue
        else:
            raise SchemaAnswerError(f"cannot build a string for the pattern part {name}")
    return out


def _member(items: Any, variant: int) -> str:
    negated = any(str(op) == "NEGATE" for op, _ in items)
    if negated:
        banned = "".join(_member([i], 0) for i in items if str(i[0]) != "NEGATE")
        return next(c for c in "a0-_ xZ" if c not in banned)
    op, arg = items[0]
    name = str(op)
    if name == "LITERAL":
        return chr(arg)
    if name == "RANGE":
        low, high = arg
        return chr(min(low + variant, high))
    if name == "CATEGORY":
        return _CATEGORY.get(str(arg), "a")
    raise SchemaAnswerError(f"cannot build a string for the set part {name}")

"""Paths into a shop's JSON: JMESPath expressions, with baton's functions for money as text.

A plain dotted path (``customer.id``) is a JMESPath expression and reads as it always did; a
segment JMESPath would not take as a name (``x-total``, ``2024``) is quoted for it when the
path uses no JMESPath operator. ``sum_of``, ``minus`` and ``times`` add, subtract and multiply
numbers or numeric text (amounts such as ``"12.50"``), so that a sum of refunds needs no
``to_number`` on every element.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

import jmespath
from jmespath import exceptions, functions, visitor

# A path written with any of these is an expression as it stands: it is never re-quoted.
_OPERATORS = frozenset("[]|(){}!<>=,'`?\"")


class PathError(ValueError):
    """A path is not an expression that can be read (one line, with JMESPath's reason)."""


def _amount(value: Any) -> Decimal | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float | Decimal):
        return Decimal(str(value))
    if isinstance(value, str):
        try:
            return Decimal(value.strip())
        except InvalidOperation:
            return None
    return None


def _number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


class _Functions(functions.Functions):
    """JMESPath's functions and baton's: numbers given as numbers or as numeric text."""

    @functions.signature({"types": ["array", "null"]})
    def _func_sum_of(self, values: list[Any] | None) -> int | float:
        """The sum of the numbers and numeric texts in ``values`` (others and nulls skipped)."""
        found = [_amount(v) for v in values or []]
        return _number(sum((v for v in found if v is not None), Decimal(0)))

    @functions.signature(
        {"types": ["number", "string", "null"]}, {"types": ["number", "string", "null"]}
    )
    def _func_minus(self, a: Any, b: Any) -> int | float | None:
        """``a - b`` (a null or non-numeric ``b`` is 0); null when ``a`` is not a number."""
        first, second = _amount(a), _amount(b)
        return None if first is None else _number(first - (second or Decimal(0)))

    @functions.signature(
        {"types": ["number", "string", "null"]}, {"types": ["number", "string", "null"]}
    )
    def _func_times(self, a: Any, b: Any) -> int | float | None:
        """``a * b``; null when either is not a number."""
        first, second = _amount(a), _amount(b)
        return None if first is None or second is None else _number(first * second)


_OPTIONS = jmespath.Options(custom_functions=_Functions())
# One interpreter for every search: it keeps its dispatch cache (it holds no other state).
_INTERPRETER = visitor.TreeInterpreter(_OPTIONS)


def _quoted(path: str) -> str:
    """A dotted path with each segment quoted (``x-total.amount``: ``"x-total"."amount"``)."""
    return ".".join(json.dumps(part) for part in path.split("."))


@functools.lru_cache(maxsize=1024)
def compiled(path: str) -> Any:
    """``path`` compiled ("" is the whole body); raises ``PathError``."""
    text = path.strip()
    if not text:
        return jmespath.compile("@")
    try:
        return jmespath.compile(text)
    except exceptions.JMESPathError as exc:
        if not _OPERATORS.intersection(text) and all(text.split(".")):
            try:
                return jmespath.compile(_quoted(text))
            except exceptions.JMESPathError:
                pass
        reason = " ".join(str(exc).split()).split(" for expression")[0]
        raise PathError(f"{path!r} is not a JMESPath expression ({reason})") from None


def _names(node: Mapping[str, Any]) -> list[str] | None:
    """The names of a plain path (``a.b``, ``"x-y".b``, ``@``), or None for anything else."""
    kind = node.get("type")
    if kind == "identity":
        return []
    if kind == "field":
        return [node["value"]]
    if kind == "subexpression":
        parts = [_names(child) for child in node["children"]]
        if all(p is not None for p in parts):
            return [name for p in parts for name in p or []]
    return None


def _dig(names: list[str], body: Any) -> Any:
    for name in names:
        if not isinstance(body, Mapping):
            return None
        body = body.get(name)
    return body


@functools.lru_cache(maxsize=1024)
def _reader(path: str) -> Callable[[Any], Any]:
    ast = compiled(path).parsed
    names = _names(ast)
    if names is not None:
        # Most of a map is plain names: read them without the interpreter (same result).
        return functools.partial(_dig, names)
    return functools.partial(_INTERPRETER.visit, ast)


def read(body: Any, path: str) -> Any:
    """The value at ``path`` in ``body``, or None (an expression that fails at run time, such
    as a sum over text that is not a number, reads nothing)."""
    try:
        return _reader(path)(body)
    except exceptions.JMESPathError:
        return None


def truthy(value: Any) -> bool:
    """JMESPath's truth: null, false, "", [] and {} are false, everything else true."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str | list | dict):
        return len(value) > 0
    return value is not None

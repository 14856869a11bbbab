"""The prompt's compact JSON: the walk that drops empty values, held to its plain definition."""

from __future__ import annotations

import random
from typing import Any

from baton_kafka.agents.prompts import _KEEP_WHOLE, _compact


def _plain(value: Any) -> Any:
    """The definition: every empty value dropped, except inside the records kept whole."""
    if isinstance(value, dict):
        return {
            k: v if k in _KEEP_WHOLE else _plain(v)
            for k, v in value.items()
            if v not in (None, [], "", {})
        }
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


_KEYS = ["a", "b", "name", "understanding", "match", "result", "items", "x"]
_LEAVES: list[Any] = [None, "", "text", 0, 0.0, 1, -2.5, False, True, [], {}]


def _value(rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if depth >= 5 or roll < 0.45:
        return rng.choice(_LEAVES)
    if roll < 0.75:
        return {rng.choice(_KEYS): _value(rng, depth + 1) for _ in range(rng.randint(0, 6))}
    return [_value(rng, depth + 1) for _ in range(rng.randint(0, 5))]


def test_compact_is_the_plain_definition_on_generated_json() -> None:
    rng = random.Random(20261206)
    for _ in range(5000):
        value = _value(rng, 0)
        got, want = _compact(value), _plain(value)
        assert got == want
        assert repr(got) == repr(want)  # the same types and key order (0 stays 0, not 0.0)


def test_compact_keeps_zeros_and_falses_and_whole_records() -> None:
    value = {"n": 0, "f": False, "e": "", "l": [], "d": {}, "z": None, "match": {"x": None}}
    assert _compact(value) == {"n": 0, "f": False, "match": {"x": None}}
    assert _compact([{"a": [None, {}, {"b": ""}]}]) == [{"a": [None, {}, {}]}]


class _Text(str):
    pass


class _Object(dict[str, Any]):
    pass


class _List(list[Any]):
    pass


def _subclassed(value: Any, rng: random.Random) -> Any:
    """``value`` with some of its texts, objects and lists of a subclass of their type."""
    if isinstance(value, dict):
        inner = {k: _subclassed(v, rng) for k, v in value.items()}
        return _Object(inner) if rng.random() < 0.5 else inner
    if isinstance(value, list):
        inner = [_subclassed(v, rng) for v in value]
        return _List(inner) if rng.random() < 0.5 else inner
    if isinstance(value, str) and rng.random() < 0.5:
        return _Text(value)
    return value


def test_compact_of_values_of_other_types_than_a_json_dump_is_the_plain_definition() -> None:
    rng = random.Random(61206)
    for _ in range(3000):
        value = _subclassed(_value(rng, 0), rng)
        got, want = _compact(value), _plain(value)
        assert got == want
        assert repr(got) == repr(want)

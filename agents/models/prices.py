"""What each Claude model costs and caches: USD per million tokens, shortest cacheable prefix.

A JSON table ``{"model": [input, output, cache_write, cache_read]}`` (or ``[input, output]``,
deriving the cache prices) overrides or extends the built-in one (the settings read it from
``BATON_PRICES``); ``{"model": tokens}`` does the same for the cache minimums
(``BATON_CACHE_MIN_TOKENS``). A dated or ``-latest`` model name uses its base name's row, and so
do the names Amazon Bedrock (``us.anthropic.claude-sonnet-4-5-20250929-v1:0``) and Vertex AI
(``claude-sonnet-4-5@20250929``) give the same model. A model with no row has no price: its
cost is unknown, not 0.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import astuple, dataclass
from typing import Any, Protocol, TypeVar

import orjson

_V = TypeVar("_V")

_VERSION_SUFFIX = re.compile(r"(-|@)(\d{8}|latest)$")
# Bedrock's inference-profile region and vendor prefix, and its model version suffix.
_PLATFORM_PREFIX = re.compile(r"^(?:(?:us|eu|apac|global|jp|au|us-gov)\.)?anthropic\.")
_PLATFORM_SUFFIX = re.compile(r"-v\d+(?::\d+)?$")


@dataclass(frozen=True)
class Price:
    """USD per million tokens of each kind."""

    input: float
    output: float
    cache_write: float
    cache_read: float

    @classmethod
    def of(cls, input: float, output: float) -> Price:
        """A price with the API's cache multipliers: writes 1.25x input, reads 0.1x input."""
        return cls(input, output, round(input * 1.25, 6), round(input * 0.1, 6))


PRICES: dict[str, Price] = {
    "claude-opus-4-6": Price.of(5.0, 25.0),
    "claude-opus-4-5": Price.of(5.0, 25.0),
    "claude-opus-4-1": Price.of(15.0, 75.0),
    "claude-opus-4-0": Price.of(15.0, 75.0),
    "claude-opus-4": Price.of(15.0, 75.0),
    "claude-sonnet-4-6": Price.of(3.0, 15.0),
    "claude-sonnet-4-5": Price.of(3.0, 15.0),
    "claude-sonnet-4-0": Price.of(3.0, 15.0),
    "claude-sonnet-4": Price.of(3.0, 15.0),
    "claude-haiku-4-5": Price.of(1.0, 5.0),
    "claude-3-5-haiku": Price.of(0.8, 4.0),
}

# The shortest prefix each model caches; a shorter one is silently billed as plain input.
# Sonnet 4.6 is documented at 1,024 in places but observed to cache only from 2,048.
CACHE_MIN_TOKENS: dict[str, int] = {
    "claude-opus-4-6": 4096,
    "claude-opus-4-5": 4096,
    "claude-opus-4-1": 1024,
    "claude-opus-4-0": 1024,
    "claude-opus-4": 1024,
    "claude-sonnet-4-6": 2048,
    "claude-sonnet-4-5": 1024,
    "claude-sonnet-4-0": 1024,
    "claude-sonnet-4": 1024,
    "claude-haiku-4-5": 4096,
    "claude-3-5-haiku": 2048,
}
CACHE_MIN_UNKNOWN = 4096


class Tokens(Protocol):
    """Token counts of one call (``CallUsage`` is one)."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int


def _model_table(text: str, source: str, row: str) -> dict[str, Any]:
    """A JSON object keyed by model name (empty text: none); ValueError naming ``source``."""
    if not text.strip():
        return {}
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"{source} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f'{source} must be {{"model": {row}}}')
    return data


def parse_prices(text: str, source: str) -> dict[str, Price]:
    """The rows of a JSON price table (empty text: none); ValueError naming ``source``."""
    data = _model_table(text, source, "[input, output, cache_write, cache_read]")
    prices = {}
    for model, numbers in data.items():
        ok = isinstance(numbers, list) and len(numbers) in (2, 4)
        if not ok or not all(isinstance(n, int | float) and n >= 0 for n in numbers):
            raise ValueError(f"{source}[{model!r}] must be 2 or 4 non-negative numbers")
        prices[model] = Price.of(*numbers) if len(numbers) == 2 else Price(*numbers)
    return prices


def parse_cache_minimums(text: str, source: str) -> dict[str, int]:
    """The rows of a JSON table ``{"model": tokens}`` (empty text: none); ValueError naming
    ``source``."""
    data = _model_table(text, source, "tokens")
    for model, tokens in data.items():
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
            raise ValueError(f"{source}[{model!r}] must be a non-negative integer")
    return dict(data)


def base_name(model: str) -> str:
    """``model`` without a date, ``-latest``, or a cloud platform's prefix and version."""
    bare = _PLATFORM_SUFFIX.sub("", _PLATFORM_PREFIX.sub("", model))
    return _VERSION_SUFFIX.sub("", bare)


def _row(model: str, table: Mapping[str, _V]) -> _V | None:
    if model in table:
        return table[model]
    return table.get(base_name(model))


def price_for(model: str, prices: Mapping[str, Price]) -> Price | None:
    """The price of ``model``, also under a dated, ``-latest`` or platform name; None when
    unknown."""
    return _row(model, prices)


def min_cacheable_tokens(model: str, overrides: Mapping[str, int] | None = None) -> int:
    """The shortest prompt prefix ``model`` caches: ``overrides``' row, the built-in one, or the
    strictest known value if unknown."""
    for table in (overrides or {}, CACHE_MIN_TOKENS):
        found = _row(model, table)
        if found is not None:
            return found
    return CACHE_MIN_UNKNOWN


BATCH_FACTOR = 0.5
"""What a Message Batches request costs, as a share of the same call made live."""


def batch_price(price: Price) -> Price:
    """``price`` for requests sent through the Message Batches API: every kind of token at half."""
    return Price(*(round(p * BATCH_FACTOR, 6) for p in astuple(price)))


def cost(tokens: Tokens, price: Price | None) -> float:
    """USD cost of a call's tokens at ``price`` (0 for an unknown price)."""
    if price is None:
        return 0.0
    total = (
        tokens.input_tokens * price.input
        + tokens.output_tokens * price.output
        + tokens.cache_write_tokens * price.cache_write
        + tokens.cache_read_tokens * price.cache_read
    )
    return round(total / 1_000_000, 8)

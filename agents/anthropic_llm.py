"""The LLM protocol over the Anthropic Messages API, with structured output, caching and prices.

Transient failures (429, 529, 5xx, connection errors, timeouts) are retried by the SDK itself,
``max_retries`` times with its backoff and ``retry-after`` handling; only what outlasts them
reaches the caller, as ``Unavailable`` or ``TimedOut``. A spend-limit 429 is never retried: a
client middleware recognises it on the first attempt and ends the call with ``SpendLimit``.

Prices are USD per million tokens. ``BATON_PRICES`` overrides or extends the built-in table with
JSON ``{"model": [input, output, cache_write, cache_read]}`` (or ``[input, output]``, deriving the
cache prices); the constructor's ``prices`` overrides both.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import anthropic
import orjson
from anthropic import APIRequest, AsyncAPIResponse, AsyncCallNext
from anthropic.types import JSONOutputFormatParam, Message
from pydantic import BaseModel, ValidationError

from agents.llm import (
    Answer,
    OutputInvalid,
    Prompt,
    Refused,
    SpendLimit,
    TimedOut,
    Truncated,
    Unavailable,
)
from schemas.records import CallUsage, StageName

T = TypeVar("T", bound=BaseModel)

log = logging.getLogger(__name__)

FEEDBACK = "\n\nYour previous answer was rejected: {}\nAnswer again, fixing these errors."
_SPEND_WORDS = re.compile(r"spend limit|spending limit|usage limit|credit balance", re.I)


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
    "claude-opus-4-5": Price.of(5.0, 25.0),
    "claude-opus-4-1": Price.of(15.0, 75.0),
    "claude-opus-4-0": Price.of(15.0, 75.0),
    "claude-opus-4": Price.of(15.0, 75.0),
    "claude-sonnet-4-5": Price.of(3.0, 15.0),
    "claude-sonnet-4-0": Price.of(3.0, 15.0),
    "claude-sonnet-4": Price.of(3.0, 15.0),
    "claude-haiku-4-5": Price.of(1.0, 5.0),
    "claude-3-5-haiku": Price.of(0.8, 4.0),
}


class Tokens(Protocol):
    """Token counts of one call (``CallUsage`` is one)."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int


def load_prices(env: Mapping[str, str]) -> dict[str, Price]:
    """The built-in table updated from ``env["BATON_PRICES"]``; ValueError when malformed."""
    prices = dict(PRICES)
    text = env.get("BATON_PRICES", "").strip()
    if not text:
        return prices
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"BATON_PRICES is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError('BATON_PRICES must be {"model": [input, output, cache_write, cache_read]}')
    for model, numbers in data.items():
        ok = isinstance(numbers, list) and len(numbers) in (2, 4)
        if not ok or not all(isinstance(n, int | float) and n >= 0 for n in numbers):
            raise ValueError(f"BATON_PRICES[{model!r}] must be 2 or 4 non-negative numbers")
        prices[model] = Price.of(*numbers) if len(numbers) == 2 else Price(*numbers)
    return prices


def price_for(model: str, prices: Mapping[str, Price]) -> Price | None:
    """The price of ``model``, also under a dated or ``-latest`` name; None when unknown."""
    if model in prices:
        return prices[model]
    base = re.sub(r"-(\d{8}|latest)$", "", model)
    return prices.get(base)


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


class _SpendLimitHit(Exception):
    """Raised inside the SDK's retry loop; being no API error, the SDK does not retry it."""


def _spend_limit_message(body: Any) -> str | None:
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return None
    message = str(error.get("message") or "")
    details = error.get("details")
    code = str(details.get("error_code", "")) if isinstance(details, dict) else ""
    if "spend_limit" in code or _SPEND_WORDS.search(message):
        return message or code
    return None


async def _stop_at_spend_limit(
    request: APIRequest, call_next: AsyncCallNext
) -> AsyncAPIResponse[Any]:
    response = await call_next(request)
    if response.status_code in (400, 402, 429):
        try:
            body = await response.json()
        except ValueError:
            return response
        message = _spend_limit_message(body)
        if message:
            raise _SpendLimitHit(message)
    return response


@functools.cache
def _output_format(output_type: type[BaseModel]) -> JSONOutputFormatParam:
    # What messages.parse(output_format=...) would send; parse has no raw-response variant.
    return {"type": "json_schema", "schema": anthropic.transform_schema(output_type)}


def _readable(exc: ValidationError) -> str:
    errors = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "output"
        errors.append(f"{where}: {error['msg']}")
    return "; ".join(errors)


class AnthropicLLM:
    """Claude through the official SDK; one instance per worker, ``concurrency`` calls at most."""

    name = "anthropic"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        model: str = "claude-haiku-4-5",
        stage_models: Mapping[str, str] | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        concurrency: int = 8,
        prices: Mapping[str, Price] | None = None,
    ) -> None:
        self.model = model
        self.stage_models = dict(stage_models or {})
        self.prices = {**load_prices(os.environ), **(prices or {})}
        self.unpriced: set[str] = set()
        self._slots = asyncio.Semaphore(max(1, concurrency))
        # None lets the SDK read ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL itself.
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout_s,
            max_retries=max_retries,
            middleware=[_stop_at_spend_limit],
        )

    def model_for(self, stage: StageName) -> str:
        """The stage's own model if configured, else the default model."""
        return self.stage_models.get(stage, self.model)

    async def ask(
        self, prompt: Prompt[T], *, feedback: str | None = None, max_tokens: int | None = None
    ) -> Answer[T]:
        """Ask once (the SDK retries transient errors); raise a ``ModelFailure`` otherwise."""
        model = self.model_for(prompt.stage)
        context = prompt.context + (FEEDBACK.format(feedback) if feedback else "")
        # A call keeps its slot through the SDK's retries, so retries cannot exceed the bound.
        async with self._slots:
            try:
                raw = await self._client.messages.with_raw_response.create(
                    model=model,
                    max_tokens=max_tokens or prompt.max_tokens,
                    system=[
                        {
                            "type": "text",
                            "text": prompt.system,
                            "cache_control": {"type": "ephemeral"},
                        }
                    ],
                    messages=[{"role": "user", "content": context}],
                    output_config={"format": _output_format(prompt.output_type)},
                )
                message = await raw.parse()
            except _SpendLimitHit as exc:
                raise SpendLimit(f"spend limit reached ({model}): {exc}") from None
            except anthropic.APITimeoutError:
                raise TimedOut(f"{model} timed out after retries") from None
            except anthropic.APIConnectionError as exc:
                raise Unavailable(f"{model} unreachable after retries: {exc}") from None
            except anthropic.APIStatusError as exc:
                if _spend_limit_message(exc.body):
                    raise SpendLimit(f"spend limit reached ({model}): {exc.message}") from None
                detail = f"{exc.status_code} {exc.type or 'error'}: {exc.api_message or exc}"
                raise Unavailable(f"{model} failed: {detail}") from None
            except anthropic.AnthropicError as exc:
                raise Unavailable(f"{model} failed: {type(exc).__name__}: {exc}") from None
        return self._answer(prompt, model, message, raw.retries_taken)

    def _answer(self, prompt: Prompt[T], model: str, message: Message, retries: int) -> Answer[T]:
        usage = self._usage(prompt.stage, model, message)
        text = "".join(block.text for block in message.content if block.type == "text")
        stop = message.stop_reason or "end_turn"
        if retries:
            log.info("%s answered after %d SDK retries", model, retries)
        if stop == "refusal":
            explanation = message.stop_details.explanation if message.stop_details else None
            raise Refused(f"{model} refused: {explanation or 'no explanation'}", text, [usage])
        if stop in ("max_tokens", "model_context_window_exceeded"):
            raise Truncated(f"{model} stopped at {stop} ({usage.output_tokens})", text, [usage])
        try:
            value = prompt.output_type.model_validate_json(text)
        except ValidationError as exc:
            raise OutputInvalid(_readable(exc), text, [usage]) from None
        return Answer(value=value, usage=usage, raw=text, stop_reason=stop)

    def _usage(self, stage: StageName, model: str, message: Message) -> CallUsage:
        reported = message.usage
        usage = CallUsage(
            stage=stage,
            model=model,
            input_tokens=reported.input_tokens,
            output_tokens=reported.output_tokens,
            cache_read_tokens=reported.cache_read_input_tokens or 0,
            cache_write_tokens=reported.cache_creation_input_tokens or 0,
        )
        price = price_for(model, self.prices)
        if price is None and model not in self.unpriced:
            self.unpriced.add(model)
            log.warning("no price for model %s: its calls are costed at 0", model)
        return usage.model_copy(update={"cost_usd": cost(usage, price)})

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()

"""Prompt sizes in tokens: counted by the Messages API where it answers, else estimated.

The static part of a prompt (the system prompt, stable per prompt version and model) is counted
once and cached; each context is counted as asked. The estimate (four characters per token,
one per CJK character) is what the offline model uses, and what a count falls back to when the
endpoint fails; every ``TokenCount`` says which of the two it is.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import anthropic

from baton_kafka.agents.languages import HAN, KANA

log = logging.getLogger(__name__)

Method = Literal["counted", "estimated"]
# Any text: the endpoint needs one message, and its own tokens cancel out (see ``_static``).
_PROBE = "."

# CJK punctuation, kana, Han, Hangul and fullwidth forms: each about a token of its own.
_CJK = re.compile(f"[\u3000-\u303f{KANA}{HAN}\uac00-\ud7af\uff00-\uffef]")


def estimate_tokens(text: str) -> int:
    """Roughly count tokens: one per CJK character, one per four other characters."""
    # ASCII text has no CJK character to look for (a 31 KB prompt's scan costs 0.2-0.3 ms).
    cjk = 0 if text.isascii() else len(_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


def estimate_prefix_tokens(text: str, ends: Sequence[int]) -> list[int]:
    """``estimate_tokens(text[:end])`` for each of ``ends``, reading ``text`` once."""
    # Where each ``text[:end]`` stops, negative and out-of-range ends included.
    stops = [slice(None, end).indices(len(text))[1] for end in ends]
    ascii_only = text.isascii()
    cjk_before: dict[int, int] = {}
    cjk = at = 0
    for stop in sorted(set(stops)):
        # One character a match: the pieces' counts add up to the whole's.
        cjk += 0 if ascii_only else len(_CJK.findall(text, at, stop))
        cjk_before[stop], at = cjk, stop
    return [cjk_before[s] + math.ceil((s - cjk_before[s]) / 4) for s in stops]


@dataclass(frozen=True)
class TokenCount:
    """Input tokens of a prompt, and whether the API counted them or they were estimated."""

    tokens: int
    method: Method


def estimated(system: str, context: str) -> TokenCount:
    """The estimate of a prompt of ``system`` and ``context``."""
    return TokenCount(estimate_tokens(system) + estimate_tokens(context), "estimated")


class Counter(Protocol):
    """Counts the input tokens of a prompt for a model."""

    async def count(
        self, model: str, system: str, context: str, *, version: str = ""
    ) -> TokenCount: ...


class Estimator:
    """The offline counter: always the estimate."""

    async def count(
        self, model: str, system: str, context: str, *, version: str = ""
    ) -> TokenCount:
        return estimated(system, context)


class ApiCounter:
    """Counts with ``client.messages.count_tokens``; the estimate when the endpoint fails.

    The system part is counted once per model, prompt version and text; contexts are remembered
    (the newest ``keep``), so a prompt seen again costs no request.
    """

    def __init__(
        self,
        client: anthropic.AsyncAnthropic,
        *,
        concurrency: int = 4,
        timeout_s: float = 10.0,
        keep: int = 4096,
    ) -> None:
        self._client = client
        self._timeout_s = timeout_s
        self._keep = keep
        self._slots = asyncio.Semaphore(max(1, concurrency))
        self._static: dict[tuple[str, str, str], int] = {}
        self._contexts: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._warned: set[str] = set()
        self.requests = 0

    async def count(
        self, model: str, system: str, context: str, *, version: str = ""
    ) -> TokenCount:
        """The prompt's input tokens, counted if the endpoint answers, else estimated."""
        try:
            static = await self._static_tokens(model, system, version) if system else 0
            dynamic = await self._context_tokens(model, context) if context else 0
        except anthropic.AnthropicError as exc:
            if model not in self._warned:
                self._warned.add(model)
                log.warning("token counting failed for %s, estimating instead: %s", model, exc)
            return estimated(system, context)
        return TokenCount(static + dynamic, "counted")

    async def _static_tokens(self, model: str, system: str, version: str) -> int:
        key = (model, version, hashlib.sha256(system.encode()).hexdigest())
        if key not in self._static:
            with_system = await self._request(model, system, _PROBE)
            bare = await self._context_tokens(model, _PROBE)
            self._static[key] = max(0, with_system - bare)
        return self._static[key]

    async def _context_tokens(self, model: str, context: str) -> int:
        key = (model, context)
        tokens = self._contexts.get(key)
        if tokens is None:
            tokens = await self._request(model, None, context)
            self._contexts[key] = tokens
            while len(self._contexts) > self._keep:
                self._contexts.popitem(last=False)
        self._contexts.move_to_end(key)
        return tokens

    async def _request(self, model: str, system: str | None, text: str) -> int:
        async with self._slots:
            self.requests += 1
            counted = await self._client.messages.count_tokens(
                model=model,
                messages=[{"role": "user", "content": text}],
                system=system if system is not None else anthropic.omit,
                timeout=self._timeout_s,
            )
        return counted.input_tokens

"""Asking a model for a validated record: re-ask on invalid output, then report a failure."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from agents.models.llm import (
    LLM,
    BudgetExceeded,
    ModelFailure,
    OutputInvalid,
    Prompt,
    Refused,
    SpendLimit,
    TimedOut,
    Truncated,
    Unavailable,
)
from agents.prompts import Facts
from agents.rules.matching import normalize, product_score
from schemas.records import CallUsage
from schemas.stages import Understanding

T = TypeVar("T", bound=BaseModel)

Check = Callable[[T], list[str]]
GROUNDED = 0.35


class Tokens(Protocol):
    """Token counts of a call or a total (``CallUsage`` and ``UsageTotals`` are both)."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int


def budget_tokens(usage: Tokens) -> int:
    """Tokens counted against a session's budget: all but cache reads.

    Cache reads are the static instructions every ticket shares, billed at a tenth of the
    input price; counting them would spend a session's budget on the prompt's length.
    """
    return usage.input_tokens + usage.output_tokens + usage.cache_write_tokens


def grounding_problems(value: BaseModel, facts: Any) -> list[str]:
    """Business rules on what an output may name: an understood product must come from the
    message, the session or the customer's orders (the wire schema cannot say so)."""
    if not isinstance(value, Understanding) or not isinstance(facts, Facts) or not value.product:
        return []
    product = value.product
    sources = [
        facts.message,
        facts.session.product or "",
        *facts.session.core_problems,
        *(o.product_name for o in facts.orders),
        *(e.product or "" for e in facts.earlier),
    ]
    if normalize(product) in normalize(facts.message) or any(
        product_score(product, source) >= GROUNDED for source in sources if source
    ):
        return []
    return [
        f"product: {product!r} is named neither in the message, the session nor the customer's "
        "orders; use the customer's words, an order's product_name, or null"
    ]


@dataclass(frozen=True)
class Failure:
    """Why a stage fell back: becomes a dead letter and marks the reply."""

    reason: str
    error: str
    payload: str = ""
    attempts: int = 1
    model: str | None = None
    prompt_version: str | None = None
    handoff: bool = False


@dataclass
class Asked(Generic[T]):
    """A model's validated value, or the failure that prevented one; with every call's usage."""

    value: T | None
    calls: list[CallUsage] = field(default_factory=list)
    failure: Failure | None = None
    attempts: int = 0


_FAILURE_REASON: dict[type[ModelFailure], tuple[str, bool]] = {
    Refused: ("model_refused", True),
    SpendLimit: ("spend_limit", True),
    BudgetExceeded: ("budget_exceeded", True),
    TimedOut: ("timeout", False),
    Unavailable: ("model_error", False),
}


def classify(exc: ModelFailure) -> tuple[str, bool]:
    """The dead-letter reason of a model failure, and whether it means hand-off to a person."""
    for kind, outcome in _FAILURE_REASON.items():
        if isinstance(exc, kind):
            return outcome
    return ("model_error", False)


async def ask(
    llm: LLM,
    prompt: Prompt[T],
    *,
    check: Check[T] | None = None,
    reask_limit: int = 1,
    tokens_left: int | None = None,
) -> Asked[T]:
    """Ask ``llm``; re-ask up to ``reask_limit`` times with the errors, once more if truncated."""
    asked: Asked[T] = Asked(value=None)
    feedback: str | None = None
    max_tokens = prompt.max_tokens
    reasks = 0
    widened = False
    model = llm.model_for(prompt.stage)

    def fail(reason: str, error: str, raw: str = "", handoff: bool = False) -> Asked[T]:
        asked.failure = Failure(
            reason=reason,
            error=error,
            payload=raw,
            attempts=asked.attempts,
            model=model,
            prompt_version=prompt.version,
            handoff=handoff,
        )
        return asked

    while True:
        spent = sum(budget_tokens(c) for c in asked.calls)
        if tokens_left is not None and spent >= tokens_left:
            return fail("budget_exceeded", "the session's token budget is spent", handoff=True)
        asked.attempts += 1
        try:
            answer = await llm.ask(prompt, feedback=feedback, max_tokens=max_tokens)
        except Truncated as exc:
            asked.calls.extend(exc.usage)
            if widened:
                return fail("max_tokens", f"output truncated twice at {max_tokens} tokens", exc.raw)
            widened, max_tokens = True, max_tokens * 2
            continue
        except OutputInvalid as exc:
            asked.calls.extend(exc.usage)
            if reasks >= reask_limit:
                return fail("validation_failed", exc.message, exc.raw)
            reasks, feedback = reasks + 1, exc.message
            continue
        except ModelFailure as exc:
            asked.calls.extend(exc.usage)
            reason, handoff = classify(exc)
            return fail(reason, exc.message, exc.raw, handoff)
        asked.calls.append(answer.usage)
        problems = grounding_problems(answer.value, prompt.facts)
        problems += check(answer.value) if check else []
        if not problems:
            asked.value = answer.value
            return asked
        if reasks >= reask_limit:
            return fail("validation_failed", "; ".join(problems), answer.raw)
        reasks, feedback = reasks + 1, "; ".join(problems)


@dataclass
class Outcome(Generic[T]):
    """A stage's result: always a value (the fallback's when the model failed)."""

    value: T
    calls: list[CallUsage] = field(default_factory=list)
    failure: Failure | None = None
    degraded: bool = False

    @classmethod
    def of(cls, asked: Asked[T], fallback: Callable[[], T]) -> Outcome[T]:
        """The model's value, or ``fallback()`` with the failure kept.

        A spent session budget is not this stage's failure to report: the strategy stage always
        asks, finds the budget spent too, and hands the ticket off with one dead letter.
        """
        if asked.value is not None:
            return cls(value=asked.value, calls=asked.calls)
        failure = asked.failure
        if failure is not None and failure.reason == "budget_exceeded":
            failure = None
        return cls(value=fallback(), calls=asked.calls, failure=failure, degraded=True)

"""Asking a model for a validated record: re-ask on invalid output, then report a failure."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from pydantic import BaseModel

from agents.llm import (
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
from schemas.records import CallUsage

T = TypeVar("T", bound=BaseModel)

Check = Callable[[T], list[str]]


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
        spent = sum(c.input_tokens + c.output_tokens for c in asked.calls)
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
        problems = check(answer.value) if check else []
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
        """The model's value, or ``fallback()`` with the failure kept."""
        if asked.value is not None:
            return cls(value=asked.value, calls=asked.calls)
        return cls(value=fallback(), calls=asked.calls, failure=asked.failure, degraded=True)

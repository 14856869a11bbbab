"""Asking a model for a validated record: re-ask on invalid output, then report a failure."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol, TypeVar

import orjson
from pydantic import BaseModel

from baton_kafka.agents.models.llm import (
    LLM,
    Answer,
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
from baton_kafka.agents.outcome import Asked, Failure
from baton_kafka.schemas.records import CallUsage

T = TypeVar("T", bound=BaseModel)

Validator = Callable[[T], None]
"""A stage's business check on a model's output: raises ``OutputInvalid(reason)`` to ask again."""

Review = Callable[[T, int | None], Awaitable[list[CallUsage]]]
"""A check that asks a model itself, run once the validators pass, given the tokens left: returns
its calls' usage, raises ``OutputInvalid`` (its calls in ``usage``) to ask again, or another
``ModelFailure`` when it could not check."""


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


def rejection(answer: Answer[T], validators: Sequence[Validator[T]]) -> OutputInvalid | None:
    """Every validator's objection to ``answer`` as one ``OutputInvalid``, or None if none object.

    All validators run, so one re-ask can fix every problem at once.
    """
    reasons = []
    for validate in validators:
        try:
            validate(answer.value)
        except OutputInvalid as exc:
            reasons.append(exc.message)
    if not reasons:
        return None
    return OutputInvalid("; ".join(reasons), answer.raw, request_id=answer.usage.request_id)


async def ask(
    llm: LLM,
    prompt: Prompt[T],
    *,
    validators: Sequence[Validator[T]] = (),
    reask_limit: int = 1,
    tokens_left: int | None = None,
    amend: Callable[[T], T] | None = None,
    feedback_note: str | None = None,
    review: Review[T] | None = None,
) -> Asked[T]:
    """Ask ``llm``; re-ask up to ``reask_limit`` times with the errors, once more if truncated.

    ``amend`` fixes what the code knows better than the model (before the validators run);
    ``feedback_note`` is added to every re-ask's errors (in the customer's language);
    ``review`` checks an answer the validators passed, with a model call of its own.
    """
    asked: Asked[T] = Asked(value=None)
    feedback: str | None = None
    max_tokens = prompt.max_tokens
    reasks = 0
    widened = False
    invalid: OutputInvalid | None
    model = llm.model_for(prompt.stage)

    def fail(
        reason: str, error: str, raw: str = "", handoff: bool = False, request_id: str | None = None
    ) -> Asked[T]:
        asked.failure = Failure(
            reason=reason,
            error=error,
            payload=raw,
            attempts=asked.attempts,
            model=model,
            prompt_version=prompt.version,
            handoff=handoff,
            request_id=request_id,
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
                error = f"output truncated twice at {max_tokens} tokens"
                return fail("max_tokens", error, exc.raw, request_id=exc.request_id)
            widened, max_tokens = True, max_tokens * 2
            continue
        except OutputInvalid as exc:
            asked.calls.extend(exc.usage)
            invalid = exc
        except ModelFailure as exc:
            asked.calls.extend(exc.usage)
            reason, handoff = classify(exc)
            return fail(reason, exc.message, exc.raw, handoff, exc.request_id)
        else:
            asked.calls.append(answer.usage)
            if amend is not None:
                answer = replace(answer, value=amend(answer.value))
            invalid = rejection(answer, validators)
            if invalid is None and review is not None:
                spent = sum(budget_tokens(c) for c in asked.calls)
                left = None if tokens_left is None else max(tokens_left - spent, 0)
                try:
                    asked.calls.extend(await review(answer.value, left))
                except OutputInvalid as exc:
                    asked.calls.extend(exc.usage)
                    invalid = OutputInvalid(exc.message, answer.raw, request_id=exc.request_id)
                except ModelFailure as exc:
                    asked.calls.extend(exc.usage)
                    reason, handoff = classify(exc)
                    return fail(reason, exc.message, answer.raw, handoff, exc.request_id)
            if invalid is None:
                asked.value = answer.value
                return asked
        if reasks >= reask_limit:
            return fail(
                "validation_failed", invalid.message, invalid.raw, request_id=invalid.request_id
            )
        reasks, feedback = reasks + 1, invalid.message
        if feedback_note:
            feedback = f"{feedback}\n{feedback_note}"


async def ask_with_data(
    llm: LLM,
    stage: str,
    output: type[T],
    *,
    system: str,
    data: Mapping[str, Any],
    max_tokens: int,
    reask_limit: int,
    tokens_left: int | None,
) -> Asked[T]:
    """Ask ``llm`` for ``output`` with ``system`` as the instructions and ``data`` as JSON (the
    way a stage declared with a prompt, and a stage function's context, ask)."""
    prompt = Prompt(
        stage=stage,
        system=system,
        context=orjson.dumps(data).decode(),
        output_type=output,
        facts=None,
        max_tokens=max_tokens,
    )
    return await ask(llm, prompt, reask_limit=reask_limit, tokens_left=tokens_left)

"""What a stage returns: a value always, the failure that forced a fallback, every call's usage."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from pydantic import BaseModel

from baton_kafka.schemas.records import CallUsage, Order

T = TypeVar("T", bound=BaseModel)


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
    request_id: str | None = None


@dataclass
class Asked(Generic[T]):
    """A model's validated value, or the failure that prevented one; with every call's usage."""

    value: T | None
    calls: list[CallUsage] = field(default_factory=list)
    failure: Failure | None = None
    attempts: int = 0


@dataclass
class Outcome(Generic[T]):
    """A stage's result: always a value (the fallback's when the model failed)."""

    value: T
    calls: list[CallUsage] = field(default_factory=list)
    failure: Failure | None = None
    degraded: bool = False
    # Why the stage hands the ticket to a person (the policy's triggers, an approval), if it does.
    handoff_reasons: tuple[str, ...] = ()
    # The matched order as the stage re-read it from the store (strategy), for the hand-off.
    verified: Order | None = None

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

"""The model protocol that Claude, the offline model and a scripted model all satisfy."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from baton_kafka.schemas.records import CallUsage, StageName

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class Prompt(Generic[T]):
    """One request: a static, cacheable system part and the per-ticket context."""

    stage: StageName
    system: str
    context: str
    output_type: type[T]
    facts: Any  # agents.prompts.Facts; typed loosely to keep this module free of prompts
    max_tokens: int = 1024
    version: str = ""


@dataclass(frozen=True)
class Answer(Generic[T]):
    """A validated model output with what it cost."""

    value: T
    usage: CallUsage
    raw: str = ""
    stop_reason: str = "end_turn"


class LLM(Protocol):
    """A model that answers a prompt with a validated ``prompt.output_type``."""

    name: str

    def model_for(self, stage: StageName) -> str:
        """Name of the model used for ``stage``."""
        ...

    async def ask(
        self, prompt: Prompt[T], *, feedback: str | None = None, max_tokens: int | None = None
    ) -> Answer[T]:
        """Ask once; raise one of the ``ModelFailure`` subclasses when no valid answer came."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


@dataclass
class ModelFailure(Exception):
    """A model call that produced no usable answer."""

    message: str
    raw: str = ""
    usage: list[CallUsage] = field(default_factory=list)
    request_id: str | None = None  # the API's ``request-id`` of the failed call, when it sent one

    def __str__(self) -> str:
        return self.message


class OutputInvalid(ModelFailure):
    """The output broke JSON, the schema or a stage's validator: re-ask with ``message``."""


class Truncated(ModelFailure):
    """The model stopped at ``max_tokens``: re-ask once with more room."""


class Refused(ModelFailure):
    """The model refused: hand the ticket to a person."""


class Unavailable(ModelFailure):
    """Transient failures (429, 529, 5xx, connection) outlasted the retry budget."""


class TimedOut(ModelFailure):
    """The call exceeded its timeout after retries."""


class SpendLimit(ModelFailure):
    """The account's spend limit is reached: retrying cannot help."""


class BudgetExceeded(ModelFailure):
    """The session's token budget is spent: no more model calls for it."""

"""Model clients behind one protocol: ``LLM``, its prompt and answer, and how a call fails."""

from agents.models.llm import (
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

__all__ = [
    "LLM",
    "Answer",
    "BudgetExceeded",
    "ModelFailure",
    "OutputInvalid",
    "Prompt",
    "Refused",
    "SpendLimit",
    "TimedOut",
    "Truncated",
    "Unavailable",
]

"""Model clients behind one protocol: ``LLM``, its prompt and answer, how a call fails, and
the providers that build one (by name or ``module:factory``) with what each can do."""

from baton_kafka.agents.models.capabilities import Capabilities, Limits
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
from baton_kafka.agents.models.providers import ModelOptions, ProviderError, open_llm

__all__ = [
    "LLM",
    "Answer",
    "BudgetExceeded",
    "Capabilities",
    "Limits",
    "ModelFailure",
    "ModelOptions",
    "OutputInvalid",
    "Prompt",
    "ProviderError",
    "Refused",
    "SpendLimit",
    "TimedOut",
    "Truncated",
    "Unavailable",
    "open_llm",
]

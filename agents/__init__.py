"""The three stages as plain async functions, their results, the model protocol, order sources."""

from baton_kafka.agents.models.llm import LLM
from baton_kafka.agents.orders import (
    OrderSource,
    OrderStore,
    StoreUnavailable,
    open_source,
    open_store,
)
from baton_kafka.agents.outcome import Failure, Outcome
from baton_kafka.agents.stages.lookup.agent import look_up
from baton_kafka.agents.strategy import decide
from baton_kafka.agents.understand import understand

__all__ = [
    "LLM",
    "Failure",
    "OrderSource",
    "OrderStore",
    "Outcome",
    "StoreUnavailable",
    "decide",
    "look_up",
    "open_source",
    "open_store",
    "understand",
]

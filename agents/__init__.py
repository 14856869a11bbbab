"""The three stages as plain async functions, their results, the model protocol, order sources."""

from agents.lookup import look_up
from agents.models.llm import LLM
from agents.orders import OrderSource, OrderStore, StoreUnavailable, open_source, open_store
from agents.outcome import Failure, Outcome
from agents.strategy import decide
from agents.understand import understand

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

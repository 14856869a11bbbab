"""What the chain gives a built-in stage's run function for one ticket (``Inputs`` fits it)."""

from __future__ import annotations

from typing import Protocol

from baton_kafka.agents.models.llm import LLM
from baton_kafka.agents.orders import OrderSource
from baton_kafka.agents.policy import Policy
from baton_kafka.agents.prompts import EarlierSession
from baton_kafka.schemas.baton import Baton, OrderMemory
from baton_kafka.schemas.records import Ticket
from baton_kafka.schemas.stages import OrderMatch, StageRecord, Understanding


class Given(Protocol):
    """The ticket, its session and the worker's parts, as ``streams.runtime.stages.Inputs``."""

    @property
    def record(self) -> StageRecord: ...

    @property
    def ticket(self) -> Ticket: ...

    @property
    def understanding(self) -> Understanding: ...

    @property
    def match(self) -> OrderMatch: ...

    @property
    def baton(self) -> Baton: ...

    @property
    def store(self) -> OrderSource: ...

    @property
    def llm(self) -> LLM: ...

    @property
    def policy(self) -> Policy: ...

    @property
    def reask_limit(self) -> int: ...

    @property
    def tokens_left(self) -> int: ...

    @property
    def read(self) -> bool: ...

    def earlier(self) -> list[EarlierSession]: ...

    def history(self) -> list[OrderMemory]: ...

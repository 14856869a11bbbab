"""The orders a customer discussed are read at most once per stage: the reply records the
answering stage's own reading, unless the baton or the customer's index changed since."""

from __future__ import annotations

from typing import Any

import pytest

from baton_kafka.agents import history
from baton_kafka.agents import stage as stage_module
from baton_kafka.agents.memory import new_baton
from baton_kafka.agents.stage import Inputs
from baton_kafka.schemas.baton import MemoryIndex, OrderMemory
from baton_kafka.schemas.records import utcnow
from baton_kafka.schemas.stages import StageRecord
from baton_kafka.streams.runtime import pipeline as pipeline_module
from baton_kafka.streams.testing import TestPipeline
from tests.fixtures.data import ticket


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How often the orders are read (wherever the runtime imported the reader)."""
    calls = [0]

    def recallable(*args: Any) -> list[OrderMemory]:
        calls[0] += 1
        return history.recallable(*args)

    monkeypatch.setattr(stage_module, "recallable", recallable)
    monkeypatch.setattr(pipeline_module, "recallable", recallable, raising=False)
    return calls


async def test_a_ticket_reads_its_order_history_at_most_once_per_stage(
    pipeline: TestPipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _counted(monkeypatch)
    (reply,) = await pipeline.send(ticket("t1", "My kettle is leaking, I want a refund."))
    assert reply.order_id == "O-1"
    # The look-up shares the understanding's reading (see test_ticket_reads).
    assert calls[0] == len(pipeline.pipeline.chain) - 1


class _Memory:
    """A customer's index as the store hands it out: the same object until it is replaced."""

    def __init__(self, index: MemoryIndex | None) -> None:
        self.now = index

    def index(self, customer_id: str) -> MemoryIndex | None:
        return self.now

    def earlier(self, customer_id: str | None, session_id: str) -> list[Any]:
        return []


def _inputs(memory: _Memory) -> Inputs:
    t = ticket("t1", "My kettle is leaking.")
    unused: Any = None  # neither the model nor the orders are asked
    return Inputs(
        record=StageRecord(ticket=t),
        baton=new_baton(t),
        llm=unused,
        store=unused,
        batons=memory,
        reask_limit=1,
        tokens_left=1000,
    )


def _index(order_id: str) -> MemoryIndex:
    order = OrderMemory(order_id=order_id, session_id="S0", at=utcnow())
    return MemoryIndex(key="C1", orders=[order])


def test_the_reading_is_kept_while_the_baton_and_the_index_are_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _counted(monkeypatch)
    memory = _Memory(_index("O-1"))
    inputs = _inputs(memory)
    first, again = inputs.history(), inputs.history()
    assert calls[0] == 1
    assert first == again and first is not again  # each caller gets its own list
    assert [o.order_id for o in again] == ["O-1"]


def test_a_changed_index_is_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counted(monkeypatch)
    memory = _Memory(_index("O-1"))
    inputs = _inputs(memory)
    inputs.history()
    memory.now = _index("O-2")
    assert [o.order_id for o in inputs.history()] == ["O-2"]
    memory.now = None
    assert inputs.history() == []
    assert calls[0] == 3

"""The seeking consumer's rebalance rules, on the class itself: which seeks run, and which
partitions are handed on after one."""

from __future__ import annotations

from typing import Any

import pytest
from faust.transport.drivers.aiokafka import Consumer
from faust.types import TP

from baton_kafka.streams.kafka.faust_consumer import seeking_consumer

SOURCE, OTHER = TP("shop.support.tickets", 0), TP("shop.support.other", 0)


@pytest.fixture
def consumer(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[str]]:
    """A seeking consumer without a broker: Faust's own seek and resume only record the call."""
    calls: list[str] = []

    async def seek(self: Any) -> None:
        calls.append("seek")

    def resume(self: Any, tps: Any) -> None:
        calls.append(f"resume {sorted(tp.topic for tp in tps)}")

    monkeypatch.setattr(Consumer, "perform_seek", seek)
    monkeypatch.setattr(Consumer, "resume_partitions", resume)
    monkeypatch.setattr(Consumer, "assignment", lambda self: {SOURCE, OTHER})
    cls = seeking_consumer(frozenset({SOURCE.topic}))
    c = object.__new__(cls)  # no transport: only the overridden methods run
    return c, calls


async def test_a_seek_asked_for_mid_rebalance_with_nothing_held_is_skipped(
    consumer: tuple[Any, list[str]],
) -> None:
    c, calls = consumer
    c.flow_active = False
    await c.perform_seek()
    assert calls == []


async def test_held_source_partitions_are_handed_on_only_after_the_seek(
    consumer: tuple[Any, list[str]],
) -> None:
    c, calls = consumer
    c.flow_active = False
    c.resume_partitions({SOURCE, OTHER})
    assert calls == ["resume ['shop.support.other']"]  # the source waits for its seek
    await c.perform_seek()
    assert calls[1:] == ["seek", "resume ['shop.support.tickets']"]
    await c.perform_seek()  # a second seek while stopped, nothing held: skipped
    assert len(calls) == 3


async def test_a_seek_while_the_flow_runs_always_seeks(consumer: tuple[Any, list[str]]) -> None:
    c, calls = consumer
    c.flow_active = True
    await c.perform_seek()
    assert calls == ["seek", "resume []"]

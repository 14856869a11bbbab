"""The worker's collector: start-up objects set aside, young objects collected in batches."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from baton_kafka.streams.runtime import heap


@pytest.fixture
def restored() -> Iterator[None]:
    thresholds = gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)


@pytest.mark.usefixtures("restored")
def test_settle_freezes_what_is_alive_and_raises_the_young_threshold() -> None:
    kept = [object() for _ in range(10)], {"a": [1, 2]}
    heap.settle()
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == (heap.YOUNG_THRESHOLD, heap.MIDDLE_THRESHOLD, heap.OLD_THRESHOLD)
    assert heap.YOUNG_THRESHOLD > 700
    # Objects made afterwards are collected as usual: a cycle among them is freed.
    cycle: list[object] = []
    cycle.append(cycle)
    del cycle
    assert gc.collect() >= 1
    assert kept[1]["a"] == [1, 2]


def test_settled_restores_the_collector_as_it_was() -> None:
    thresholds = gc.get_threshold()
    with heap.settled():
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (
            heap.YOUNG_THRESHOLD,
            heap.MIDDLE_THRESHOLD,
            heap.OLD_THRESHOLD,
        )
    assert (gc.get_threshold(), gc.get_freeze_count()) == (thresholds, 0)

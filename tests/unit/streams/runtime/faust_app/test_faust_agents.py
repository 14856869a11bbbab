"""The partitions a worker reads, kept per assignment."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import faust
from faust.types import TP

from baton_kafka.streams.runtime.faust_app.faust_agents import ActivePartitions


class _Assignor:
    """An assignor whose assignment object is replaced at each rebalance, as Faust's is."""

    def __init__(self, actives: set[TP]) -> None:
        self._assignment: object = object()
        self.actives = actives
        self.built = 0

    def assigned_actives(self) -> set[TP]:
        self.built += 1
        return set(self.actives)

    def rebalance(self, actives: set[TP]) -> None:
        self._assignment = object()
        self.actives = actives


def _app(assignor: Any) -> Any:
    return SimpleNamespace(assignor=assignor)


def test_the_pairs_are_built_once_per_assignment_and_again_after_a_rebalance() -> None:
    assignor = _Assignor({TP("t.sessions", 0), TP("t.understood", 2)})
    actives = ActivePartitions(_app(assignor))

    assert actives() == {("t.sessions", 0), ("t.understood", 2)}
    assert actives() == {("t.sessions", 0), ("t.understood", 2)}
    assert assignor.built == 1

    assignor.rebalance({TP("t.sessions", 1)})
    assert actives() == {("t.sessions", 1)}
    assert ("t.sessions", 0) not in actives()
    assert assignor.built == 2


def test_without_an_assignment_object_the_pairs_are_built_at_every_call() -> None:
    assignor = SimpleNamespace(assigned_actives=lambda: {TP("t.sessions", 3)})
    actives = ActivePartitions(_app(assignor))
    assert actives() == {("t.sessions", 3)}
    assignor.assigned_actives = lambda: set()
    assert actives() == frozenset()


def test_faust_s_assignor_has_the_assignment_object_the_pairs_are_kept_for() -> None:
    app = faust.App("baton-test-actives", broker="kafka://127.0.0.1:1")
    assignor = app.assignor
    assert hasattr(assignor, "_assignment")
    actives = ActivePartitions(app)
    assert actives() == frozenset()  # nothing assigned before the group's first assignment
    assert actives._of is assignor._assignment

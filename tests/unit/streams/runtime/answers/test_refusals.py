"""A sender's refusals: a budget per minute, each sender its own, memory bounded."""

from __future__ import annotations

from baton_kafka.streams.runtime.answers import refusals
from baton_kafka.streams.runtime.answers.refusals import Refusals


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_first_refusals_of_a_minute_are_kept_then_counted_until_the_minute_is_over() -> None:
    clock = Clock()
    r = Refusals(per_minute=2, clock=clock)
    assert [r.keep("mallory") for _ in range(4)] == [True, True, False, False]
    assert r.dropped("mallory") == 2
    assert r.keep("alice") is True
    clock.now += 59.0
    assert r.keep("mallory") is False
    clock.now += 1.0
    assert r.keep("mallory") is True and r.dropped("mallory") == 0


def test_zero_keeps_every_refusal() -> None:
    r = Refusals(per_minute=0)
    assert all(r.keep("mallory") for _ in range(1000)) and r.dropped("mallory") == 0


def test_rotating_senders_cannot_grow_the_memory(monkeypatch: object) -> None:
    r = Refusals(per_minute=1)
    for i in range(refusals.MAX_SENDERS + 500):
        r.keep(f"s{i}")
    assert len(r._windows) == refusals.MAX_SENDERS
    # The oldest were forgotten: a forgotten sender starts a new budget.
    assert r.keep("s0") is True and r.keep(f"s{refusals.MAX_SENDERS + 499}") is False

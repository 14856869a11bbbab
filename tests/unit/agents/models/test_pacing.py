"""Pacing model calls: the AIMD limit, jittered backoff, ticket time budgets, throttling."""

from __future__ import annotations

import asyncio
import random

import pytest

from baton_kafka.agents.models.pacing import (
    AdaptiveLimit,
    Throttle,
    TicketClock,
    backoff_s,
    retry_delay_s,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_the_limit_bounds_holders_and_hands_slots_on_in_order() -> None:
    limit = AdaptiveLimit(2)
    running, peak, order = 0, 0, []

    async def hold(i: int) -> None:
        nonlocal running, peak
        async with limit.slot():
            running += 1
            peak = max(peak, running)
            order.append(i)
            await asyncio.sleep(0.01)
            running -= 1

    await asyncio.gather(*(hold(i) for i in range(7)))
    assert peak == 2 and sorted(order) == list(range(7))
    assert limit.in_use == 0


async def test_overload_halves_once_per_cooldown_and_success_grows_it_back() -> None:
    clock = FakeClock()
    limit = AdaptiveLimit(16, clock=clock, cooldown_s=1.0)
    assert limit.overloaded() and limit.slots == 8
    assert not limit.overloaded() and limit.slots == 8  # the same burst
    clock.now += 1.5
    assert limit.overloaded() and limit.slots == 4
    for _ in range(3):
        clock.now += 1.5
        limit.overloaded()
    assert limit.slots == 1 and limit.cuts == 5  # never below the minimum
    successes = 0
    while limit.slots < 16:
        limit.succeeded()
        successes += 1
    # Additive: about one slot per round of calls, so ~sum(1..15) successes back to 16.
    assert 100 <= successes <= 140
    limit.succeeded()
    assert limit.limit == 16


async def test_a_cut_limit_makes_new_callers_wait_and_growth_lets_them_in() -> None:
    clock = FakeClock()
    limit = AdaptiveLimit(2, clock=clock)
    await limit.acquire()
    limit.overloaded()
    assert limit.slots == 1
    waiter = asyncio.ensure_future(limit.acquire())
    await asyncio.sleep(0.01)
    assert not waiter.done()
    limit.succeeded()  # 1 -> 2 slots
    await asyncio.wait_for(waiter, 1)
    assert limit.in_use == 2


async def test_a_cancelled_waiter_does_not_leak_a_slot() -> None:
    limit = AdaptiveLimit(1)
    await limit.acquire()
    cancelled = asyncio.ensure_future(limit.acquire())
    patient = asyncio.ensure_future(limit.acquire())
    await asyncio.sleep(0.01)
    limit.release()  # wakes `cancelled` first ...
    cancelled.cancel()  # ... which gives its turn on to `patient`
    await asyncio.wait_for(patient, 1)
    assert limit.in_use == 1
    with pytest.raises(asyncio.CancelledError):
        await cancelled


def test_backoff_grows_exponentially_with_jitter_and_a_cap() -> None:
    rng = random.Random(7)
    for retry in range(10):
        ceiling = min(20.0, 0.5 * 2**retry)
        delays = [backoff_s(retry, rng=rng) for _ in range(50)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(set(delays)) > 40  # jittered, not one value
    assert max(backoff_s(30, rng=rng) for _ in range(20)) <= 20.0


def test_retry_after_is_a_floor_with_jitter_on_top() -> None:
    rng = random.Random(3)
    delays = [retry_delay_s(0, 4.0, rng=rng) for _ in range(50)]
    assert all(4.0 <= d <= 5.0 for d in delays) and len(set(delays)) > 40
    assert 0.25 <= retry_delay_s(0, None, rng=rng) <= 0.5
    assert retry_delay_s(6, 0.1, rng=rng) >= 10.0  # a long backoff is not cut short


def test_ticket_clock_charges_each_ticket_and_forgets_the_oldest() -> None:
    clock = TicketClock(10.0, keep=2)
    clock.spend("a", 4.0)
    clock.spend("a", 3.5)
    clock.spend("b", 1.0)
    assert clock.left("a") == pytest.approx(2.5) and clock.left("b") == 9.0
    assert clock.left(None) == 10.0 and clock.left("new") == 10.0
    clock.spend("c", 1.0)
    assert clock.left("a") == 10.0  # forgotten: the oldest of three with keep=2


def test_throttle_says_yes_once_per_interval_and_counts_the_rest() -> None:
    clock = FakeClock()
    throttle = Throttle(60.0, clock=clock)
    assert throttle.ready() == 0
    clock.now += 30
    assert throttle.ready() is None and throttle.ready() is None
    clock.now += 31
    assert throttle.ready() == 2
    assert throttle.ready() is None


def test_an_exhausted_ticket_has_nothing_left() -> None:
    clock = TicketClock(5.0)
    clock.spend("a", 1.0)
    clock.exhaust("a")
    clock.exhaust(None)
    assert clock.left("a") == 0.0 and clock.left("b") == 5.0

"""The stages' turns on one event loop: a ticket in the chain before a new one's first stage."""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from baton_kafka.streams.bench.inproc import measure
from baton_kafka.streams.bench.load import Workload
from baton_kafka.streams.runtime.session.priority import ChainPriority, Paced
from baton_kafka.streams.settings import load


async def _spin(times: int = 5) -> None:
    for _ in range(times):
        await asyncio.sleep(0)


# The waits here are counted in loop turns, not seconds: no test may hit ``max_wait_s`` on a
# slow machine unless it means to.


async def test_a_first_stage_record_waits_while_a_later_stage_works() -> None:
    p = ChainPriority(max_wait_s=30)
    order: list[str] = []
    later_may_stop = asyncio.Event()

    async def later() -> None:
        async with p.working(first=False):
            order.append("later starts")
            await later_may_stop.wait()
            order.append("later stops")

    async def first() -> None:
        async with p.working(first=True):
            order.append("first starts")

    tasks = [asyncio.create_task(later())]
    await _spin()
    tasks.append(asyncio.create_task(first()))
    await _spin()
    assert order == ["later starts"] and (p.later, p.first) == (1, 0)
    later_may_stop.set()
    await asyncio.gather(*tasks)
    assert order == ["later starts", "later stops", "first starts"]
    assert (p.later, p.first, p.overdue) == (0, 0, 0)


async def test_later_stages_never_wait_for_the_first() -> None:
    p = ChainPriority(first_lanes=1, max_wait_s=30)
    async with p.working(first=True):
        async with asyncio.timeout(1):
            async with p.working(first=False):
                assert (p.first, p.later) == (1, 1)


async def test_first_stage_records_take_their_lanes_and_step_aside_while_they_wait() -> None:
    p = ChainPriority(first_lanes=1, max_wait_s=30)
    log: list[str] = []
    model = asyncio.Event()

    async def one() -> None:
        async with p.working(first=True):
            log.append("1 works")
            # A model call: the other first-stage record may work meanwhile.
            await p.waited(model.wait())
            log.append("1 goes on")

    async def two() -> None:
        async with p.working(first=True):
            log.append("2 works")
            await _spin()
            log.append("2 done")

    a = asyncio.create_task(one())
    await _spin()
    b = asyncio.create_task(two())
    await _spin(20)
    assert log == ["1 works", "2 works", "2 done"]
    model.set()
    await asyncio.gather(a, b)
    assert log[-1] == "1 goes on" and (p.first, p.later) == (0, 0)


async def test_the_oldest_waiting_ticket_goes_first() -> None:
    p = ChainPriority(first_lanes=1, max_wait_s=30)
    started: list[int] = []
    hold = asyncio.Event()

    async def blocker() -> None:
        async with p.working(first=False):
            await hold.wait()

    async def ticket(i: int) -> None:
        async with p.working(first=True):
            started.append(i)

    b = asyncio.create_task(blocker())
    await _spin()
    tasks = []
    for i in range(5):
        tasks.append(asyncio.create_task(ticket(i)))
        await _spin(1)
    await _spin()
    assert started == []
    hold.set()
    await asyncio.gather(b, *tasks)
    assert started == [0, 1, 2, 3, 4]


async def test_a_record_kept_waiting_too_long_goes_on_anyway() -> None:
    p = ChainPriority(max_wait_s=0.05)
    stuck = asyncio.Event()

    async def later() -> None:
        async with p.working(first=False):
            await stuck.wait()  # a wait not marked as one

    t = asyncio.create_task(later())
    await _spin()
    async with asyncio.timeout(1):
        async with p.working(first=True):
            assert (p.first, p.overdue) == (1, 1)
    stuck.set()
    await t
    assert (p.first, p.later) == (0, 0)


async def test_a_cancelled_or_failing_record_gives_its_place_back() -> None:
    p = ChainPriority(first_lanes=1, max_wait_s=30)
    hold = asyncio.Event()

    async def later() -> None:
        async with p.working(first=False):
            await hold.wait()

    async def first() -> None:
        async with p.working(first=True):
            pass

    blocker = asyncio.create_task(later())
    await _spin()
    waiting = asyncio.create_task(first())
    await _spin()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    hold.set()
    await blocker
    assert (p.first, p.later) == (0, 0)

    with pytest.raises(RuntimeError):
        async with p.working(first=True):
            await p.waited(_fails())
    assert (p.first, p.later) == (0, 0)
    async with asyncio.timeout(1):
        async with p.working(first=True):
            assert p.first == 1


async def test_a_record_that_gave_up_waiting_may_wait_again() -> None:
    # Its stale place in line and its new one share the ticket's place: both must be kept.
    p = ChainPriority(first_lanes=1, max_wait_s=0.02)
    hold = asyncio.Event()

    async def later() -> None:
        async with p.working(first=False):
            await hold.wait()

    blocker = asyncio.create_task(later())
    await _spin()
    async with asyncio.timeout(1):
        async with p.working(first=True):
            assert p.overdue == 1
            await p.waited(asyncio.sleep(0))
            assert p.overdue == 2
            await p.waited(asyncio.sleep(0))
    hold.set()
    await blocker
    assert (p.first, p.later, p.overdue) == (0, 0, 3)


async def test_a_task_started_from_a_record_does_not_move_its_count() -> None:
    p = ChainPriority(first_lanes=1, max_wait_s=30)
    async with p.working(first=True):
        # It inherits the record's context; its waits are its own, not the record's.
        background = asyncio.create_task(p.waited(asyncio.sleep(0.01)))
        await _spin(1)
        assert p.first == 1
    await background
    assert (p.first, p.later) == (0, 0)


async def _fails() -> None:
    await asyncio.sleep(0)
    raise RuntimeError("the model is down")


async def test_paced_calls_are_waits_and_everything_else_passes_through() -> None:
    p = ChainPriority(first_lanes=1, max_wait_s=30)
    seen: list[int] = []

    class Model:
        name = "scripted"

        def model_for(self, stage: str) -> str:
            return f"m-{stage}"

        async def ask(self, x: int) -> int:
            seen.append(p.first)
            await asyncio.sleep(0)
            return x + 1

    paced = Paced(Model(), p)
    assert paced.name == "scripted" and paced.model_for("understand") == "m-understand"
    async with p.working(first=True):
        assert p.first == 1
        assert await paced.ask(1) == 2
        assert p.first == 1
    # During the call the record was not counted as working.
    assert seen == [0]


async def test_switched_off_nothing_waits() -> None:
    p = ChainPriority(enabled=False)
    async with p.working(first=False):
        async with asyncio.timeout(1):
            async with p.working(first=True):
                await p.waited(asyncio.sleep(0))
    assert (p.first, p.later, p.overdue) == (0, 0, 0)


async def test_the_setting_switches_it_and_the_pipeline_answers_alike(tmp_path: Path) -> None:
    from tests.unit.streams.bench.test_bench import _store_with

    assert load({}).stage_priority is False
    assert load({"BATON_STAGE_PRIORITY": "1"}).stage_priority is True
    workload = Workload("turns", sessions=3, per_session=2)
    settings = await _store_with(tmp_path, workload)
    off = await measure(settings, workload.tickets())
    on = await measure(settings.with_(stage_priority=True), workload.tickets())
    assert off.replies == on.replies == 6


def _burst(priority: ChainPriority | None) -> list[int]:
    """Ten tickets at once through three stages of three steps of work each; each ticket's
    finishing step (the work done by then, everyone's)."""
    clock = 0
    done: list[int] = []

    async def work(steps: int = 3) -> None:
        nonlocal clock
        for _ in range(steps):
            clock += 1  # a step of CPU, then the loop's other ready tasks
            await asyncio.sleep(0)

    def stage(first: bool) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            if priority is None:
                await work()
                return
            async with priority.working(first):
                await work()

        return run

    async def ticket() -> None:
        await stage(True)()
        for _ in range(2):
            # The hop to the next stage's agent: a task of its own.
            await asyncio.create_task(stage(False)())
        done.append(clock)

    async def burst() -> None:
        await asyncio.gather(*(ticket() for _ in range(10)))

    asyncio.run(burst())
    return done


def test_in_a_burst_tickets_finish_one_after_another_not_all_at_the_end() -> None:
    shared = _burst(None)
    ordered = _burst(ChainPriority(first_lanes=1, max_wait_s=30))
    # Without priority every ticket shares the loop with the new ones: all finish late.
    assert statistics.median(shared) >= 80
    # With it, the tickets in the chain go first: the median ticket finishes halfway.
    assert statistics.median(ordered) <= 60
    assert max(ordered) == max(shared) == 90

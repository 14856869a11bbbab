"""The stages' own work in instructions: the bench's in-process split of the cpu workload, run
under callgrind with counting on for the measured tickets only.

    valgrind --tool=callgrind --instr-atstart=no --cache-sim=no \\
        python -m baton_kafka.streams.bench.instructions --tickets 200

valgrind's ``Collected`` line is then the count. CPU time on a shared machine moves by tens of
percent from one hour to the next; the count moves by about 0.1 %, so it tells a cut of a few
percent. It counts every instruction of those tickets: the stages' code, the offline model's
rules and the in-memory topics. Outside valgrind the same tickets run uncounted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from baton_kafka.agents.orders import open_store
from baton_kafka.streams.bench.load import Workload
from baton_kafka.streams.bench.run import DEFAULT_PER_SESSION, DEFAULT_SESSIONS
from baton_kafka.streams.settings import Settings, load

# Tickets run before counting starts: the packs' patterns built, the caches of the process made.
WARM_TICKETS = 100
# The most tickets counted: the workload's, less those of the warm-up.
MOST = DEFAULT_SESSIONS["cpu"] * DEFAULT_PER_SESSION - WARM_TICKETS


def under_valgrind() -> bool:
    """Whether this process runs under valgrind (its preload library is loaded)."""
    return "vgpreload" in os.environ.get("LD_PRELOAD", "")


@contextmanager
def counting(on: bool) -> Iterator[None]:
    """Callgrind counts instructions inside the block when ``on``; nothing changes otherwise."""
    if on:
        _control("on")
    try:
        yield
    finally:
        if on:
            _control("off")


def _control(state: str) -> None:
    subprocess.run(
        ["callgrind_control", "-i", state, str(os.getpid())], check=True, capture_output=True
    )


async def run(settings: Settings, tickets: int, *, every_text_new: bool, count: bool) -> int:
    """Warm up, then run the cpu workload's first ``tickets`` tickets in this process, counted
    when ``count``; returns the replies."""
    from baton_kafka.streams.bench.inproc import measure

    workload = Workload("cpu", DEFAULT_SESSIONS["cpu"], DEFAULT_PER_SESSION)
    store = open_store(settings.orders_url)
    try:
        await store.upsert(workload.orders())
    finally:
        await store.close()
    every = workload.tickets()
    warm = settings.with_(namespace="instructions-warm")
    await measure(warm, every[-WARM_TICKETS:], every_text_new=every_text_new)
    with counting(count):
        cost = await measure(settings, every[:tickets], every_text_new=every_text_new)
    return cost.replies


def main(argv: list[str] | None = None) -> None:
    """Run the counted tickets and say how many were answered."""
    parser = argparse.ArgumentParser(prog="python -m baton_kafka.streams.bench.instructions")
    parser.add_argument("--tickets", type=int, default=200, help="tickets counted")
    parser.add_argument(
        "--repeat",
        action="store_true",
        help="keep the readings of texts across tickets (the workload's texts recur)",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.tickets <= MOST:
        parser.error(f"--tickets must be between 1 and {MOST}")
    count = under_valgrind()
    with tempfile.TemporaryDirectory() as data:
        settings = load({}).with_(data_dir=Path(data), namespace="instructions")
        replies = asyncio.run(
            run(settings, args.tickets, every_text_new=not args.repeat, count=count)
        )
    where = "counted: see valgrind's Collected line" if count else "not under valgrind: uncounted"
    print(f"{replies} replies to {args.tickets} tickets ({where})")


if __name__ == "__main__":
    main()

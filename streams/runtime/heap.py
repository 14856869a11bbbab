"""How a worker's garbage collector runs: its start-up objects set aside, young objects
collected in larger batches."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Allocations (net of frees) between two young collections; CPython's default is 700. A ticket
# allocates thousands of short-lived objects (records parsed, models built, futures), so at
# 700 a young collection ran every few hundred microseconds of work and traversed every
# object alive then: in process, 2,000 tickets spent about 6 % of their CPU in the collector,
# 2 % with this threshold.
YOUNG_THRESHOLD = 10_000
# Young collections between two of the middle generation, and those between two full ones
# (CPython's defaults).
MIDDLE_THRESHOLD = 10
OLD_THRESHOLD = 10


def settle() -> None:
    """Collect once, move every object alive now (modules, schemas, the app) out of the
    collector's sight, and raise the young generation's threshold.

    Called once, when the worker is built and before it starts: a full collection then
    traverses only what the worker made since (batons parsed, tasks, records), not the
    hundreds of thousands of objects imported at start, which live as long as the process.
    Frozen objects are still freed by reference counting; only cycles among them wait.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD)


@contextmanager
def settled() -> Iterator[None]:
    """``settle`` for the block's length, then the collector as it was (thresholds restored,
    every object unfrozen): for code that measures a worker's work inside another process."""
    thresholds = gc.get_threshold()
    settle()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)

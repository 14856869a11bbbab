"""Several bursts in one run: each a sample of its own, pooled for the tails and kept apart
for the spread between them."""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from baton_kafka.schemas.records import Ticket
from baton_kafka.streams.bench.kafka import Output
from baton_kafka.streams.bench.report import Measured
from baton_kafka.streams.bench.stats import percentile

# The worker idles this long between two bursts, so that one burst's commits, flushes and
# changelog writes are not the next one's queue.
PAUSE_S = 1.0


def split(tickets: Sequence[Ticket], size: int) -> list[list[Ticket]]:
    """``tickets`` in bursts of ``size``, in publication order (the last may be smaller)."""
    return [list(tickets[i : i + size]) for i in range(0, len(tickets), size)]


async def in_bursts(
    timed: Callable[[list[Ticket]], Awaitable[Measured]],
    bursts: list[list[Ticket]],
    pause_s: float = PAUSE_S,
) -> Measured:
    """Publish each burst with ``timed`` once the one before is answered, a pause between;
    returns them merged, the CPU and the active seconds those of the bursts alone."""
    parts: list[Measured] = []
    for i, burst in enumerate(bursts):
        if i:
            await asyncio.sleep(pause_s)
        parts.append(await timed(burst))
    return merged(parts)


def merged(parts: Sequence[Measured]) -> Measured:
    """One phase made of ``parts`` run one after another; pauses between them not counted."""
    other: dict[str, float] = {}
    sent_at: dict[str, float] = {}
    for part in parts:
        for name, cpu in part.other_cpu.items():
            other[name] = other.get(name, 0.0) + cpu
        sent_at.update(part.sent_at)
    return Measured(
        started=parts[0].started,
        finished=parts[-1].finished,
        complete=all(p.complete for p in parts),
        cpu_s=sum(p.cpu_s for p in parts),
        other_cpu=other,
        sent_at=sent_at,
        active_s=sum(p.finished - p.started for p in parts),
    )


def spread(
    bursts: Sequence[Sequence[Ticket]],
    first: Mapping[str, Output],
    sent_at: Mapping[str, float],
) -> dict[str, Any]:
    """Each burst's publish-to-reply p50 and p99 in ms, and how far the p50s lie apart."""
    p50s: list[float] = []
    p99s: list[float] = []
    for burst in bursts:
        waits = [
            1000 * (first[t.ticket_id].produced_at - sent_at[t.ticket_id])
            for t in burst
            if t.ticket_id in first and t.ticket_id in sent_at
        ]
        if waits:
            p50s.append(round(percentile(waits, 50) or 0.0, 1))
            p99s.append(round(percentile(waits, 99) or 0.0, 1))
    out: dict[str, Any] = {"bursts": len(bursts), "p50_ms": p50s, "p99_ms": p99s}
    if p50s:
        out["median_of_p50_ms"] = round(statistics.median(p50s), 1)
        out["p50_range_ms"] = [min(p50s), max(p50s)]
    return out


def floor(size: int, cpu_ms: Mapping[str, float | None], cores: int) -> dict[str, Any] | None:
    """The earliest a burst of ``size`` can be answered on this machine: the CPU per ticket of
    every process the bench measured (``cpu_ms``: worker, stand-in, broker) spread over
    ``cores`` with none idle, the k-th reply no sooner than k tickets' CPU over the cores.

    A floor, not an estimate: it leaves out the bench's own publisher and consumer, and no
    real schedule keeps every core busy. None when a process's CPU is unknown."""
    if size <= 0 or cores <= 0 or any(v is None for v in cpu_ms.values()):
        return None
    per_ticket = sum(v for v in cpu_ms.values() if v is not None)
    step = per_ticket / cores
    return {
        "cpu_ms_per_ticket": round(per_ticket, 1),
        "cores": cores,
        "p50_ms": round(percentile([k * step for k in range(1, size + 1)], 50) or 0.0, 1),
        "last_ms": round(size * step, 1),
    }


def describe(name: str, figures: Mapping[str, Any]) -> str:
    """A line for people: the bursts' count and each one's p50, so the spread is seen; a
    second with each burst's p50 of each part, when the run has them."""
    p50s = ", ".join(f"{v:g}" for v in figures["p50_ms"])
    line = f"{name}: {figures['bursts']} bursts, publish -> reply p50 by burst (ms): {p50s}"
    if "median_of_p50_ms" in figures:
        line += f"; their median {figures['median_of_p50_ms']:g}"
    if low := figures.get("floor"):
        line += (
            f"; this machine's floor p50 {low['p50_ms']:g}, last reply {low['last_ms']:g} "
            f"({low['cpu_ms_per_ticket']:g} ms CPU a ticket over {low['cores']} cores)"
        )
    if by_phase := figures.get("phases_p50_ms"):
        shown = "; ".join(
            f"{part} {', '.join('-' if v is None else f'{v:g}' for v in column)}"
            for part, column in by_phase.items()
        )
        # On a line of its own: where each burst waited, next to its p50 above.
        line += f"\n{name}: p50 by burst of each part (ms): {shown}"
    return line

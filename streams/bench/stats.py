"""The arithmetic of ``baton bench``: percentiles, delivery checks, /proc readings, the table."""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0..100) by linear interpolation; None for no values."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be between 0 and 100, got {q}")
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


# The spread every latency of the bench is reported with.
TAILS = (50, 95, 99)


def tails(values: Sequence[float], digits: int | None = None) -> dict[str, float | None]:
    """p50, p95, p99 (linear interpolation, as ``percentile``) and the max of ``values``;
    each None for no values, rounded to ``digits`` when given."""

    def shown(value: float | None) -> float | None:
        return round(value, digits) if value is not None and digits is not None else value

    out = {f"p{q}": shown(percentile(values, q)) for q in TAILS}
    out["max"] = shown(max(values)) if values else None
    return out


@dataclass(frozen=True)
class Delivery:
    """How the replies matched what was published."""

    answered: int
    lost: list[str]
    duplicates: int
    order_violations: int
    sessions_out_of_order: int
    unexpected: int


def check_delivery(
    published: Mapping[str, Sequence[str]], replies: Iterable[tuple[str, str]]
) -> Delivery:
    """Compare replies ``(session_id, ticket_id)``, in topic order, with publication order.

    ``published`` maps each session to its ticket ids in publication order. A reply that
    arrives after the reply to a later-published ticket of its session is one order violation;
    a second reply to a ticket is a duplicate (not judged for order).
    """
    position = {
        (session, ticket): i
        for session, tickets in published.items()
        for i, ticket in enumerate(tickets)
    }
    seen: set[tuple[str, str]] = set()
    latest: dict[str, int] = {}
    duplicates = violations = unexpected = 0
    disordered: set[str] = set()
    for session, ticket in replies:
        key = (session, ticket)
        if key not in position:
            unexpected += 1
            continue
        if key in seen:
            duplicates += 1
            continue
        seen.add(key)
        index = position[key]
        if index < latest.get(session, -1):
            violations += 1
            disordered.add(session)
        latest[session] = max(index, latest.get(session, -1))
    lost = [ticket for (session, ticket) in position if (session, ticket) not in seen]
    return Delivery(
        answered=len(seen),
        lost=lost,
        duplicates=duplicates,
        order_violations=violations,
        sessions_out_of_order=len(disordered),
        unexpected=unexpected,
    )


def split_sessions(partitions: Iterable[tuple[str, int]]) -> int:
    """Sessions whose replies came on more than one partition (topic order then means nothing)."""
    seen: dict[str, set[int]] = {}
    for session, partition in partitions:
        seen.setdefault(session, set()).add(partition)
    return sum(1 for parts in seen.values() if len(parts) > 1)


CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds_of(stat: str, ticks: int = CLOCK_TICKS) -> float:
    """User + system CPU seconds from the text of ``/proc/<pid>/stat``."""
    # The command name may contain spaces and parentheses: fields start after the last ')'.
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / ticks


def status_kib(status: str, name: str) -> int | None:
    """A ``kB`` value such as ``VmRSS`` or ``VmHWM`` from the text of ``/proc/<pid>/status``."""
    for line in status.splitlines():
        if line.startswith(f"{name}:"):
            return int(line.split()[1])
    return None


def cpu_seconds(pid: int) -> float | None:
    """CPU seconds a live process used so far; None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return cpu_seconds_of(fh.read())
    except (OSError, ValueError, IndexError):
        return None


def processes_cpu(pids: Sequence[int]) -> float | None:
    """CPU seconds several live processes used so far, summed; None if none or one is gone."""
    if not pids:
        return None
    total = 0.0
    for pid in pids:
        used = cpu_seconds(pid)
        if used is None:
            return None
        total += used
    return total


def filesystem_of(path: Path, mounts: str | None = None) -> str | None:
    """The type of the filesystem ``path`` lives on (``ext4``, ``tmpfs``), from the text of
    ``/proc/self/mounts`` (read when None); None where that cannot be told."""
    if mounts is None:
        try:
            with open("/proc/self/mounts") as fh:
                mounts = fh.read()
        except OSError:
            return None
    target = path.resolve()
    best: tuple[int, str] | None = None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        # Spaces in a mount point are written as \040.
        point = Path(fields[1].replace("\\040", " "))
        if (target == point or point in target.parents) and (
            best is None or len(point.parts) >= best[0]
        ):
            best = (len(point.parts), fields[2])
    return best[1] if best else None


def memory_mib(pid: int) -> tuple[float, float] | None:
    """Current and peak resident memory of a live process, in MiB; None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            text = fh.read()
    except OSError:
        return None
    rss, peak = status_kib(text, "VmRSS"), status_kib(text, "VmHWM")
    if rss is None:
        return None
    return rss / 1024, (peak if peak is not None else rss) / 1024


@dataclass(frozen=True)
class Drift:
    """Resident memory over a soak: the level after warm-up, at the end, and the change."""

    start_mib: float
    end_mib: float
    low_mib: float
    high_mib: float
    change: float

    @property
    def flat(self) -> bool:
        return abs(self.change) <= 0.10


def _ends(values: Sequence[float]) -> tuple[float, float] | None:
    if len(values) < 2:
        return None
    tenth = max(1, len(values) // 10)
    return sum(values[:tenth]) / tenth, sum(values[-tenth:]) / tenth


def first_and_last_tenth(
    samples: Sequence[tuple[float, float]], warmup_s: float
) -> tuple[float, float] | None:
    """The mean of the first and of the last tenth of the samples taken after ``warmup_s``."""
    return _ends([value for at, value in samples if at >= warmup_s])


def rss_drift(samples: Sequence[tuple[float, float]], warmup_s: float) -> Drift | None:
    """Compare the first and last tenth of ``(seconds, MiB)`` samples taken after ``warmup_s``."""
    kept = [mib for at, mib in samples if at >= warmup_s]
    ends = _ends(kept)
    if ends is None:
        return None
    start, end = ends
    return Drift(
        start_mib=start,
        end_mib=end,
        low_mib=min(kept),
        high_mib=max(kept),
        change=(end - start) / start if start else 0.0,
    )


def steady_rate(done_at: Sequence[float], low: float = 0.1, high: float = 0.9) -> float | None:
    """Replies per second between the ``low`` and ``high`` fractions of completion."""
    if len(done_at) < 10:
        return None
    ordered = sorted(done_at)
    first, last = int(len(ordered) * low), int(len(ordered) * high) - 1
    span = ordered[last] - ordered[first]
    return (last - first) / span if span > 0 else None


@dataclass
class Row:
    """One line of the results table (one workload or reference chain)."""

    workload: str
    tickets: int
    seconds: float
    rate: float | None = None
    steady_rate: float | None = None
    p50_s: float | None = None
    p95_s: float | None = None
    p99_s: float | None = None
    max_s: float | None = None
    cpu_ms_per_ticket: float | None = None
    peak_rss_mib: float | None = None
    calls_per_ticket: float | None = None
    tokens_per_ticket: float | None = None
    order_violations: int | None = None
    lost: int | None = None
    duplicates: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in vars(self).items() if k != "extra"}
        return {**data, **self.extra}


COLUMNS = (
    ("workload", "workload", "{}"),
    ("tickets", "tickets", "{}"),
    ("rate", "tickets/s", "{:.1f}"),
    ("p50_s", "p50 s", "{:.2f}"),
    ("p95_s", "p95 s", "{:.2f}"),
    ("p99_s", "p99 s", "{:.2f}"),
    ("max_s", "max s", "{:.2f}"),
    ("cpu_ms_per_ticket", "CPU ms/ticket", "{:.2f}"),
    ("peak_rss_mib", "peak RSS MiB", "{:.0f}"),
    ("calls_per_ticket", "calls/ticket", "{:.2f}"),
    ("tokens_per_ticket", "tokens/ticket", "{:.0f}"),
    ("order_violations", "order viol.", "{}"),
    ("lost", "lost", "{}"),
    ("duplicates", "dup.", "{}"),
)


def _cell(value: Any, fmt: str) -> str:
    return "–" if value is None else fmt.format(value)


def table(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table (readable in a terminal as well)."""
    header = [title for _, title, _ in COLUMNS]
    lines = [[_cell(getattr(row, name), fmt) for name, _, fmt in COLUMNS] for row in rows]
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]

    def render(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    out = [render(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out.extend(render(line) for line in lines)
    return "\n".join(out)


def ratio(value: float | None, reference: float | None) -> float | None:
    """``value / reference``, or None when either is unknown or the reference is zero."""
    if value is None or not reference:
        return None
    return value / reference


def counts(values: Iterable[str]) -> dict[str, int]:
    """How often each value occurs, most common first."""
    return dict(Counter(values).most_common())

"""Where a ticket's time and money went, from the records' own timestamps and usage totals.

Every stage record carries the stage timings so far (``timings_ms``) and the usage so far;
every Kafka record carries the time it was produced. Reading back the topics of a run gives,
per ticket: the intake hop, the wait before each stage (the Kafka hop plus queueing behind
the session gate and the event loop), each stage's work (its model time and its own code),
the wait for the baton's changelog acknowledgement before the reply is sent, and the tokens
and dollars each stage spent (differences of the usage totals between the stages' records).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from baton_kafka.agents.stages import ORDER as BUILT_IN
from baton_kafka.agents.stages import strategy
from baton_kafka.schemas.records import Ticket
from baton_kafka.streams.bench.stats import percentile, tails

# The chain's stages after intake, in order; each reads the previous one's output.
STAGES = BUILT_IN


@dataclass
class Timeline:
    """One ticket's records, by when they were produced (epoch seconds)."""

    published: float
    intake_out: float | None = None
    # Stage name -> (produced at, usage totals dict) of its output record.
    outputs: dict[str, tuple[float, Mapping[str, Any]]] = field(default_factory=dict)
    # Stage name -> milliseconds of its work, as the last record's ``timings_ms`` says.
    work_ms: dict[str, float] = field(default_factory=dict)
    # When the baton holding the pending reply was written (the changelog record).
    pending_written: float | None = None
    end_to_end_ms: float | None = None


def ticket_breakdown(t: Timeline, model_ms_per_call: float = 0.0) -> dict[str, float]:
    """Milliseconds per part of one ticket's path; parts whose records are missing are left out.

    ``wait_before_<stage>`` is the previous record's production to the stage's start (its
    output's production minus its work and, for strategy, minus the changelog wait): the
    Kafka hop plus any queueing. ``model_<stage>`` is the nominal model time of its calls.
    """
    parts: dict[str, float] = {}
    previous = t.intake_out
    if previous is not None:
        parts["intake_hop"] = 1000 * (previous - t.published)
    for stage in STAGES:
        out = t.outputs.get(stage)
        work = t.work_ms.get(stage)
        if out is None or work is None:
            previous = None
            continue
        produced, usage = out
        calls = int(usage.get("by_stage", {}).get(stage, 0))
        changelog = 0.0
        if stage == strategy.NAME and t.pending_written is not None:
            changelog = max(0.0, 1000 * (produced - t.pending_written))
            parts["changelog_wait_strategy"] = changelog
        if previous is not None:
            parts[f"wait_before_{stage}"] = 1000 * (produced - previous) - work - changelog
        parts[f"work_{stage}"] = work
        model = min(work, calls * model_ms_per_call)
        parts[f"model_{stage}"] = model
        parts[f"own_{stage}"] = work - model
        previous = produced
    if strategy.NAME in t.outputs:
        parts["publish_to_reply"] = 1000 * (t.outputs[strategy.NAME][0] - t.published)
    if t.end_to_end_ms is not None:
        parts["end_to_end"] = t.end_to_end_ms
    return parts


def spread(breakdowns: Iterable[Mapping[str, float]]) -> dict[str, dict[str, float | None]]:
    """p50, p95, p99 and max (ms, one decimal) of every part over the tickets that have it."""
    values: dict[str, list[float]] = {}
    for parts in breakdowns:
        for name, ms in parts.items():
            values.setdefault(name, []).append(ms)
    return {name: tails(samples, 1) for name, samples in values.items()}


# The parts of a ticket's time ``phases`` keeps by burst: the waits between the hops and the
# stages' own work (``ticket_breakdown`` names them).
PHASES = (
    "intake_hop",
    "wait_before_understand",
    "own_understand",
    "wait_before_lookup",
    "wait_before_strategy",
    "own_strategy",
)


def phases(
    bursts: Sequence[Sequence[Ticket]], parts: Mapping[str, Mapping[str, float]]
) -> dict[str, list[float | None]]:
    """Each burst's p50 (ms) of each part in ``PHASES``, from each ticket's ``parts`` (by
    ticket id): where a slow burst waited, next to the others. None: no ticket of that burst
    had the part."""
    out: dict[str, list[float | None]] = {}
    for name in PHASES:
        column: list[float | None] = []
        for burst in bursts:
            values = [parts[t.ticket_id][name] for t in burst if name in parts.get(t.ticket_id, {})]
            p50 = percentile(values, 50) if values else None
            column.append(round(p50, 1) if p50 is not None else None)
        out[name] = column
    return out


USAGE_TOKENS = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")


def stage_costs(totals: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, dict[str, float]]:
    """Per stage, the calls, tokens and dollars it added: differences of consecutive usage
    totals ``(stage, usage dict)``, in the chain's order."""
    out: dict[str, dict[str, float]] = {}
    before: Mapping[str, Any] = {}
    for stage, usage in totals:
        spent = {k: float(usage.get(k, 0)) - float(before.get(k, 0)) for k in USAGE_TOKENS}
        spent["calls"] = float(usage.get("calls", 0)) - float(before.get("calls", 0))
        spent["cost_usd"] = float(usage.get("cost_usd", 0.0)) - float(before.get("cost_usd", 0.0))
        out[stage] = spent
        before = usage
    return out


def cost_per_ticket(per_ticket: Sequence[Mapping[str, Mapping[str, float]]]) -> dict[str, Any]:
    """Mean calls, tokens and dollars per ticket, per stage and in total, over ``per_ticket``
    (each the ``stage_costs`` of one ticket)."""
    n = len(per_ticket)
    if not n:
        return {}
    stages: dict[str, dict[str, float]] = {}
    for costs in per_ticket:
        for stage, spent in costs.items():
            into = stages.setdefault(stage, {})
            for k, v in spent.items():
                into[k] = into.get(k, 0.0) + v
    result: dict[str, Any] = {"tickets": n, "by_stage": {}}
    total = {"calls": 0.0, "tokens": 0.0, "output_tokens": 0.0, "cost_usd": 0.0}
    for stage, sums in stages.items():
        tokens = sum(sums.get(k, 0.0) for k in USAGE_TOKENS)
        row = {
            "calls": round(sums.get("calls", 0.0) / n, 3),
            "tokens": round(tokens / n, 1),
            "output_tokens": round(sums.get("output_tokens", 0.0) / n, 1),
            "cost_usd": round(sums.get("cost_usd", 0.0) / n, 6),
        }
        result["by_stage"][stage] = row
        for k in total:
            total[k] += row[k]
    digits = {"calls": 3, "cost_usd": 6}
    result["total"] = {k: round(v, digits.get(k, 1)) for k, v in total.items()}
    return result


def describe_costs(cost: Mapping[str, Any]) -> str:
    """One line: ``cost per ticket: $0.00700 (understand 1.0 calls 6,000 tokens $0.0030, ...)``."""
    parts = [
        f"{stage} {row['calls']:.2f} calls {row['tokens']:,.0f} tokens ${row['cost_usd']:.5f}"
        for stage, row in cost["by_stage"].items()
    ]
    total = cost["total"]
    return (
        f"cost per ticket: ${total['cost_usd']:.5f}, {total['calls']:.2f} calls, "
        f"{total['tokens']:,.0f} tokens ({'; '.join(parts)})"
    )


ORDER = (
    "intake_hop",
    *(f"{p}_{s}" for s in STAGES for p in ("wait_before", "work", "model", "own")),
    "changelog_wait_strategy",
    "end_to_end",
    "publish_to_reply",
)


def describe_breakdown(parts: Mapping[str, Mapping[str, float | None]]) -> list[str]:
    """The breakdown as lines ``  wait_before_lookup  p50 3.1  p95 9.0  p99 9.8  max 10.0
    ms``, in chain order (a figure a part lacks is shown as ``-``)."""
    names = [n for n in ORDER if n in parts] + sorted(set(parts) - set(ORDER))
    width = max((len(n) for n in names), default=0)
    return [
        f"  {name.ljust(width)}  "
        + "  ".join(f"{q} {parts[name].get(q, '-')}" for q in ("p50", "p95", "p99", "max"))
        + " ms"
        for name in names
    ]

"""What a ``baton bench`` run measured, turned into a row: delivery, latency, cost, sizes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from baton_kafka.agents.models.claude import AnthropicLLM
from baton_kafka.agents.stages import lookup, strategy, understand
from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.records import DeadLetter, Order, Reply, Ticket
from baton_kafka.streams.bench.kafka import (
    Output,
    latest_values,
    read_topic,
    read_topics,
    replicas,
    topics_named,
)
from baton_kafka.streams.bench.load import prompt_sizes
from baton_kafka.streams.bench.stats import (
    Row,
    check_delivery,
    counts,
    split_sessions,
    steady_rate,
    tails,
)
from baton_kafka.streams.kafka.topics import TopicNames
from baton_kafka.streams.runtime.worker import build_llm
from baton_kafka.streams.settings import Settings

if TYPE_CHECKING:
    from baton_kafka.agents.models.llm import LLM
    from baton_kafka.streams.bench.inproc import InProcessCost


@dataclass
class Measured:
    """What one timed phase produced."""

    started: float
    finished: float
    complete: bool
    cpu_s: float
    other_cpu: dict[str, float]
    sent_at: dict[str, float]
    # Seconds spent publishing and answering, when the phase paused between its parts.
    active_s: float | None = None


def delivery_row(
    name: str, m: Measured, outputs: list[Output], tickets: list[Ticket], sessions: int
) -> tuple[Row, dict[str, Output]]:
    """Throughput, latency, CPU and delivery checks; and each ticket's first output."""
    ids = {t.ticket_id for t in tickets}
    published: dict[str, list[str]] = {}
    for t in tickets:
        published.setdefault(t.session_id, []).append(t.ticket_id)
    outputs = [o for o in outputs if o.ticket_id in ids]
    delivery = check_delivery(published, ((o.session_id, o.ticket_id) for o in outputs))
    first: dict[str, Output] = {}
    for o in outputs:
        first.setdefault(o.ticket_id, o)
    latencies = [o.produced_at - m.sent_at[t] for t, o in first.items() if t in m.sent_at]
    done_at = [o.produced_at for o in first.values()]
    last = max(done_at, default=m.finished)
    # A phase of several bursts counts the bursts alone: its pauses are not throughput.
    seconds = m.active_s if m.active_s is not None else last - m.started
    n = len(first)
    spread = tails(latencies)
    row = Row(
        workload=name,
        tickets=len(tickets),
        seconds=round(seconds, 2),
        rate=n / seconds if seconds > 0 else None,
        steady_rate=steady_rate(done_at) if m.active_s is None else None,
        p50_s=spread["p50"],
        p95_s=spread["p95"],
        p99_s=spread["p99"],
        max_s=spread["max"],
        cpu_ms_per_ticket=1000 * m.cpu_s / n if n else None,
        order_violations=delivery.order_violations,
        lost=len(delivery.lost),
        duplicates=delivery.duplicates,
    )
    row.extra.update(
        sessions=sessions,
        sessions_out_of_order=delivery.sessions_out_of_order,
        sessions_split_over_partitions=split_sessions((o.session_id, o.partition) for o in outputs),
        lost_ids=delivery.lost[:20],
        complete=m.complete,
        other_cpu_ms_per_ticket={k: round(1000 * v / n, 2) for k, v in m.other_cpu.items()}
        if n
        else {},
    )
    return row, first


async def split_cpu(s: Settings, row: Row, tickets: list[Ticket], model: LLM | None = None) -> None:
    """Add how much of the worker's CPU the stages' code and the model account for: the
    offline rules', or ``model``'s own CPU in this process (a client's, without its server's)."""
    from baton_kafka.streams.bench.inproc import measure

    cost = await measure(s, tickets, model=model)
    n = cost.replies or 1
    stages_ms = 1000 * (cost.total_s - cost.model_s) / n
    model_ms = 1000 * cost.model_s / n
    assert row.cpu_ms_per_ticket is not None
    rest = row.cpu_ms_per_ticket - stages_ms - model_ms
    split: dict[str, Any] = {
        "model": round(model_ms, 3),
        "stages_without_model": round(stages_ms, 3),
        # The rest is the worker's whole CPU less parts timed in another run; when those cost
        # more than the whole (the machine slowed between the two, or a burst's few tickets),
        # there is no rest to report, and the excess says how far apart the two runs are.
        "transport_and_tables": round(rest, 3) if rest >= 0 else None,
        "in_process_replies": cost.replies,
        "model_is": "offline rules" if model is None else f"{model.name} client",
    }
    if rest < 0:
        split["parts_exceed_worker_ms"] = round(-rest, 3)
    if model is None:
        # Again with no text read before: the workload's few texts recur, a desk's rarely do.
        new = await measure(s, tickets, every_text_new=True)
        m = new.replies or 1
        split["every_text_new"] = {
            "model": round(1000 * new.model_s / m, 3),
            "stages_without_model": round(1000 * (new.total_s - new.model_s) / m, 3),
            **check_figures(new),
        }
    row.extra["cpu_split_ms_per_ticket"] = split
    row.extra.update(check_figures(cost))


def describe_split(name: str, worker_ms: float | None, split: dict[str, Any]) -> str:
    """One line of the report: the worker's CPU per ticket as the split's parts, or why the
    rest cannot be told."""
    parts = (
        f"{name}: worker CPU ms/ticket {worker_ms:.3f} = model "
        if worker_ms is not None
        else f"{name}: worker CPU ms/ticket = model "
    ) + (
        f"({split.get('model_is', 'offline rules')}) {split['model']} + stage code "
        f"{split['stages_without_model']} + transport/tables/scheduling "
    )
    if split.get("transport_and_tables") is not None:
        return parts + f"{split['transport_and_tables']}"
    return parts + (
        f"not told: the parts, timed in a run of their own, exceed the worker's whole CPU by "
        f"{split.get('parts_exceed_worker_ms')} ms, so the machine's speed differed between "
        f"the two runs"
    )


def check_figures(cost: InProcessCost) -> dict[str, Any]:
    """The reply audit and policy check's CPU per draft: mean in ms; p50, p95, p99, max and mean
    in µs; and the promise checks' CPU per reply in ms."""
    figures: dict[str, Any] = {}
    if cost.replies:
        figures["promise_checks_ms_per_reply"] = round(1000 * cost.promises_s / cost.replies, 3)
    if cost.drafts:
        figures["audit_and_policy_ms_per_draft"] = round(1000 * cost.checks_s / cost.drafts, 3)
    if cost.per_draft_s:
        micros = [1e6 * s for s in cost.per_draft_s]
        figures["audit_and_policy_us_per_draft"] = {
            **tails(micros, 1),
            "mean": round(sum(micros) / len(micros), 1),
            "drafts": len(micros),
        }
    return figures


def _spread(values: list[float]) -> dict[str, float | None]:
    return tails(values, 3)


def phases(
    tickets: list[Ticket],
    first: Mapping[str, Output],
    replies: Mapping[str, Reply],
    sent_at: Mapping[str, float],
) -> dict[str, Any]:
    """Where the time went: waiting before intake, inside the worker, and per turn.

    A turn runs from the later of the ticket's publication and the previous reply of its
    session to its own reply: the time the pipeline needed for that ticket alone.
    """
    before, inside, turns = [], [], []
    previous: dict[str, float] = {}
    for t in tickets:
        out, reply = first.get(t.ticket_id), replies.get(t.ticket_id)
        if out is None or reply is None or t.ticket_id not in sent_at:
            continue
        total = out.produced_at - sent_at[t.ticket_id]
        worker = reply.timings_ms.get("end_to_end")
        if worker is not None:
            inside.append(worker / 1000)
            before.append(total - worker / 1000)
        start = max(sent_at[t.ticket_id], previous.get(t.session_id, 0.0))
        turns.append(out.produced_at - start)
        previous[t.session_id] = out.produced_at
    return {
        "wait_before_intake_s": _spread(before),
        "worker_end_to_end_s": _spread(inside),
        "turn_s": _spread(turns),
    }


def records_per_ticket(
    written: Mapping[str, int], total: int, s: Settings
) -> dict[str, float] | None:
    """Records per ticket by topic; None unless every published ticket was read back."""
    if written.get(TopicNames.of(s).tickets, 0) < total:
        return None
    return {
        "total": round(sum(written.values()) / total, 2),
        **{
            t.removeprefix(f"{s.namespace}.").removeprefix(f"{s.app_id}-"): round(n / total, 2)
            for t, n in sorted(written.items())
        },
    }


async def describe(
    s: Settings,
    row: Row,
    tickets: list[Ticket],
    replies: dict[str, Reply],
    orders: list[Order],
    warm_tickets: int,
) -> None:
    """Fill in calls, tokens, statuses, dead letters and baton sizes from what was written."""
    n = len(replies) or 1
    usage = [r.usage for r in replies.values()]
    row.calls_per_ticket = sum(u.calls for u in usage) / n
    prompt = sum(u.input_tokens + u.cache_read_tokens + u.cache_write_tokens for u in usage)
    row.tokens_per_ticket = prompt / n
    row.extra["output_tokens_per_ticket"] = round(sum(u.output_tokens for u in usage) / n, 1)
    row.extra["statuses"] = counts(r.status for r in replies.values())
    wanted = {t.ticket_id for t in tickets}
    letters = [
        DeadLetter.model_validate_json(v)
        for _, v in await read_topic(s, TopicNames.of(s).dead_letters)
        if v
    ]
    row.extra["dead_letters"] = counts(d.reason for d in letters if d.ticket_id in wanted)
    topics = await topics_named(s, (f"{s.namespace}.", f"{s.app_id}-"))
    if topics:
        copies = (await replicas(s, topics)).values()
        row.extra["topic_replicas"] = {"min": min(copies, default=None), "topics": len(topics)}
    written = Counter(topic for topic, _, _ in await read_topics(s, topics))
    per_ticket = records_per_ticket(written, len(tickets) + warm_tickets, s)
    if per_ticket is not None:
        row.extra["kafka_records_per_ticket"] = per_ticket
    else:
        row.extra["kafka_records_unread"] = "the broker did not return every published ticket"
    raw = await latest_values(s, f"{s.app_id}-batons-changelog")
    batons = {}
    for value in raw.values():
        baton = Baton.model_validate_json(value)
        if baton.session_id.startswith(f"{row.workload}-"):
            batons[baton.session_id] = (baton, len(value))
    if batons:
        sizes = [size for _, size in batons.values()]
        row.extra["baton_bytes"] = {
            "mean": round(sum(sizes) / len(sizes)),
            "max": max(sizes),
            "tickets_per_session": round(
                sum(len(b.tickets) for b, _ in batons.values()) / len(batons), 1
            ),
        }
    if row.tokens_per_ticket:
        llm = build_llm(s)
        try:
            sizes_ = await prompt_sizes(
                tickets,
                replies,
                {k: b for k, (b, _) in batons.items()},
                {o.order_id: o for o in orders},
                counter=llm.counter if isinstance(llm, AnthropicLLM) else None,
                model_for=llm.model_for,
            )
        finally:
            await llm.aclose()
        row.extra["prompt"] = {
            "tokens": sizes_.method,
            "sent_tokens": sizes_.sent,
            "minimal_tokens": sizes_.minimal,
            "ratio": round(sizes_.ratio, 3) if sizes_.ratio else None,
            "context_tokens": sizes_.sent_context,
            "minimal_context_tokens": sizes_.minimal_context,
            "context_ratio": round(sizes_.context_ratio, 3) if sizes_.context_ratio else None,
            "cache_read_share": round(sizes_.cache_share, 3) if sizes_.cache_share else 0.0,
        }


async def breakdown(
    s: Settings,
    tickets: list[Ticket],
    replies: Mapping[str, Output],
    sent_at: Mapping[str, float],
    model_latency_s: float | None,
    bursts: Sequence[Sequence[Ticket]] = (),
) -> dict[str, Any]:
    """Per-ticket overhead (p50, p95, p99 and max of each part, ms) and cost per ticket by
    stage, from the stage topics, the baton changelog and the replies, read back after the run;
    with several ``bursts``, also each burst's p50 of the main parts (``phases_p50_ms``)."""
    import orjson

    from baton_kafka.streams.bench.breakdown import (
        Timeline,
        cost_per_ticket,
        phases,
        spread,
        stage_costs,
    )
    from baton_kafka.streams.bench.breakdown import ticket_breakdown as one
    from baton_kafka.streams.bench.kafka import read_records

    names = TopicNames.of(s)
    changelog = f"{s.app_id}-batons-changelog"
    by_topic = {
        names.sessions: "intake",
        names.understood: understand.NAME,
        names.matched: lookup.NAME,
    }
    wanted = {t.ticket_id: t for t in tickets if t.ticket_id in sent_at}
    lines = {tid: Timeline(published=sent_at[tid]) for tid in wanted}
    usage: dict[str, dict[str, Any]] = {tid: {} for tid in wanted}
    for topic, _, value, at in await read_records(s, [*by_topic, changelog]):
        if not value:
            continue
        data = orjson.loads(value)
        if topic == changelog:
            entry = data.get("in_flight") or {}
            line = lines.get(entry.get("ticket_id", ""))
            # The first pending reply's write: the one the reply waited for.
            if (
                line is not None
                and entry.get("stage") == strategy.NAME
                and (line.pending_written is None or at < line.pending_written)
            ):
                line.pending_written = at
            continue
        tid = data["ticket"]["ticket_id"]
        if tid not in lines:
            continue
        stage = by_topic[topic]
        if stage == "intake":
            line = lines[tid]
            line.intake_out = at if line.intake_out is None else min(line.intake_out, at)
        elif stage not in lines[tid].outputs:
            lines[tid].outputs[stage] = (at, data.get("usage") or {})
            usage[tid][stage] = data.get("usage") or {}
    for tid, out in replies.items():
        if tid not in lines:
            continue
        reply = orjson.loads(out.value)
        timings = reply.get("timings_ms") or {}
        lines[tid].outputs[strategy.NAME] = (out.produced_at, reply.get("usage") or {})
        lines[tid].work_ms = {k: float(v) for k, v in timings.items() if k != "end_to_end"}
        lines[tid].end_to_end_ms = timings.get("end_to_end")
        usage[tid][strategy.NAME] = reply.get("usage") or {}
    model_ms = 1000 * (model_latency_s or 0.0)
    by_ticket = {tid: one(line, model_ms) for tid, line in lines.items() if tid in replies}
    parts = list(by_ticket.values())
    hops = [1000 * (o.received_at - o.produced_at) for o in replies.values()]
    result: dict[str, Any] = {"overhead_ms": spread(parts)}
    if len(bursts) > 1:
        result["phases_p50_ms"] = phases(bursts, by_ticket)
    if hops:
        result["overhead_ms"]["replies_hop_to_bench_consumer"] = spread([{"x": h} for h in hops])[
            "x"
        ]
    costs = [
        stage_costs(
            [(st, u[st]) for st in (understand.NAME, lookup.NAME, strategy.NAME) if st in u]
        )
        for tid, u in usage.items()
        if strategy.NAME in u
    ]
    result["cost_per_ticket"] = cost_per_ticket(costs)
    return result

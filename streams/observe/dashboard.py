"""What the dashboard shows: a bounded window of recent stage results and the newest replies."""

from __future__ import annotations

import math
import random
import shlex
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from baton_kafka.agents.stages import ORDER
from baton_kafka.schemas.records import CallUsage, Reply
from baton_kafka.streams.observe.metrics import TIMED_OUTCOMES

STAGES = ("intake", *ORDER)
"""The built-in chain's stages as shown when the worker names none (``Recent(stages=...)``)."""
# Stage results shown per reply: short scalar fields only (a label, a level, a flag).
SHOWN_CHARS = 24
Samples = Mapping[str, Mapping[tuple[str, ...], float]]


@dataclass
class Bucket:
    """One time slice of one stage: outcome counts and a reservoir of latencies."""

    index: int
    outcomes: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    timed: int = 0


def shown_results(reply: Reply) -> dict[str, dict[str, Any]]:
    """The reply's results of the chain's own stages, their short scalar fields only."""
    return {
        stage: {
            k: v
            for k, v in result.items()
            if isinstance(v, bool | int | float) or (isinstance(v, str) and len(v) <= SHOWN_CHARS)
        }
        for stage, result in reply.stages.items()
    }


class Recent:
    """An Observer keeping the last ``window_s`` seconds per stage in ``bucket_s`` slices.

    Memory is bounded: at most ``window_s / bucket_s`` buckets per stage, each holding at most
    ``samples`` latencies (a uniform reservoir beyond that), and the newest ``tickets`` replies.
    """

    def __init__(
        self,
        window_s: int = 300,
        bucket_s: int = 5,
        samples: int = 256,
        tickets: int = 50,
        clock: Callable[[], float] = time.monotonic,
        stages: tuple[str, ...] = STAGES,
    ) -> None:
        self.order = stages
        self.window_s, self.bucket_s, self.samples = window_s, bucket_s, samples
        self.slots = max(1, window_s // bucket_s)
        self.clock = clock
        self.stages: dict[str, deque[Bucket]] = {}
        self.tickets: deque[dict[str, Any]] = deque(maxlen=tickets)
        self._random = random.Random(0)

    def _now(self) -> int:
        return int(self.clock() // self.bucket_s)

    def _bucket(self, stage: str) -> Bucket:
        now = self._now()
        buckets = self.stages.setdefault(stage, deque())
        if not buckets or buckets[-1].index != now:
            buckets.append(Bucket(now))
        while buckets[0].index <= now - self.slots:
            buckets.popleft()
        return buckets[-1]

    def record_in(self, stage: str) -> None:
        pass

    def stage_done(self, stage: str, outcome: str, seconds: float) -> None:
        b = self._bucket(stage)
        b.outcomes[outcome] += 1
        if outcome not in TIMED_OUTCOMES or seconds <= 0:
            return
        b.timed += 1
        if len(b.latencies) < self.samples:
            b.latencies.append(seconds)
        else:
            slot = self._random.randrange(b.timed)
            if slot < self.samples:
                b.latencies[slot] = seconds

    def dead_letter(self, stage: str, reason: str) -> None:
        pass

    def model_calls(self, calls: list[CallUsage]) -> None:
        pass

    def context(self, stage: str, level: str) -> None:
        pass

    def reply(self, reply: Reply, end_to_end_s: float | None) -> None:
        self.tickets.appendleft(
            {
                "ticket_id": reply.ticket_id,
                "session_id": reply.session_id,
                "status": reply.status,
                "confidence": reply.confidence,
                "order_id": reply.order_id,
                "end_to_end_ms": round(end_to_end_s * 1000) if end_to_end_s is not None else None,
                "calls": reply.usage.calls,
                "cost_usd": reply.usage.cost_usd,
                "replied_at": reply.replied_at.isoformat(timespec="seconds"),
                "trace": trace_command(reply.session_id),
                "results": shown_results(reply),
            }
        )

    def stage_window(self, stage: str) -> dict[str, Any]:
        """Counts, success rate, p50/p95 and a per-bucket series of the window for ``stage``."""
        now = self._now()
        first = now - self.slots + 1
        outcomes: Counter[str] = Counter()
        latencies: list[float] = []
        series = [0] * self.slots
        for b in self.stages.get(stage, ()):
            if b.index < first:
                continue
            outcomes.update(b.outcomes)
            latencies.extend(b.latencies)
            series[b.index - first] = sum(b.outcomes.values())
        judged = sum(outcomes[k] for k in ("ok", "degraded", "failed", "invalid"))
        latencies.sort()
        return {
            "stage": stage,
            "done": sum(outcomes.values()),
            "outcomes": dict(outcomes),
            "success_rate": outcomes["ok"] / judged if judged else None,
            "p50_ms": _ms(percentile(latencies, 50)),
            "p95_ms": _ms(percentile(latencies, 95)),
            "series": series,
        }


def trace_command(session_id: str) -> str:
    """``baton trace SESSION`` for the copy button, quoted for a POSIX shell; an id that
    starts with ``-`` comes after ``--``, so it is never read as an option."""
    end_of_options = ["--"] if session_id.startswith("-") else []
    return shlex.join(["baton", "trace", *end_of_options, session_id])


def percentile(ordered: list[float], p: float) -> float | None:
    """Nearest-rank percentile of an ascending list; None when empty."""
    if not ordered:
        return None
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def _ms(seconds: float | None) -> float | None:
    return round(seconds * 1000, 1) if seconds is not None else None


def _by(samples: Samples, name: str, position: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for labels, value in samples.get(name, {}).items():
        key = labels[position] if labels else ""
        out[key] = out.get(key, 0.0) + value
    return out


def _total(samples: Samples, name: str) -> float:
    return sum(samples.get(name, {}).values())


# What a ticket row names: a session id is a bearer secret for a guest's session.
IDS = ("ticket_id", "session_id", "order_id", "trace")


def summary(samples: Samples, recent: Recent, ids: bool = True) -> dict[str, Any]:
    """The dashboard's JSON: totals read from the metrics registry, plus the recent window.

    Without ``ids`` (not the desk's token: metrics readers, or anyone on the machine) the
    ticket rows name no ticket, session or order.
    """
    tickets = [t if ids else {k: v for k, v in t.items() if k not in IDS} for t in recent.tickets]
    stages = list(recent.order) + sorted(set(recent.stages) - set(recent.order))
    return {
        "window_s": recent.window_s,
        "bucket_s": recent.bucket_s,
        "stages": [recent.stage_window(s) for s in stages],
        "totals": {
            "records_in": _by(samples, "baton_records_in_total", 0),
            "replies": _by(samples, "baton_replies_total", 0),
            "dead_letters": _by(samples, "baton_dead_letters_total", 1),
            "model_calls": _total(samples, "baton_model_calls_total"),
            "reasks": _total(samples, "baton_model_reasks_total"),
            "retries": _by(samples, "baton_model_retries_total", 1),
            "tokens": _by(samples, "baton_model_tokens_total", 2),
            "cost_usd": round(_total(samples, "baton_model_cost_usd_total"), 6),
            "context": _by(samples, "baton_context_recoveries_total", 1),
            "in_flight": _by(samples, "baton_stage_in_flight", 0),
            "lag": _total(samples, "baton_consumer_lag"),
            "tables_recovered": _total(samples, "baton_tables_recovered"),
            "open_by_age": _by(samples, "baton_open_tickets", 0),
            "past_deadline": _total(samples, "baton_tickets_past_deadline"),
            "holding": _total(samples, "baton_holding_replies_total"),
        },
        "tickets": tickets,
        "ids_shown": ids,
    }

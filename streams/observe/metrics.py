"""Prometheus metrics of one worker: pipeline events, live Faust state and the process itself."""

from __future__ import annotations

import contextlib
import logging
import weakref
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from baton_kafka.agents.models.ratelimits import Budget
from baton_kafka.schemas.records import CallUsage, Reply
from baton_kafka.streams.observe.tracing import current_span_ids

log = logging.getLogger("baton.metrics")

# Registries already given the process collectors: a plain registry does not refuse a second
# one, it would expose every process series twice (several observers may share a registry).
_MEASURED: weakref.WeakSet[CollectorRegistry] = weakref.WeakSet()

STAGE_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120)
END_TO_END_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600)
# Outcomes that may carry a measured duration; 0 means not measured (intake, redelivered copies).
TIMED_OUTCOMES = frozenset({"ok", "degraded"})
TOKEN_KINDS = ("input", "output", "cache_read", "cache_write")


def exemplar() -> dict[str, str] | None:
    """The current trace as an OpenMetrics exemplar: a slow observation names its trace."""
    ids = current_span_ids()
    return None if ids is None else {"trace_id": ids[0], "span_id": ids[1]}


def add_process_metrics(registry: CollectorRegistry) -> None:
    """Add the process's memory, CPU, file descriptors, start time and Python version to
    ``registry``, once: a registry that has them already (the global one does) is left as is.
    """
    if registry in _MEASURED:
        return
    _MEASURED.add(registry)
    for collector in (ProcessCollector(registry=None), PlatformCollector(registry=None)):
        # ValueError is a duplicated timeseries, found by a registry that describes its
        # collectors (the global one): prometheus_client registered the same ones at import.
        with contextlib.suppress(ValueError):
            registry.register(collector)


class InFlight(Protocol):
    """What the in-flight gauge reads: a ``SessionScheduler`` has it."""

    in_flight: int


class PrometheusObserver:
    """Counts pipeline events into its own registry; never raises into the pipeline."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        # Labelled children by (metric, label values): see ``_child``.
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        add_process_metrics(self.registry)
        r = self.registry
        self.records_in = Counter(
            "baton_records_in", "Records a stage received.", ["stage"], registry=r
        )
        self.outputs = Counter(
            "baton_stage_outputs",
            "Stage results by outcome: ok, degraded, reused (a redelivered copy), invalid,"
            " refused, throttled (a refusal past its sender's budget), failed, flooded (shed: the"
            " session's queue was full).",
            ["stage", "outcome"],
            registry=r,
        )
        self.latency = Histogram(
            "baton_stage_latency_seconds",
            "Time a stage spent on a record (ok and degraded outcomes).",
            ["stage"],
            buckets=STAGE_BUCKETS,
            registry=r,
        )
        self.dead_letters = Counter(
            "baton_dead_letters", "Dead letters written.", ["stage", "reason"], registry=r
        )
        self.replies = Counter("baton_replies", "Replies sent.", ["status"], registry=r)
        self.end_to_end = Histogram(
            "baton_end_to_end_latency_seconds",
            "From a ticket's intake to its reply.",
            buckets=END_TO_END_BUCKETS,
            registry=r,
        )
        self.model_calls_total = Counter(
            "baton_model_calls",
            "Model calls that returned an answer (valid or not).",
            ["stage", "model"],
            registry=r,
        )
        self.reasks = Counter(
            "baton_model_reasks",
            "Calls beyond the first for one stage result: re-asks after invalid or cut-off output.",
            ["stage"],
            registry=r,
        )
        self.retries = Counter(
            "baton_model_retries",
            "Model requests repeated after a transient failure: timeout, overloaded (429/529) "
            "or unavailable (other 5xx, connection).",
            ["model", "cause"],
            registry=r,
        )
        self.tokens = Counter(
            "baton_model_tokens", "Model tokens.", ["stage", "model", "kind"], registry=r
        )
        self.ratelimit_remaining = Gauge(
            "baton_model_ratelimit_remaining",
            "What the API's last response said is left of each rate limit: requests, tokens,"
            " input-tokens, output-tokens.",
            ["model", "kind"],
            registry=r,
        )
        self.cost = Counter(
            "baton_model_cost_usd", "Model cost in USD.", ["stage", "model"], registry=r
        )
        self.contexts = Counter(
            "baton_context_recoveries",
            "Context health per stage record: full, partial, minimal or broken.",
            ["stage", "level"],
            registry=r,
        )
        self.changelog_records = Counter(
            "baton_changelog_records_read",
            "Changelog records this worker applied to its tables from the changelog topics "
            "(recovery after a start or rebalance, standby replicas, the global customer "
            "index), by table: a RocksDB store reads only what it lacks.",
            ["table"],
            registry=r,
        )

    def _child(self, metric: Any, *values: str) -> Any:
        """``metric.labels(*values)``, looked up once: the pipeline's label values are few."""
        key = (id(metric), values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return child

    def record_in(self, stage: str) -> None:
        self._child(self.records_in, stage).inc()

    def stage_done(self, stage: str, outcome: str, seconds: float) -> None:
        self._child(self.outputs, stage, outcome).inc()
        if outcome in TIMED_OUTCOMES and seconds > 0:
            self._child(self.latency, stage).observe(seconds, exemplar())

    def changelog_read(self, table: str) -> None:
        """One changelog record applied to ``table`` (its ``on_changelog_event`` hook)."""
        self.changelog_records.labels(table).inc()

    def dead_letter(self, stage: str, reason: str) -> None:
        self.dead_letters.labels(stage, reason).inc()

    def model_calls(self, calls: list[CallUsage]) -> None:
        for call in calls:
            self._child(self.model_calls_total, call.stage, call.model).inc()
            counts = (
                call.input_tokens,
                call.output_tokens,
                call.cache_read_tokens,
                call.cache_write_tokens,
            )
            for kind, n in zip(TOKEN_KINDS, counts, strict=True):
                if n:
                    self._child(self.tokens, call.stage, call.model, kind).inc(n)
            if call.cost_usd:
                self._child(self.cost, call.stage, call.model).inc(call.cost_usd)
        if len(calls) > 1:
            self.reasks.labels(calls[0].stage).inc(len(calls) - 1)

    def model_retry(self, model: str, cause: str) -> None:
        """A failed request is about to be repeated (the ``AnthropicLLM.on_retry`` hook)."""
        self.retries.labels(model, cause).inc()

    def model_budgets(self, model: str, budgets: Mapping[str, Budget]) -> None:
        """A response reported the API's rate limits (the ``RateLimitPacer.on_budgets`` hook)."""
        for kind, budget in budgets.items():
            self.ratelimit_remaining.labels(model, kind).set(budget.remaining)

    def context(self, stage: str, level: str) -> None:
        self._child(self.contexts, stage, level).inc()

    def reply(self, reply: Reply, end_to_end_s: float | None) -> None:
        self._child(self.replies, reply.status).inc()
        if end_to_end_s is not None:
            self.end_to_end.observe(end_to_end_s, exemplar())

    def watch_llm(self, llm: object) -> None:
        """Receive the model's retry and rate-limit reports, if it offers them."""
        if hasattr(llm, "on_retry"):
            llm.on_retry = self.model_retry
        pacer = getattr(llm, "pacer", None)
        if pacer is not None and hasattr(pacer, "on_budgets"):
            pacer.on_budgets = self.model_budgets

    def watch(
        self,
        app: Any,
        schedulers: Mapping[str, InFlight],
        source_topics: Iterable[str],
        sessions_open: Callable[[], int] | None = None,
    ) -> None:
        """Also expose live state read at scrape time: in-flight records, assignment, recovery."""
        self.registry.register(WorkerState(app, schedulers, source_topics, sessions_open))

    def watch_lag(self, sampler: Collector) -> None:
        """Also expose the consumer lag a ``streams.observe.lag.LagSampler`` last sampled."""
        self.registry.register(sampler)

    def values(self) -> dict[str, dict[tuple[str, ...], float]]:
        """Every sample of the registry as ``{name: {label values: value}}`` (for the dashboard)."""
        out: dict[str, dict[tuple[str, ...], float]] = defaultdict(dict)
        for metric in self.registry.collect():
            for s in metric.samples:
                out[s.name][tuple(s.labels.values())] = s.value
        return out


class WorkerState(Collector):
    """Gauges computed on each scrape from the schedulers and the Faust app."""

    def __init__(
        self,
        app: Any,
        schedulers: Mapping[str, InFlight],
        source_topics: Iterable[str],
        sessions_open: Callable[[], int] | None = None,
    ) -> None:
        self.app = app
        self.schedulers = schedulers
        self.source_topics = frozenset(source_topics)
        self.sessions_open = sessions_open

    def describe(self) -> Iterable[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        in_flight = GaugeMetricFamily(
            "baton_stage_in_flight",
            "Records a stage is processing right now (mostly waiting for the model).",
            labels=["stage"],
        )
        for stage, scheduler in self.schedulers.items():
            in_flight.add_metric([stage], scheduler.in_flight)
        yield in_flight
        if self.sessions_open is not None:
            yield GaugeMetricFamily(
                "baton_sessions_in_pipeline",
                "Sessions with a ticket between intake and reply on this worker.",
                value=self.sessions_open(),
            )
        try:
            yield from self._kafka()
            yield from recovery_metrics(self.app)
        except Exception:
            # A scrape during start-up or a rebalance must not fail the whole exposition.
            log.debug("worker state unavailable", exc_info=True)

    def _kafka(self) -> Iterator[Metric]:
        recovery = self.app.tables.recovery
        if not recovery.completed.is_set():
            return
        assigned = GaugeMetricFamily(
            "baton_partitions_assigned", "Partitions this worker consumes.", labels=["topic"]
        )
        per_topic: dict[str, int] = defaultdict(int)
        for tp in self.app.consumer.assignment():
            if tp.topic in self.source_topics:
                per_topic[tp.topic] += 1
        for topic, n in sorted(per_topic.items()):
            assigned.add_metric([topic], n)
        yield assigned


def recovery_metrics(app: Any) -> Iterator[Metric]:
    """Table recovery as Faust tracks it: done or not, changelog records left, rebalances."""
    recovery = app.tables.recovery
    recovered = recovery.completed.is_set() and not recovery.in_recovery
    yield GaugeMetricFamily(
        "baton_tables_recovered",
        "1 once the tables were restored from their changelogs after the last rebalance.",
        value=1 if recovered else 0,
    )
    remaining = GaugeMetricFamily(
        "baton_table_recovery_remaining",
        "Changelog records left to restore, by table and partition role.",
        labels=["table", "role"],
    )
    for role, counts in (
        ("active", recovery.active_remaining()),
        ("standby", recovery.standby_remaining()),
    ):
        per_table: dict[str, int] = defaultdict(int)
        for tp, n in counts.items():
            table = recovery.tp_to_table.get(tp)
            per_table[table.name if table is not None else tp.topic] += max(0, n)
        for name, n in sorted(per_table.items()):
            remaining.add_metric([name, role], n)
    yield remaining
    yield GaugeMetricFamily(
        "baton_rebalancing", "1 while the consumer group rebalances.", value=int(app.rebalancing)
    )
    rebalances = CounterMetricFamily("baton_rebalances", "Rebalances this worker went through.")
    rebalances.add_metric([], app.rebalancing_count)
    yield rebalances

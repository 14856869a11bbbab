"""The Faust app: topics, changelog-backed tables, one agent per stage; nothing at import."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import faust

from baton_kafka.agents.models.llm import LLM
from baton_kafka.agents.orders import OrderSource
from baton_kafka.streams.kafka.faust_auth import broker_credentials
from baton_kafka.streams.kafka.faust_consumer import seeking_consumer
from baton_kafka.streams.kafka.faust_producer import IdempotentProducer, configured_producer
from baton_kafka.streams.kafka.registry import register_contract
from baton_kafka.streams.kafka.topics import ACTION_TABLE, TopicNames
from baton_kafka.streams.observe import web
from baton_kafka.streams.observe.dashboard import Recent
from baton_kafka.streams.observe.lag import LagSampler
from baton_kafka.streams.observe.logs import LoggingObserver
from baton_kafka.streams.observe.metrics import PrometheusObserver
from baton_kafka.streams.observe.observer import CountingObserver, Fanout, Guarded, Observer
from baton_kafka.streams.observe.tracing import TracingObserver
from baton_kafka.streams.runtime.answers.clocks import ClockGauges
from baton_kafka.streams.runtime.chain import BUILTIN, Chain
from baton_kafka.streams.runtime.faust_app.faust_agents import (
    Wiring,
    decide_agent,
    expiry_timer,
    index_agent,
    intake_agent,
    lag_task,
    source_of,
    stage_agent,
)
from baton_kafka.streams.runtime.faust_app.faust_io import FaustSessionTable, FaustSink, FaustState
from baton_kafka.streams.runtime.faust_app.table_store import store_settings
from baton_kafka.streams.runtime.own_stages import chain_for
from baton_kafka.streams.runtime.people.escalations import EscalationGauges
from baton_kafka.streams.runtime.pipeline import Pipeline
from baton_kafka.streams.runtime.session.bursts import Bursts
from baton_kafka.streams.runtime.session.scheduler import SessionGate, SessionScheduler
from baton_kafka.streams.runtime.stage_context import STAGE_EVENTS
from baton_kafka.streams.runtime.stages import Stage
from baton_kafka.streams.settings import Settings, SettingsError

log = logging.getLogger("baton.app")


def faust_settings(settings: Settings) -> dict[str, Any]:
    """Faust configuration; the embedded broker gets fast timeouts and one record per batch."""
    conf: dict[str, Any] = {
        "broker": settings.broker,
        "broker_credentials": broker_credentials(settings),
        "processing_guarantee": settings.processing_guarantee,
        "topic_partitions": settings.partitions,
        "topic_replication_factor": settings.replication_factor,
        "consumer_auto_offset_reset": "earliest",
        "key_serializer": "raw",
        "value_serializer": "raw",
        "web_enabled": True,
        **web.FAUST_VIEWS_OFF,
        "web_port": settings.web_port,
        "web_bind": settings.web_bind,
        "web_host": settings.web_bind,
        "datadir": str(settings.data_dir / "faust" / settings.app_id),
        **store_settings(settings),
        "autodiscover": False,
        "producer_acks": -1 if settings.producer_acks == "all" else int(settings.producer_acks),
        "stream_wait_empty": True,
    }
    if settings.embedded_broker:
        # Tansu reports end offsets per batch, so multi-record batches hide a table's last
        # updates from changelog recovery; see docs/operations.md, "Brokers".
        conf.update(
            broker_session_timeout=3,
            broker_heartbeat_interval=0.5,
            broker_rebalance_timeout=6,
            producer_max_batch_size=1,
        )
    else:
        # Faust's defaults (60 s sessions and rebalances) leave a dead worker's partitions
        # unread for about 90 s; 10 s is above Kafka's floor for sessions (6 s by default).
        conf.update(
            broker_session_timeout=10,
            broker_heartbeat_interval=1,
            broker_rebalance_timeout=20,
            # No linger: a stage awaits its forwards and the baton before a reply, so each
            # would wait it out; under load records batch anyway while a request is in
            # flight, and a worker measured less CPU per ticket without it (docs/bench.md).
            producer_linger=0.0,
        )
    return conf


@dataclass
class Runtime:
    """A configured app and the pipeline its agents run."""

    app: faust.App
    pipeline: Pipeline
    sink: FaustSink
    schedulers: dict[str, SessionScheduler]


def baton_observers(metrics: PrometheusObserver, recent: Recent) -> tuple[Observer, ...]:
    """baton's own observers of a worker: counts, metrics, logs, the dashboard, traces."""
    return (CountingObserver(), metrics, LoggingObserver(), recent, TracingObserver())


def stage_schedulers(settings: Settings, chain: Chain | None = None) -> dict[str, SessionScheduler]:
    """One scheduler per stage; the first stage, where tickets enter, caps each session's queue.

    Later stages see at most one ticket per session at a time (the session gate), and a ticket
    past the first stage must get its reply, so only the first stage sheds a flood.
    """
    return {
        s.name: SessionScheduler(
            s.name,
            max_running=settings.max_in_flight,
            max_buffered=settings.max_buffered,
            max_queued_per_key=settings.max_queued_per_session if s.opens_session else None,
        )
        for s in chain or BUILTIN
    }


def close_on_shutdown(app: faust.App, orders: OrderSource) -> None:
    """Close ``orders`` when ``app`` shuts down (after its agents have stopped)."""

    async def close(sender: Any, /, *_: Any, signal: Any, **__: Any) -> None:
        await orders.close()

    app.on_before_shutdown.connect(close, weak=False)


def acting(
    app: faust.App, settings: Settings, pipeline: Pipeline, sink: FaustSink, owns: Any
) -> None:
    """With ``BATON_EXECUTOR`` set: the agent that carries the actions out, its ledger table,
    and a sweep of the unfinished ones (a restart or a rebalance left them)."""
    from baton_kafka.streams.actions.caps import Cap, DailyCaps
    from baton_kafka.streams.actions.choose import open_executor
    from baton_kafka.streams.actions.closing import Closer
    from baton_kafka.streams.actions.follow_up import Noting, Teller
    from baton_kafka.streams.actions.guard import Guard
    from baton_kafka.streams.actions.ledger import Ledger
    from baton_kafka.streams.actions.runner import Runner

    try:
        executor = open_executor(settings.executor)
    except ValueError as exc:
        raise SettingsError(str(exc)) from None
    if executor is None:
        return
    table = FaustSessionTable(app, ACTION_TABLE, settings.partitions)
    names = pipeline.topics
    teller = Teller(
        pipeline.out,
        names.replies,
        names.handoffs,
        pipeline.batons,
        pipeline.policy.languages[0],
        settings.handoff_deadline_s,
    )
    caps = DailyCaps(
        Cap(settings.cap_shop_money, settings.cap_shop_actions),
        Cap(settings.cap_customer_money, settings.cap_customer_actions),
        settings.partitions,
    )
    ledger = Ledger(table)
    runner = Runner(
        executor,
        ledger,
        pipeline.batons,
        pipeline.dead_letter,
        pipeline.store,
        tell=teller,
        note=Noting(pipeline.batons, pipeline.gate, pipeline.redelivery.unfinished),
        guard=Guard(pipeline.signer, names.decisions, caps),
    )
    # People's done and failed decisions close the actions waiting for them in this ledger.
    pipeline.people.closer = Closer(ledger, runner.told)

    def alone() -> bool:
        """This worker owns every session's partition (no other worker holds one)."""
        actives = app.assignor.assigned_actives()
        owned = {tp.partition for tp in actives if tp.topic == names.sessions}
        return len(owned) >= settings.partitions

    if settings.action_webhook_secret:
        from baton_kafka.streams.actions import webhook

        try:
            webhook.route(app, runner, settings.action_webhook_secret, owns, alone)
        except ValueError as exc:
            raise SettingsError(str(exc)) from None

    @app.agent(sink.topics[names.actions], name="act")
    async def act(stream: Any) -> None:
        async for event in stream.events():
            await runner.handle(event.value, source_of(event))

    @app.timer(interval=settings.expiry_interval_s)
    async def reconcile() -> None:
        tried = await runner.sweep(owns)
        if tried:
            log.info("reconciled %d unfinished actions", tried)

    async def close(sender: Any, /, *_: Any, signal: Any, **__: Any) -> None:
        await executor.close()

    app.on_before_shutdown.connect(close, weak=False)


def create_app(
    settings: Settings,
    *,
    llm: LLM | None = None,
    orders: OrderSource | None = None,
    stages: Chain | Iterable[Stage[Any]] | None = None,
    observers: Iterable[Observer] = (),
) -> Runtime:
    """Build the Faust app with its topics, tables and agents for ``settings``.

    ``llm`` and ``orders`` replace the model and the order source the settings name (a source
    given is the caller's to close); ``stages`` is the chain (a ``Chain``, or stages of the
    shop's own, each with its ``after``, inserted into the built-in one; None: the one
    ``BATON_STAGES`` names); ``observers`` hear every event besides baton's own (metrics,
    logs, traces, the dashboard).
    """
    from baton_kafka.streams.runtime.faust_app.llms import build_llm
    from baton_kafka.streams.runtime.faust_app.orders import build_source

    chain = chain_for(settings, stages)
    if llm is None:
        llm = build_llm(settings)
    app = faust.App(settings.app_id, **faust_settings(settings))
    if orders is None:
        orders = build_source(settings)
        close_on_shutdown(app, orders)
    names = TopicNames.of(settings, chain)
    sources = frozenset({names.tickets, *(names.role(chain.source_role(s)) for s in chain)})
    clients(app, settings, sources | {names.memory_index, names.decisions, names.actions})
    sink = FaustSink(app, names, settings.partitions, settings)
    gate = SessionGate(settings.turn_timeout_s)
    schedulers = stage_schedulers(settings, chain)
    metrics = PrometheusObserver()
    metrics.watch(app, schedulers, names.all(), sessions_open=lambda: len(gate))
    metrics.watch_llm(llm)
    lag = lag_sampler(app, settings, sources | {names.memory_index})
    metrics.watch_lag(lag)
    recent = Recent(stages=("intake", *chain.names))
    # Registered before any record is written: the outputs are framed with these ids.
    schema_ids = register_contract(settings) if settings.schema_registry_url else {}
    pipeline = Pipeline(
        settings=settings,
        llm=llm,
        store=orders,
        sink=sink,
        state=FaustState(app, settings.partitions, on_read=metrics.changelog_read),
        gate=gate,
        observer=Fanout(*baton_observers(metrics, recent), *(Guarded(o) for o in observers)),
        schema_ids=schema_ids,
        chain=chain,
        bursts=Bursts(settings.coalesce_window_s) if settings.coalesce_window_s > 0 else None,
    )
    metrics.registry.register(ClockGauges(pipeline.clocks))  # open tickets by age, past due
    metrics.registry.register(EscalationGauges(pipeline.escalations))
    metrics.registry.register(STAGE_EVENTS)  # what stages count through their context

    async def stop_clocks(sender: Any, /, *_: Any, signal: Any, **__: Any) -> None:
        pipeline.clocks.close()

    app.on_before_shutdown.connect(stop_clocks, weak=False)
    web.register(app, settings, metrics, recent)
    wired = Wiring(app=app, settings=settings, pipeline=pipeline, sink=sink)
    if settings.relay and settings.processing_guarantee == "at_least_once":
        pipeline.relay.owns = wired.reads
    index_agent(wired)
    pipeline.escalations.owned = wired.owns
    expiry_timer(wired)
    lag_task(wired, lag)
    decide_agent(wired)
    intake_agent(wired)
    for stage in chain:
        stage_agent(wired, stage, schedulers[stage.name])
    acting(app, settings, pipeline, sink, wired.owns)
    return Runtime(app=app, pipeline=pipeline, sink=sink, schedulers=schedulers)


def clients(app: faust.App, settings: Settings, inputs: frozenset[str]) -> None:
    """The app's Kafka consumer (seeking, on ``inputs``) and producer classes."""
    app.transport.Consumer = seeking_consumer(  # type: ignore[misc]
        inputs,
        # The embedded broker answers a fetch only when its wait is up, even if records arrived.
        fetch_wait_ms=settings.embedded_fetch_wait_ms if settings.embedded_broker else None,
        options=settings.kafka_client.consumer,
    )
    # Idempotence needs acks=all; the embedded broker answers InitProducerId with an error.
    idempotent = not settings.embedded_broker and settings.producer_acks == "all"
    if settings.kafka_client.producer:
        app.transport.Producer = configured_producer(  # type: ignore[misc]
            settings.kafka_client.producer, idempotent=idempotent
        )
    elif idempotent:
        app.transport.Producer = IdempotentProducer  # type: ignore[misc]


def lag_sampler(app: faust.App, settings: Settings, inputs: frozenset[str]) -> LagSampler:
    """The sampler of the consumer's lag on the ``inputs`` partitions it is assigned."""
    return LagSampler(
        settings,
        settings.app_id,
        lambda: [tp for tp in app.consumer.assignment() if tp.topic in inputs],
        # Public on Faust's consumer: the high-water mark of the latest fetch response.
        highwater=lambda tp: app.consumer.highwater(tp),
    )

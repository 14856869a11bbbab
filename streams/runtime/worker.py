"""``baton worker``: check the broker, build the model and order source, run the Faust worker."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Iterable
from typing import Any

from baton_kafka.agents.models.capabilities import capabilities_of, describe
from baton_kafka.agents.models.llm import LLM
from baton_kafka.agents.orders import OrderSource
from baton_kafka.streams.kafka.connect import TANSU_CLUSTER_ID, probe_broker
from baton_kafka.streams.runtime import heap
from baton_kafka.streams.runtime.faust_app.llms import (
    build_llm,
    client_options,
    limits_line,
    model_options,
)
from baton_kafka.streams.runtime.faust_app.orders import build_source, check_source
from baton_kafka.streams.settings import Settings, SettingsError

log = logging.getLogger("baton.worker")

# Where they were first: callers import them from here too.
__all__ = ["build_llm", "client_options", "model_options", "run"]


def use_event_loop(settings: Settings) -> str:
    """Install the configured event loop for the worker; returns the one in use.

    uvloop cut the worker's CPU per ticket by about 13 % with hundreds of model calls in
    flight; where it cannot be imported the standard loop is used.
    """
    if settings.event_loop == "uvloop":
        try:
            import uvloop
        except ImportError:
            log.warning("uvloop is not installed: using the standard asyncio event loop")
        else:
            asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
            asyncio.set_event_loop(asyncio.new_event_loop())
            return "uvloop"
    return "asyncio"


def check_guarantee(settings: Settings) -> None:
    """Refuse ``exactly_once`` on the embedded broker, whose missing transactions kill Faust."""
    if settings.processing_guarantee == "exactly_once" and settings.embedded_broker:
        raise SettingsError(
            "BATON_PROCESSING_GUARANTEE=exactly_once needs a broker with transactions; "
            "the embedded broker has none (use at_least_once, or Apache Kafka)"
        )


def check_signing(settings: Settings) -> None:
    """Refuse to run on Apache Kafka without signing keys, unless ``BATON_ALLOW_UNSIGNED``."""
    if not settings.signing_keys and not settings.embedded_broker and not settings.allow_unsigned:
        raise SettingsError(
            "BATON_SIGNING_KEYS is not set: on Apache Kafka a worker signs the records between "
            "its stages (generate a key: k1:$(openssl rand -hex 32)); set BATON_ALLOW_UNSIGNED=1 "
            "to run unsigned anyway"
        )


def uncached(settings: Settings) -> list[str]:
    """A line with the numbers for each stage whose static prompt its model will not cache."""
    from baton_kafka.agents.cache_fit import STAGES, cache_fits
    from baton_kafka.agents.policy import load as load_policy

    if settings.llm == "offline":
        return []
    models = {stage: settings.model_for(stage) for stage in STAGES}
    fits = cache_fits(load_policy(settings.policy_file), models, settings.cache_min_tokens)
    return [fit.line() for fit in fits if not fit.cached]


def run(
    settings: Settings,
    *,
    llm: LLM | None = None,
    orders: OrderSource | None = None,
    stages: Any = None,
    observers: Iterable[Any] = (),
) -> None:
    """Run one worker in the foreground until interrupted; the arguments are
    ``create_app``'s (``llm`` and ``orders`` replace what the settings name, ``stages`` is the
    chain or stages of the shop's own, replacing ``BATON_STAGES``'s, ``observers`` hear every
    event)."""
    import faust

    from baton_kafka.streams.kafka.topics import ensure_topics
    from baton_kafka.streams.observe.logs import faust_loglevel, lean_records, logging_config
    from baton_kafka.streams.runtime.faust_app.app import close_on_shutdown, create_app
    from baton_kafka.streams.runtime.faust_app.table_store import check_store, lock_table_dir
    from baton_kafka.streams.runtime.own_stages import chain_for

    check_store(settings)
    # The stages of the shop's own are imported first: one that cannot be is one line.
    chain = chain_for(settings, stages)
    # A source set up wrongly is one line before anything else starts.
    built = orders is None
    if orders is None:
        orders = build_source(settings)
    warning = check_source(orders)
    if warning:
        print(f"baton: {warning}", file=sys.stderr, flush=True)
    for short in uncached(settings):
        print(f"baton: {short}", file=sys.stderr, flush=True)
    # A model that cannot be built is a settings error: said before the broker is reached.
    if llm is None:
        llm = build_llm(settings)
    cluster = asyncio.run(probe_broker(settings))
    asyncio.run(ensure_topics(settings, chain))
    logging.getLogger("aiokafka").setLevel(logging.NOTSET)
    if cluster == TANSU_CLUSTER_ID and not settings.embedded_broker:
        settings = settings.with_(embedded_broker=True)
    check_guarantee(settings)
    if settings.processing_guarantee == "exactly_once":
        print(
            "baton: exactly_once puts changelogs and offsets in Kafka transactions, but Faust "
            "sends replies and dead letters outside them: a crash can repeat a reply "
            "(docs/guarantees.md); at_least_once is what baton guarantees one reply with.",
            file=sys.stderr,
            flush=True,
        )
    check_signing(settings)
    if not settings.signing_keys and not settings.embedded_broker:
        print(
            "baton: BATON_SIGNING_KEYS is not set, so records between stages are not signed: "
            "anyone who can write an internal topic can steer a reply (docs/security.md).",
            file=sys.stderr,
            flush=True,
        )
    if settings.llm == "offline":
        print(
            "baton: using the OFFLINE rule-based model (no ANTHROPIC_API_KEY set); "
            "replies are deterministic templates, not Claude.",
            file=sys.stderr,
            flush=True,
        )
    else:
        print(
            f"baton: model provider {settings.llm} ({describe(capabilities_of(llm))}); "
            f"{limits_line(settings)}",
            file=sys.stderr,
            flush=True,
        )
    (settings.data_dir / "faust").mkdir(parents=True, exist_ok=True)
    # Held until the worker exits: no other worker may open this worker's RocksDB files.
    table_dir_lock = lock_table_dir(settings)
    try:
        use_event_loop(settings)
        worker = create_app(
            settings, llm=llm, orders=orders, stages=chain, observers=tuple(observers)
        )
        if built:
            close_on_shutdown(worker.app, orders)
        heap.settle()
        lean_records()
        faust.Worker(
            worker.app,
            loglevel=faust_loglevel(settings),
            logging_config=logging_config(settings),
            quiet=True,
            redirect_stdouts=False,
        ).execute_from_commandline()
    finally:
        if table_dir_lock is not None:
            table_dir_lock.close()

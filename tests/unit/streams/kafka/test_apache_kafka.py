"""ApacheKafka's checks and configuration, without starting a JVM."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from baton_kafka.streams.jit import DEFAULT_JIT, jit_flags
from baton_kafka.streams.kafka import apache
from baton_kafka.streams.kafka.apache import ApacheKafka
from baton_kafka.streams.kafka.embedded import BrokerError
from baton_kafka.streams.kafka.jars import ApacheKafkaError, KafkaUnavailable, resolve_jars
from baton_kafka.streams.kafka.jvm import Java, find_java, java_major
from baton_kafka.streams.kafka.kraft import (
    EPHEMERAL_PORTS,
    LOWEST_PORT,
    consecutive_free_ports,
    ephemeral_ports,
    random_id,
)


def test_java_versions_old_and_new_are_read() -> None:
    assert java_major('openjdk version "17.0.15" 2025-04-15') == 17
    assert java_major('openjdk version "25" 2025-09-16') == 25
    assert java_major('java version "1.8.0_392"') == 8
    assert java_major("no version here") is None


def test_a_missing_java_says_what_to_install_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(KafkaUnavailable) as info:
        find_java(str(tmp_path / "no-java"))
    message = str(info.value)
    assert "\n" not in message and "install" in message and "Java 17" in message
    assert isinstance(info.value, BrokerError), "callers of EmbeddedBroker catch BrokerError"


def test_an_old_java_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "java"
    fake.write_text("#!/bin/sh\necho 'java version \"1.8.0_392\"' >&2\n")
    fake.chmod(0o755)
    with pytest.raises(KafkaUnavailable, match="is Java 8 but Kafka 4 needs 17"):
        find_java(str(fake))


def test_a_missing_maven_says_what_to_install_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(KafkaUnavailable) as info:
        resolve_jars("4.3.1", tmp_path / "libs")
    assert "\n" not in str(info.value) and "mvn not found" in str(info.value)


def test_jars_already_there_are_used_without_maven(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "kafka_2.13-4.3.1.jar").touch()
    assert resolve_jars("4.3.1", tmp_path / "dist") == tmp_path / "dist"
    (tmp_path / "cached").mkdir()
    (tmp_path / "cached" / ".complete").touch()
    assert resolve_jars("4.3.1", tmp_path / "cached") == tmp_path / "cached"


def test_ids_are_kafka_uuids() -> None:
    ids = {random_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(len(i) == 22 and "=" not in i and "+" not in i and "/" not in i for i in ids)


def test_no_id_reads_as_a_command_line_option() -> None:
    # One raw id in 64 starts with "-"; 2,000 draws would show it many times over.
    assert not any(random_id().startswith("-") for _ in range(2000))


def test_one_node_urls_and_replication(tmp_path: Path) -> None:
    kafka = ApacheKafka(port=41000, data_dir=tmp_path)
    assert kafka.url == "kafka://127.0.0.1:41000"
    assert kafka.bootstrap == "127.0.0.1:41000"
    assert kafka.controller_ports == [41001]
    conf = kafka.config(kafka._node(0))
    assert conf["default.replication.factor"] == "1"
    assert conf["offsets.topic.replication.factor"] == "1"
    assert conf["transaction.state.log.min.isr"] == "1"
    assert conf["controller.quorum.bootstrap.servers"] == "127.0.0.1:41001"
    assert conf["auto.create.topics.enable"] == "false"


def test_three_nodes_take_consecutive_ports_and_replicate_three_times(tmp_path: Path) -> None:
    kafka = ApacheKafka(port=42000, nodes=3, data_dir=tmp_path)
    assert kafka.url == "kafka://127.0.0.1:42000;127.0.0.1:42001;127.0.0.1:42002"
    assert kafka.bootstrap == "127.0.0.1:42000,127.0.0.1:42001,127.0.0.1:42002"
    conf = kafka.config(kafka._node(2))
    assert conf["node.id"] == "3"
    assert conf["listeners"] == "PLAINTEXT://127.0.0.1:42002,CONTROLLER://127.0.0.1:42005"
    assert conf["controller.quorum.bootstrap.servers"] == (
        "127.0.0.1:42003,127.0.0.1:42004,127.0.0.1:42005"
    )
    assert conf["default.replication.factor"] == "3"
    assert conf["min.insync.replicas"] == "2"
    assert conf["transaction.state.log.replication.factor"] == "3"


def test_other_cluster_sizes_are_refused() -> None:
    with pytest.raises(ValueError):
        ApacheKafka(nodes=2)


def test_a_kept_data_dir_brings_back_its_ports_and_size(tmp_path: Path) -> None:
    first = ApacheKafka(port=43000, nodes=3, data_dir=tmp_path)
    first.cluster_id = first._cluster_id()
    again = ApacheKafka(nodes=3, data_dir=tmp_path)
    assert again.ports == first.ports and again._cluster_id() == first.cluster_id
    with pytest.raises(ApacheKafkaError, match="3-node cluster"):
        ApacheKafka(nodes=1, data_dir=tmp_path)


def test_free_port_runs_are_free() -> None:
    base = consecutive_free_ports("127.0.0.1", 6)
    for port in range(base, base + 6):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_a_client_listener_takes_the_ports_after_the_controllers(tmp_path: Path) -> None:
    kafka = ApacheKafka(
        port=44000,
        nodes=3,
        data_dir=tmp_path,
        client_listener="SASL_SSL",
        extra_config={"listener.name.client.sasl.enabled.mechanisms": "SCRAM-SHA-256"},
    )
    assert kafka.client_ports == [44006, 44007, 44008]
    assert kafka.client_url == "kafka://127.0.0.1:44006;127.0.0.1:44007;127.0.0.1:44008"
    assert kafka.client_bootstrap == "127.0.0.1:44006,127.0.0.1:44007,127.0.0.1:44008"
    conf = kafka.config(kafka._node(1))
    assert conf["listeners"] == (
        "PLAINTEXT://127.0.0.1:44001,CLIENT://127.0.0.1:44007,CONTROLLER://127.0.0.1:44004"
    )
    assert conf["advertised.listeners"] == "PLAINTEXT://127.0.0.1:44001,CLIENT://127.0.0.1:44007"
    assert conf["listener.security.protocol.map"] == (
        "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,CLIENT:SASL_SSL"
    )
    # The nodes keep talking PLAINTEXT among themselves; the extra settings are passed on.
    assert conf["inter.broker.listener.name"] == "PLAINTEXT"
    assert conf["listener.name.client.sasl.enabled.mechanisms"] == "SCRAM-SHA-256"


def test_without_a_client_listener_clients_use_the_plaintext_one(tmp_path: Path) -> None:
    kafka = ApacheKafka(port=45000, data_dir=tmp_path)
    assert kafka.client_ports == [] and kafka.client_url == kafka.url
    assert kafka.client_bootstrap == kafka.bootstrap
    assert "CLIENT" not in kafka.config(kafka._node(0))["listeners"]
    assert kafka._scram_args() == []


def test_scram_users_are_added_when_storage_is_formatted(tmp_path: Path) -> None:
    kafka = ApacheKafka(port=46000, data_dir=tmp_path, scram_users={"baton": "pw1"})
    assert kafka._scram_args() == [
        "--add-scram",
        "SCRAM-SHA-256=[name=baton,password=pw1]",
        "--add-scram",
        "SCRAM-SHA-512=[name=baton,password=pw1]",
    ]


def fake_node_process() -> subprocess.Popen[bytes]:
    """A process standing in for a node's JVM, in a session of its own as the JVM is."""
    return subprocess.Popen(["sleep", "60"], start_new_session=True)


def test_one_node_is_killed_and_only_a_stopped_one_restarted(tmp_path: Path) -> None:
    kafka = ApacheKafka(port=44000, nodes=3, data_dir=tmp_path, class_archive=False)
    kafka.members = [kafka._node(i) for i in range(3)]
    processes = [fake_node_process() for _ in kafka.members]
    try:
        for node, process in zip(kafka.members, processes, strict=True):
            node.process = process
        assert kafka.node(2) is kafka.members[1]
        with pytest.raises(ApacheKafkaError, match="running already"):
            kafka.restart(2)

        assert kafka.kill(2) == -signal.SIGKILL
        assert kafka.node(2).process is None and processes[1].poll() is not None
        assert kafka.pids() == [processes[0].pid, processes[2].pid]
        with pytest.raises(ApacheKafkaError, match="not running"):
            kafka.kill(2)
        assert kafka.kill(3, signal.SIGTERM) == -signal.SIGTERM
    finally:
        for process in processes:
            process.kill()
            process.wait()


def test_an_unknown_node_is_named(tmp_path: Path) -> None:
    kafka = ApacheKafka(port=45000, nodes=3, data_dir=tmp_path)
    kafka.members = [kafka._node(i) for i in range(3)]
    with pytest.raises(
        ApacheKafkaError, match=r"no node 4 in this cluster \(its nodes: \[1, 2, 3\]\)"
    ):
        kafka.kill(4)


def test_free_port_runs_lie_below_the_ephemeral_range() -> None:
    low, _ = ephemeral_ports()
    for _ in range(20):
        base = consecutive_free_ports("127.0.0.1", 6)
        assert base >= LOWEST_PORT and base + 6 <= low


def test_the_ephemeral_range_is_read_from_the_system_or_defaults(tmp_path: Path) -> None:
    given = tmp_path / "range"
    given.write_text("40000\t50000\n")
    assert ephemeral_ports(given) == (40000, 50000)
    given.write_text("garbled")
    assert ephemeral_ports(given) == EPHEMERAL_PORTS
    assert ephemeral_ports(tmp_path / "missing") == EPHEMERAL_PORTS


def test_a_node_runs_the_compilers_it_was_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    launched: list[list[str]] = []

    def popen(cmd: list[str], **_: object) -> None:
        launched.append(cmd)

    monkeypatch.setattr(apache.subprocess, "Popen", popen)
    java = Java(path="java", major=17, version="")
    for jit, expected in (("c1", ["-XX:TieredStopAtLevel=1"]), ("tiered", [])):
        (tmp_path / jit).mkdir()
        kafka = ApacheKafka(port=47000, data_dir=tmp_path / jit, class_archive=False, jit=jit)
        node = kafka._node(0)
        kafka._launch(java, tmp_path, node)
        assert [a for a in launched[-1] if a.startswith("-XX:Tiered")] == expected
        assert launched[-1][-2:] == ["kafka.Kafka", str(node.properties)]
    assert ApacheKafka(port=47100, data_dir=tmp_path / "default").jit == DEFAULT_JIT == "tiered"
    with pytest.raises(ValueError, match="unknown JIT choice 'c2'; known: tiered, c1"):
        ApacheKafka(jit="c2")


@pytest.mark.skipif(
    shutil.which("java") is None and os.environ.get("CI") != "true",
    reason="needs java (apt-get install openjdk-17-jre-headless)",
)
def test_the_jvm_takes_every_compiler_choice_as_meant() -> None:
    java = find_java()
    for jit, level in (("c1", "1"), ("tiered", "4")):
        out = subprocess.run(
            [java.path, *jit_flags(jit), "-XX:+PrintFlagsFinal", "-version"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        line = next(x for x in out.stdout.splitlines() if " TieredStopAtLevel " in x)
        assert line.split("=")[1].split()[0] == level

"""docker-compose.yml, Dockerfile and .dockerignore, checked by parsing (no Docker needed)."""

from __future__ import annotations

import base64
import functools
import importlib
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Mapping
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest

from baton_kafka.streams.kafka.apache import pinned_version
from baton_kafka.streams.observe.guard import OPEN_PATHS
from tests.fixtures.paths import ROOT

DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"

KAFKA_SERVICES = ("kafka-1", "kafka-2", "kafka-3")
_VAR = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")


# --- helpers -------------------------------------------------------------------------------


def env_of(service: Mapping[str, Any]) -> dict[str, str]:
    """A service's environment as a dict, whether written as a mapping or a list."""
    raw = service.get("environment") or {}
    if isinstance(raw, list):
        return dict(item.split("=", 1) for item in raw)
    return dict(raw)


def interpolate(value: str, env: Mapping[str, str]) -> str:
    """Resolve ``${VAR}``, ``${VAR:-default}`` and ``${VAR:?error}`` as Compose does."""

    def sub(match: re.Match[str]) -> str:
        name, op, arg = match["name"], match["op"], match["arg"]
        current = env.get(name)
        if op in (":-", "-"):
            unset = not current if op == ":-" else current is None
            return arg if unset else str(current)
        if op in (":?", "?"):
            if not current:
                raise LookupError(f"{name}: {arg}")
            return current
        return current or ""

    return _VAR.sub(sub, value)


def named_volume_mounts(service: Mapping[str, Any]) -> dict[str, str]:
    """Container path -> named volume, for every named-volume mount of ``service``."""
    mounts: dict[str, str] = {}
    for volume in service.get("volumes", []):
        if isinstance(volume, str):
            source, _, rest = volume.partition(":")
            target = rest.split(":", 1)[0]
            if not rest or source.startswith((".", "/", "~", "$")):
                continue
        else:
            if volume.get("type", "volume") != "volume" or not volume.get("source"):
                continue
            source, target = volume["source"], volume["target"]
        mounts[target] = source
    return mounts


def listeners(value: str) -> dict[str, tuple[str, int]]:
    """``NAME://host:port,...`` -> {NAME: (host, port)}."""
    out: dict[str, tuple[str, int]] = {}
    for item in value.split(","):
        name, _, address = item.strip().partition("://")
        host, _, port = address.rpartition(":")
        out[name] = (host, int(port))
    return out


def healthcheck_cmd(service: Mapping[str, Any]) -> str:
    test = service["healthcheck"]["test"]
    if isinstance(test, str):
        return test
    assert test[0] in ("CMD", "CMD-SHELL"), test
    return " ".join(test[1:])


def settings_load() -> Any:
    """``streams.settings.load`` on an environment where the compose key file is a real one
    (the generated key stands in), importable whether or not baton is installed."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    load = importlib.import_module("baton_kafka.streams.settings").load

    def with_key(env: Mapping[str, str] | None = None, **overrides: Any) -> Any:
        env = dict(env or {})
        if env.get("BATON_SIGNING_KEYS_FILE") == "/keys/signing":
            env["BATON_SIGNING_KEYS_FILE"] = str(_key_file())
        if env.get("BATON_KAFKA_PASSWORD_FILE") == "/kafka-secrets/password.worker":
            env["BATON_KAFKA_PASSWORD_FILE"] = str(_password_file())
        if env.get("BATON_KAFKA_CA_FILE") == "/kafka-secrets/ca.pem":
            env["BATON_KAFKA_CA_FILE"] = str(_password_file().with_name("ca.pem"))
        return load(env, **overrides)

    return with_key


@functools.cache
def _key_file() -> Path:
    """A file holding a key as the compose ``keys`` service writes it."""
    path = Path(tempfile.mkdtemp()) / "signing"
    path.write_text("k1:" + "ab" * 32)
    return path


@functools.cache
def _password_file() -> Path:
    """A file holding the worker's password as the compose ``kafka-credentials`` writes it."""
    path = Path(tempfile.mkdtemp()) / "password.worker"
    path.write_text("cd" * 32)
    path.with_name("ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    return path


def resolved_worker_env(services: Mapping[str, Any], **host_env: str) -> dict[str, str]:
    host = {
        "BATON_WEB_TOKEN": "t0ken",
        "POSTGRES_PASSWORD": "pg-pass",
        **host_env,
    }
    return {k: interpolate(v, host) for k, v in env_of(services["worker"]).items()}


# --- kafka ---------------------------------------------------------------------------------


def test_exactly_three_kafka_brokers_on_the_official_image(services: dict[str, Any]) -> None:
    kafka = sorted(name for name in services if re.fullmatch(r"kafka-\d+", name))
    assert kafka == list(KAFKA_SERVICES)
    for name in KAFKA_SERVICES:
        assert services[name]["image"].startswith("apache/kafka:"), name


def test_kafka_is_the_release_the_integration_suite_runs(services: dict[str, Any]) -> None:
    assert {services[n]["image"] for n in KAFKA_SERVICES} == {f"apache/kafka:{pinned_version()}"}


def test_kafka_runs_kraft_with_a_consistent_quorum(services: dict[str, Any]) -> None:
    envs = {name: env_of(services[name]) for name in KAFKA_SERVICES}
    node_ids = {name: int(env["KAFKA_NODE_ID"]) for name, env in envs.items()}
    assert sorted(node_ids.values()) == [1, 2, 3]

    voters = {env["KAFKA_CONTROLLER_QUORUM_VOTERS"] for env in envs.values()}
    assert len(voters) == 1, "all nodes must list the same quorum voters"
    (voter_list,) = voters
    controller_ports = {listeners(env["KAFKA_LISTENERS"])["CONTROLLER"][1] for env in envs.values()}
    assert len(controller_ports) == 1
    (controller_port,) = controller_ports
    expected = {f"{node_ids[name]}@{name}:{controller_port}" for name in KAFKA_SERVICES}
    assert set(voter_list.split(",")) == expected

    cluster_ids = {env["CLUSTER_ID"] for env in envs.values()}
    assert len(cluster_ids) == 1, "CLUSTER_ID must be identical on every node"
    (cluster_id,) = cluster_ids
    assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16, "not a Kafka base64 UUID"

    for name, env in envs.items():
        assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}, name
        assert env["KAFKA_CONTROLLER_LISTENER_NAMES"] == "CONTROLLER", name
        assert not any(key.startswith("KAFKA_ZOOKEEPER") for key in env), name


def test_kafka_listeners_are_consistent(services: dict[str, Any]) -> None:
    for name in KAFKA_SERVICES:
        env = env_of(services[name])
        bound = listeners(env["KAFKA_LISTENERS"])
        advertised = listeners(env["KAFKA_ADVERTISED_LISTENERS"])
        assert {"INTERNAL", "CONTROLLER"} <= set(bound), name
        assert "CONTROLLER" not in advertised, name
        assert advertised["INTERNAL"] == (name, bound["INTERNAL"][1]), name
        assert env["KAFKA_INTER_BROKER_LISTENER_NAME"] == "INTERNAL", name
        protocol_map = dict(
            item.split(":") for item in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(",")
        )
        assert set(bound) <= set(protocol_map), f"{name}: a listener lacks a security protocol"
        # TLS and a SASL login on every listener, the quorum's and the host's included.
        assert set(protocol_map.values()) == {"SASL_SSL"}, name


def test_kafka_replication_and_topic_defaults(services: dict[str, Any]) -> None:
    for name in KAFKA_SERVICES:
        env = env_of(services[name])
        rf = int(env["KAFKA_DEFAULT_REPLICATION_FACTOR"])
        min_isr = int(env["KAFKA_MIN_INSYNC_REPLICAS"])
        assert rf == 3, name
        assert min_isr == 2, name
        # One broker may fail without blocking acks=all producers or losing acked writes.
        assert 1 < min_isr < rf <= len(KAFKA_SERVICES), name
        assert int(env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"]) == 3, name
        assert int(env["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"]) == 3, name
        assert int(env["KAFKA_TRANSACTION_STATE_LOG_MIN_ISR"]) == 2, name
        assert int(env["KAFKA_NUM_PARTITIONS"]) == 12, name
        assert env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false", name


def test_kafka_data_lives_on_a_volume_of_its_own(services: dict[str, Any]) -> None:
    sources = []
    for name in KAFKA_SERVICES:
        service = services[name]
        log_dir = env_of(service)["KAFKA_LOG_DIRS"]
        mounts = named_volume_mounts(service)
        assert log_dir in mounts, f"{name}: {log_dir} is not on a named volume"
        sources.append(mounts[log_dir])
    assert len(set(sources)) == len(KAFKA_SERVICES), "brokers must not share a data volume"


def test_kafka_host_ports_are_loopback_only(services: dict[str, Any]) -> None:
    for name in KAFKA_SERVICES:
        for port in services[name].get("ports", []):
            assert isinstance(port, str) and port.startswith("127.0.0.1:"), (name, port)


def test_environment_values_are_strings(services: dict[str, Any]) -> None:
    for name, service in services.items():
        for key, value in env_of(service).items():
            assert isinstance(value, str), f"{name}.{key} = {value!r} should be quoted"


# --- healthchecks --------------------------------------------------------------------------


def test_brokers_and_postgres_have_healthchecks(services: dict[str, Any]) -> None:
    for name in KAFKA_SERVICES:
        cmd = healthcheck_cmd(services[name])
        assert "/opt/kafka/bin/kafka-broker-api-versions.sh" in cmd, name
        port = listeners(env_of(services[name])["KAFKA_LISTENERS"])["INTERNAL"][1]
        assert f"--bootstrap-server localhost:{port}" in cmd, name
        assert "--command-config /kafka-secrets/admin.properties" in cmd, name
    assert "pg_isready" in healthcheck_cmd(services["postgres"])


def test_every_long_running_service_has_a_healthcheck(services: dict[str, Any]) -> None:
    running = {
        name
        for name, service in services.items()
        if not service.get("profiles") and service.get("restart") != "no"
    }
    # Grafana's image is not checked here: nothing waits on it.
    assert running - {"grafana"} == {*KAFKA_SERVICES, "postgres", "worker", "prometheus"}
    for name in running - {"grafana"}:
        check = services[name]["healthcheck"]
        assert check["test"][0] in ("CMD", "CMD-SHELL"), name
        for key in ("interval", "timeout", "retries"):
            assert key in check, (name, key)


def test_the_worker_healthcheck_asks_health_without_the_token(services: dict[str, Any]) -> None:
    worker = services["worker"]
    test = worker["healthcheck"]["test"]
    # Python, because the image (python:3.11-slim) has no curl; compiled here, never run.
    assert test[:3] == ["CMD", "python", "-c"]
    compile(test[3], "healthcheck", "exec")
    port = env_of(worker)["BATON_WEB_PORT"]
    assert f"'http://127.0.0.1:{port}/health'" in test[3]
    # /health is the one path open without the token (streams/observe/guard.py).
    assert "BATON_WEB_TOKEN" not in test[3] and "Authorization" not in test[3]
    assert "/health" in OPEN_PATHS
    assert worker["healthcheck"]["start_period"]


def test_prometheus_healthcheck_asks_its_readiness(services: dict[str, Any]) -> None:
    assert "http://127.0.0.1:9090/-/ready" in healthcheck_cmd(services["prometheus"])


# --- postgres ------------------------------------------------------------------------------


def test_postgres_service(services: dict[str, Any]) -> None:
    postgres = services["postgres"]
    assert postgres["image"].startswith("postgres:16")
    env = env_of(postgres)
    assert env["POSTGRES_DB"] == "baton"
    assert env["POSTGRES_USER"] == "baton"
    # Required: no default password; `docker compose up` stops and says to set it.
    with pytest.raises(LookupError, match="set POSTGRES_PASSWORD"):
        interpolate(env["POSTGRES_PASSWORD"], {})
    assert interpolate(env["POSTGRES_PASSWORD"], {"POSTGRES_PASSWORD": "s3cret"}) == "s3cret"
    assert "/var/lib/postgresql/data" in named_volume_mounts(postgres)
    assert "ports" not in postgres, "the order store need not be reachable from the host"


# --- worker --------------------------------------------------------------------------------


def test_worker_can_scale(services: dict[str, Any]) -> None:
    worker = services["worker"]
    assert "container_name" not in worker
    assert "ports" not in worker, "a fixed host port collides as soon as worker=2"
    assert [str(p) for p in worker["expose"]] == ["6066"]
    assert env_of(worker).get("BATON_WEB_PORT", "6066") == "6066"
    assert worker["restart"] == "unless-stopped"


def test_worker_is_built_from_the_repo(services: dict[str, Any]) -> None:
    worker = services["worker"]
    build = worker["build"]
    context = build if isinstance(build, str) else build["context"]
    dockerfile = "Dockerfile" if isinstance(build, str) else build.get("dockerfile", "Dockerfile")
    assert (ROOT / context).resolve() == ROOT
    assert (ROOT / context / dockerfile).resolve() == DOCKERFILE
    assert worker.get("command", ["worker"]) in (["worker"], "worker")


def test_worker_broker_url_names_every_broker(services: dict[str, Any]) -> None:
    url = env_of(services["worker"])["BATON_BROKER"]
    assert url.startswith("kafka://")
    hosts = url.removeprefix("kafka://").split(";")
    internal = set()
    for name in KAFKA_SERVICES:
        host, port = listeners(env_of(services[name])["KAFKA_ADVERTISED_LISTENERS"])["INTERNAL"]
        internal.add(f"{host}:{port}")
    assert sorted(hosts) == sorted(internal) == ["kafka-1:9092", "kafka-2:9092", "kafka-3:9092"]


def test_worker_settings_match_the_cluster(services: dict[str, Any]) -> None:
    env = env_of(services["worker"])
    kafka = env_of(services["kafka-1"])
    assert env["BATON_PRODUCER_ACKS"] == "all"
    assert env["BATON_REPLICATION_FACTOR"] == kafka["KAFKA_DEFAULT_REPLICATION_FACTOR"] == "3"
    assert env["BATON_PARTITIONS"] == kafka["KAFKA_NUM_PARTITIONS"] == "12"
    assert env["BATON_LOG_FORMAT"] == "json"
    assert env["BATON_WEB_BIND"] == "0.0.0.0"
    assert env["BATON_DATA_DIR"] == "/data"
    assert env["ANTHROPIC_API_KEY"] == "${ANTHROPIC_API_KEY:-}"


def test_worker_orders_dsn_points_at_postgres(services: dict[str, Any]) -> None:
    dsn = env_of(services["worker"])["BATON_ORDERS_DSN"]
    with pytest.raises(LookupError, match="POSTGRES_PASSWORD"):
        interpolate(dsn, {})
    assert interpolate(dsn, {"POSTGRES_PASSWORD": "s3cret"}) == (
        "postgresql://baton:s3cret@postgres:5432/baton"
    )
    # The same password expression as the postgres service, so they cannot drift apart.
    assert env_of(services["postgres"])["POSTGRES_PASSWORD"] in dsn


def test_worker_web_token_is_required(services: dict[str, Any]) -> None:
    token = env_of(services["worker"])["BATON_WEB_TOKEN"]
    with pytest.raises(LookupError):
        interpolate(token, {})
    assert interpolate(token, {"BATON_WEB_TOKEN": "abc"}) == "abc"


def test_workers_sign_with_the_key_compose_generates(
    services: dict[str, Any], tmp_path: Path
) -> None:
    keys = services["keys"]
    assert keys.get("restart") == "no" and keys["image"] == services["worker"]["image"]
    assert named_volume_mounts(keys) == {"/keys": "baton-keys"}
    # The one-shot script, run here against a folder standing in for the volume: it writes a
    # random key once and keeps it on the next `up`.
    script = keys["command"][0].replace("/keys/signing", str(tmp_path / "signing"))
    script = script.replace("os.chown(path, 10001, 10001)", "pass")
    exec(compile(script, "keys", "exec"), {})
    first = (tmp_path / "signing").read_text()
    exec(compile(script, "keys", "exec"), {})
    assert (tmp_path / "signing").read_text() == first
    assert re.fullmatch(r"k1:[0-9a-f]{64}", first)
    for name in ("worker", "orders-import"):
        service = services[name]
        assert env_of(service)["BATON_SIGNING_KEYS_FILE"] == "/keys/signing", name
        assert "BATON_SIGNING_KEYS" not in env_of(service), name
        assert "baton-keys:/keys:ro" in service["volumes"], name
        assert service["depends_on"]["keys"]["condition"] == "service_completed_successfully"
    env = resolved_worker_env(services)
    env["BATON_SIGNING_KEYS_FILE"] = str(tmp_path / "signing")
    settings = settings_load()(env)
    assert settings.signing_keys == (("k1", first.removeprefix("k1:")),)
    assert not settings.allow_unsigned


def test_worker_environment_is_accepted_by_baton_settings(services: dict[str, Any]) -> None:
    load = settings_load()
    settings = load(resolved_worker_env(services))
    assert settings.broker == "kafka://kafka-1:9092;kafka-2:9092;kafka-3:9092"
    assert settings.orders_dsn == "postgresql://baton:pg-pass@postgres:5432/baton"
    assert settings.partitions == 12
    assert settings.web_bind == "0.0.0.0"
    assert settings.web_port == 6066
    assert settings.web_token == "t0ken"
    assert settings.llm == "offline"
    assert str(settings.data_dir) == "/data"
    assert load(resolved_worker_env(services, ANTHROPIC_API_KEY="sk-x")).llm == "anthropic"


def test_worker_waits_for_healthy_brokers_and_postgres(services: dict[str, Any]) -> None:
    depends_on = services["worker"]["depends_on"]
    assert isinstance(depends_on, dict), "the list form cannot express service_healthy"
    for name in (*KAFKA_SERVICES, "postgres"):
        assert depends_on[name]["condition"] == "service_healthy", name
        assert "healthcheck" in services[name], name


def test_worker_data_volume(services: dict[str, Any]) -> None:
    assert named_volume_mounts(services["worker"]) == {
        "/data": "baton-data",
        "/keys": "baton-keys",
        "/kafka-secrets": "kafka-secrets",
    }


# --- prometheus and grafana ----------------------------------------------------------------

MONITORING = {"prometheus": "prom/prometheus", "grafana": "grafana/grafana"}


def bind_mount_sources(service: Mapping[str, Any]) -> list[str]:
    return [
        volume.split(":", 1)[0]
        for volume in service.get("volumes", [])
        if isinstance(volume, str) and volume.startswith(("./", "/", "~"))
    ]


def test_monitoring_images_are_pinned(services: dict[str, Any]) -> None:
    for name, repository in MONITORING.items():
        image, _, tag = services[name]["image"].partition(":")
        assert image == repository, name
        assert re.fullmatch(r"v?\d+\.\d+\.\d+", tag), f"{name}: pin an exact release, not {tag!r}"


def test_every_bind_mount_is_a_file_of_the_repo(services: dict[str, Any]) -> None:
    sources = [s for service in services.values() for s in bind_mount_sources(service)]
    assert sources, "the operations kit is mounted from deploy/"
    for source in sources:
        assert source.startswith("./deploy/"), f"{source}: mount only files of deploy/"
        assert (ROOT / source).exists(), f"{source} is mounted but not in the repository"
    for name in MONITORING:
        for volume in services[name]["volumes"]:
            if volume.startswith("./"):
                assert volume.endswith(":ro"), f"{name}: {volume} should be read-only"


def test_monitoring_is_reachable_from_this_host_only(services: dict[str, Any]) -> None:
    assert services["prometheus"]["ports"] == ["127.0.0.1:9090:9090"]
    assert services["grafana"]["ports"] == ["127.0.0.1:3000:3000"]


def test_grafana_has_no_default_password(services: dict[str, Any]) -> None:
    env = env_of(services["grafana"])
    with pytest.raises(LookupError, match="GRAFANA_ADMIN_PASSWORD"):
        interpolate(env["GF_SECURITY_ADMIN_PASSWORD"], {})
    assert env["GF_AUTH_ANONYMOUS_ENABLED"] == "false"
    assert env["GF_USERS_ALLOW_SIGN_UP"] == "false"
    assert services["grafana"]["depends_on"]["prometheus"]["condition"] == "service_healthy"


def test_prometheus_gets_the_web_token_as_a_secret(
    compose: dict[str, Any], services: dict[str, Any]
) -> None:
    assert services["prometheus"]["secrets"] == ["baton_web_token"]
    assert compose["secrets"]["baton_web_token"] == {"environment": "BATON_WEB_TOKEN"}
    # The same variable the workers require, so the two cannot disagree.
    assert "${BATON_WEB_TOKEN:?" in env_of(services["worker"])["BATON_WEB_TOKEN"]
    assert "BATON_WEB_TOKEN" not in str(services["prometheus"].get("environment", ""))


# --- orders-import -------------------------------------------------------------------------


def test_orders_import_is_a_one_shot_tool(services: dict[str, Any]) -> None:
    tool = services["orders-import"]
    worker = services["worker"]
    assert "tools" in tool["profiles"]
    assert tool["image"] == worker["image"]
    # `docker compose run --rm orders-import FILE` replaces `command`, so the
    # subcommand must be in the entrypoint for FILE to land after `orders import`.
    assert tool["entrypoint"] == ["baton", "orders", "import"]
    assert tool.get("restart", "no") == "no"
    assert tool["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert env_of(tool)["BATON_ORDERS_DSN"] == env_of(worker)["BATON_ORDERS_DSN"]
    assert named_volume_mounts(tool) == {
        "/data": "baton-data",
        "/keys": "baton-keys",
        "/kafka-secrets": "kafka-secrets",
    }


def test_only_tools_are_behind_profiles(services: dict[str, Any]) -> None:
    profiled = {name for name, service in services.items() if service.get("profiles")}
    assert profiled == {"orders-import"}


# --- volumes -------------------------------------------------------------------------------


def test_every_named_volume_is_declared_and_used(
    compose: dict[str, Any], services: dict[str, Any]
) -> None:
    declared = set(compose.get("volumes") or {})
    used = {
        source for service in services.values() for source in named_volume_mounts(service).values()
    }
    assert used, "no named volumes at all"
    assert used <= declared, f"undeclared: {used - declared}"
    assert declared <= used, f"declared but unused: {declared - used}"
    assert {"baton-data", "postgres-data", "prometheus-data", "grafana-data"} <= declared


# --- Dockerfile ----------------------------------------------------------------------------


def _instructions() -> list[tuple[str, str]]:
    text = DOCKERFILE.read_text(encoding="utf-8").replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            out.append((keyword.upper(), rest.strip()))
    return out


def test_dockerfile_installs_the_project() -> None:
    instructions = _instructions()
    assert instructions[0] == ("FROM", "python:3.11-slim")
    runs = [rest for keyword, rest in instructions if keyword == "RUN"]
    installs = [re.search(r"pip install [^&]*[\"']?\.\[([\w,]+)\][\"']?", run) for run in runs]
    extras = {e for m in installs if m for e in m.group(1).split(",")}
    # The store on disk and an OpenTelemetry SDK are in the image, the embedded broker is not.
    assert {"postgres", "rocksdb", "otel"} <= extras and "embedded" not in extras
    copies = [rest for keyword, rest in instructions if keyword == "COPY"]
    assert copies, "the source must be copied into the image"
    entrypoint = [json.loads(rest) for keyword, rest in instructions if keyword == "ENTRYPOINT"]
    cmd = [json.loads(rest) for keyword, rest in instructions if keyword == "CMD"]
    assert entrypoint[-1] == ["baton"]
    assert cmd[-1] == ["worker"]

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "baton" in project["scripts"], "the entrypoint must be an installed script"
    assert "postgres" in project["optional-dependencies"]


def test_the_dependency_layer_does_not_depend_on_the_sources() -> None:
    instructions = _instructions()
    copies = [i for i, (keyword, _) in enumerate(instructions) if keyword == "COPY"]
    first, sources = copies[0], next(i for i in copies if instructions[i][1] == ". .")
    assert instructions[first][1] == "pyproject.toml constraints.txt ./"
    pinned = [
        i
        for i, (keyword, rest) in enumerate(instructions)
        if keyword == "RUN" and "pip install -c constraints.txt" in rest
    ]
    assert pinned and first < pinned[0] < sources
    after = [rest for keyword, rest in instructions[sources:] if keyword == "RUN"]
    assert any("pip install --no-deps" in run for run in after)
    # What the dependency layer installs is read from pyproject.toml, so it cannot drift.
    script = instructions[pinned[0]][1].split('python -c "', 1)[1].split('" >', 1)[0]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "tomllib.load(open('pyproject.toml', 'rb'))['project']" in script
    assert project["optional-dependencies"]["postgres"]


def test_dockerignore_keeps_what_the_build_needs() -> None:
    patterns = [
        line.strip()
        for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for required in (".git", ".venv", ".baton", "tests"):
        assert required in patterns, required
    assert any("__pycache__" in pattern for pattern in patterns)

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    needed = ["pyproject.toml", "constraints.txt", pyproject["project"]["readme"]]
    packages = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    needed += [package.rstrip("*") for package in packages]
    for path in needed:
        excluded = [p for p in patterns if not p.startswith("!") and fnmatch(path, p)]
        assert not excluded, f"{path} is needed by `pip install .` but excluded by {excluded}"


# --- the cluster's TLS, SASL and ACLs ------------------------------------------------------

ACLS = ROOT / "deploy/kafka/acls.txt"
CREDENTIALS = ROOT / "deploy/kafka/credentials.py"


def acl_lines() -> list[tuple[str, str, str, str, set[str]]]:
    """deploy/kafka/acls.txt as (principal, resource, pattern, name, operations)."""
    out = []
    for line in ACLS.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        principal, resource, pattern, name, *operations = line.split()
        out.append((principal, resource, pattern, name, set(operations)))
    return out


def granted(principal: str, topic: str) -> set[str]:
    """The operations ``principal`` has on ``topic`` (literal or by prefix)."""
    ops: set[str] = set()
    for who, resource, pattern, name, operations in acl_lines():
        matches = topic == name if pattern == "literal" else topic.startswith(name)
        if who == principal and resource == "topic" and matches:
            ops |= operations
    return ops


def test_the_brokers_deny_what_no_acl_allows_and_keep_logins_out_of_the_environment(
    services: dict[str, Any],
) -> None:
    for name in KAFKA_SERVICES:
        env = env_of(services[name])
        assert env["KAFKA_AUTHORIZER_CLASS_NAME"].endswith("StandardAuthorizer"), name
        assert env["KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND"] == "false", name
        assert env["KAFKA_SUPER_USERS"] == "User:admin", name
        assert env["KAFKA_SASL_ENABLED_MECHANISMS"] == "PLAIN", name
        # The users and passwords are in the login file kafka-credentials wrote.
        assert env["KAFKA_OPTS"] == (
            "-Djava.security.auth.login.config=/kafka-secrets/broker-jaas.conf"
        ), name
        assert env["KAFKA_SSL_KEYSTORE_LOCATION"] == f"/kafka-secrets/{name}.pem", name
        assert "kafka-secrets:/kafka-secrets:ro" in services[name]["volumes"], name
        condition = services[name]["depends_on"]["kafka-credentials"]["condition"]
        assert condition == "service_completed_successfully", name
    for name, service in services.items():
        for key, value in env_of(service).items():
            assert "password=" not in str(value).lower(), (name, key)
            if key.endswith(("_PASSWORD", "_SECRET")) and name != "grafana":
                assert str(value).startswith("${"), (name, key)


def test_the_workers_log_in_as_the_worker_with_its_generated_password(
    services: dict[str, Any],
) -> None:
    settings = settings_load()(resolved_worker_env(services))
    kafka = settings.kafka
    assert (kafka.protocol, kafka.mechanism, kafka.username) == ("SASL_SSL", "PLAIN", "worker")
    assert kafka.password == "cd" * 32
    env = env_of(services["worker"])
    assert "BATON_KAFKA_PASSWORD" not in env
    assert env["BATON_KAFKA_PASSWORD_FILE"] == "/kafka-secrets/password.worker"
    assert env["BATON_KAFKA_CA_FILE"] == "/kafka-secrets/ca.pem"
    depends = services["worker"]["depends_on"]
    assert depends["kafka-acls"]["condition"] == "service_completed_successfully"


def test_the_cluster_s_credentials_are_generated_once_like_the_signing_key(
    services: dict[str, Any], tmp_path: Path
) -> None:
    one_shot = services["kafka-credentials"]
    assert one_shot.get("restart") == "no" and one_shot["image"] == services["worker"]["image"]
    assert one_shot["entrypoint"] == ["python", "/credentials.py", "/kafka-secrets"]
    assert named_volume_mounts(one_shot) == {"/kafka-secrets": "kafka-secrets"}
    spec = importlib.util.spec_from_file_location("credentials", CREDENTIALS)
    assert spec is not None and spec.loader is not None
    credentials = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(credentials)
    folder = tmp_path / "kafka-secrets"
    credentials.main(folder)
    first = {p.name: p.read_bytes() for p in folder.iterdir()}
    credentials.main(folder)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == first  # kept, not remade
    principals = {who for who, *_ in acl_lines()}
    assert principals | {"admin"} == set(credentials.PRINCIPALS)
    for principal in credentials.PRINCIPALS:
        secret = (folder / f"password.{principal}").read_text()
        assert re.fullmatch(r"[0-9a-f]{64}", secret), principal
        assert f'user_{principal}="{secret}"' in (folder / "broker-jaas.conf").read_text()
        assert f'password="{secret}"' in (folder / f"{principal}.properties").read_text()
    # Every secret readable by its owner only; the CA's certificate by anyone.
    for path in folder.iterdir():
        mode = path.stat().st_mode & 0o777
        if path.name in ("ca.pem", "ca.srl"):
            continue
        assert mode == 0o400, (path.name, oct(mode))
    for broker in KAFKA_SERVICES:
        done = subprocess.run(
            ["openssl", "verify", "-CAfile", folder / "ca.pem", folder / f"{broker}.pem"],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        text = subprocess.run(
            [
                "openssl",
                "x509",
                "-noout",
                "-ext",
                "subjectAltName",
                "-in",
                folder / f"{broker}.pem",
            ],
            capture_output=True,
            text=True,
        ).stdout
        assert f"DNS:{broker}" in text and "DNS:localhost" in text, text


def test_each_principal_gets_only_its_row(services: dict[str, Any]) -> None:
    tickets, decisions = "support.tickets", "support.decisions"
    assert "Read" not in granted("desk", tickets) and "Read" not in granted(
        "desk", "support.replies"
    )
    assert granted("desk", decisions) == {"Write", "Describe"}
    assert granted("desk", "support.handoffs") == {"Read", "Describe"}
    for topic in (tickets, decisions, "support.replies", "support.tickets-by-session", "baton-x"):
        assert "Write" not in granted("consumer", topic) and "All" not in granted("consumer", topic)
        assert not granted("publisher", topic) or topic == tickets
    assert granted("consumer", "support.replies") == {"Read", "Describe"}
    assert granted("publisher", tickets) == {"Write", "Describe"}
    # Nobody but the worker (and forget's requests) writes an internal topic or a changelog.
    for topic in ("support.understood", "support.order-matched", "baton-batons-changelog"):
        writers = {who for who, *_ in acl_lines() if granted(who, topic) & {"Write", "All"}}
        assert writers == {"worker"}, topic
    acls = services["kafka-acls"]
    assert acls["image"] == services["kafka-1"]["image"] and acls.get("restart") == "no"
    assert "./deploy/kafka/acls.txt:/acls.txt:ro" in acls["volumes"]
    for broker in KAFKA_SERVICES:
        assert acls["depends_on"][broker]["condition"] == "service_healthy"
    done = subprocess.run(["sh", "-n", str(ROOT / "deploy/kafka/acls.sh")], capture_output=True)
    assert done.returncode == 0, done.stderr
    # Every line in the words kafka-acls.sh takes.
    valid = {
        "Read", "Write", "Create", "Delete", "Alter", "Describe", "ClusterAction",
        "DescribeConfigs", "AlterConfigs", "IdempotentWrite", "All",
    }  # fmt: skip
    for principal, resource, pattern, name, operations in acl_lines():
        assert resource in ("topic", "group", "cluster"), (principal, name)
        assert pattern in ("literal", "prefixed"), (principal, name)
        assert operations and operations <= valid, (principal, name, operations - valid)
        assert resource != "cluster" or name == "kafka-cluster", (principal, name)

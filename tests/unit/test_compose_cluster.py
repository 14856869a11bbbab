"""docker-compose.existing-cluster.yml over docker-compose.yml, merged as Compose merges them
(no Docker needed): workers, Prometheus and Grafana against a cluster named by BATON_* only."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixtures.paths import COMPOSE, ROOT, read_mapping
from tests.unit.test_compose import env_of, interpolate, settings_load

OVERRIDE = ROOT / "docker-compose.existing-cluster.yml"
KAFKA = ("kafka-1", "kafka-2", "kafka-3")
CLUSTER = {
    "BATON_BROKER": "kafka://b-1.example.com:9096;b-2.example.com:9096",
    "BATON_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
    "BATON_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
    "BATON_KAFKA_USERNAME": "baton",
    "BATON_KAFKA_PASSWORD": "s3cret-password",
    "BATON_WEB_TOKEN": "t0ken",
    "POSTGRES_PASSWORD": "pg-pass",
}


class Override:
    """A value under Compose's ``!override`` tag: it replaces what it merges onto."""

    def __init__(self, value: Any) -> None:
        self.value = value


class Reset:
    """Compose's ``!reset``: the key goes."""


class ComposeLoader(yaml.SafeLoader):
    """YAML as Compose reads it: with its ``!override`` and ``!reset`` merge tags."""


def _override(loader: yaml.SafeLoader, node: yaml.Node) -> Override:
    if isinstance(node, yaml.MappingNode):
        return Override(loader.construct_mapping(node, deep=True))
    if isinstance(node, yaml.SequenceNode):
        return Override(loader.construct_sequence(node, deep=True))
    return Override(loader.construct_scalar(node))  # type: ignore[arg-type]


ComposeLoader.add_constructor("!override", _override)
ComposeLoader.add_constructor("!reset", lambda loader, node: Reset())


def merge(base: Any, over: Any) -> Any:
    """Compose's merge: mappings merge key by key, sequences of ``profiles`` add up, scalars
    and other sequences are replaced; ``!override`` replaces, ``!reset`` removes."""
    if isinstance(over, Override):
        return copy.deepcopy(over.value)
    if isinstance(base, dict) and isinstance(over, dict):
        out = copy.deepcopy(base)
        for key, value in over.items():
            if isinstance(value, Reset):
                out.pop(key, None)
            elif key in out:
                out[key] = merge(out[key], value)
            else:
                out[key] = merge({}, value) if isinstance(value, dict) else copy.deepcopy(value)
        return out
    return copy.deepcopy(over)


def load_override(path: Path = OVERRIDE) -> dict[str, Any]:
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=ComposeLoader)
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def merged() -> dict[str, Any]:
    """The services ``docker compose -f docker-compose.yml -f <override>`` runs with."""
    return dict(merge(read_mapping(COMPOSE), load_override())["services"])


def started_by_default(services: dict[str, Any]) -> set[str]:
    """What ``docker compose up`` starts without ``--profile``."""
    return {name for name, s in services.items() if not s.get("profiles")}


def test_no_broker_starts_and_nothing_waits_for_one(merged: dict[str, Any]) -> None:
    assert started_by_default(merged) == {"keys", "worker", "postgres", "prometheus", "grafana"}
    for name in KAFKA:
        assert merged[name]["profiles"] == ["local-kafka"]
    for name in started_by_default(merged):
        assert not set(merged[name].get("depends_on") or {}) & set(KAFKA), name
    assert merged["worker"]["depends_on"] == {
        "keys": {"condition": "service_completed_successfully"},
        "postgres": {"condition": "service_healthy"},
    }
    assert merged["grafana"]["depends_on"] == {"prometheus": {"condition": "service_healthy"}}


def test_the_worker_reads_the_cluster_and_its_login_from_baton_settings(
    merged: dict[str, Any],
) -> None:
    env = {k: interpolate(v, CLUSTER) for k, v in env_of(merged["worker"]).items()}
    settings = settings_load()(env)
    assert settings.broker == CLUSTER["BATON_BROKER"]
    assert (settings.kafka.protocol, settings.kafka.mechanism) == ("SASL_SSL", "SCRAM-SHA-512")
    assert (settings.kafka.username, settings.kafka.password) == ("baton", "s3cret-password")
    assert (settings.partitions, settings.replication_factor) == (12, 3)
    # The rest of the worker is the compose kit's: the order store, the web port and token.
    assert settings.orders_dsn == "postgresql://baton:pg-pass@postgres:5432/baton"
    assert (settings.web_bind, settings.web_port, settings.web_token) == ("0.0.0.0", 6066, "t0ken")


def test_without_a_cluster_named_compose_refuses_to_start(merged: dict[str, Any]) -> None:
    worker = env_of(merged["worker"])
    without = {k: v for k, v in CLUSTER.items() if k != "BATON_BROKER"}
    with pytest.raises(LookupError, match="BATON_BROKER"):
        interpolate(worker["BATON_BROKER"], without)


def test_every_kafka_setting_is_passed_through(merged: dict[str, Any]) -> None:
    env = env_of(merged["worker"])
    wanted = set(settings_load()({}).kafka.to_env())
    assert wanted <= set(env)
    for name in wanted:
        assert f"${{{name}" in env[name], name


def test_an_oauthbearer_login_and_a_registry_are_passed_through(merged: dict[str, Any]) -> None:
    oauth = {
        **CLUSTER,
        "BATON_KAFKA_SASL_MECHANISM": "OAUTHBEARER",
        "BATON_KAFKA_USERNAME": "",
        "BATON_KAFKA_PASSWORD": "",
        "BATON_KAFKA_OAUTH_TOKEN_URL": "https://idp.example/token",
        "BATON_KAFKA_OAUTH_CLIENT_ID": "svc",
        "BATON_KAFKA_OAUTH_CLIENT_SECRET": "s",
        "BATON_SCHEMA_REGISTRY_URL": "https://sr.example",
    }
    env = {k: interpolate(v, oauth) for k, v in env_of(merged["worker"]).items()}
    settings = settings_load()(env)
    assert settings.kafka.oauth and settings.kafka.oauth_token_url == "https://idp.example/token"
    assert settings.schema_registry_url == "https://sr.example"


def test_prometheus_and_grafana_are_the_kit_s_own(merged: dict[str, Any]) -> None:
    base = read_mapping(COMPOSE)["services"]
    assert merged["prometheus"] == base["prometheus"]
    assert merged["grafana"] == base["grafana"]
    assert "--enable-feature=exemplar-storage" in merged["prometheus"]["command"]


def test_the_merge_follows_compose() -> None:
    base = {"a": {"x": 1, "deps": {"k": 1, "p": 2}}, "b": [1]}
    over = {"a": {"deps": Override({"p": 3}), "y": 2}, "b": [2], "c": Reset()}
    assert merge(base, over) == {"a": {"x": 1, "deps": {"p": 3}, "y": 2}, "b": [2]}


def test_the_compose_cluster_s_credentials_stay_out_of_an_existing_cluster(
    merged: dict[str, Any],
) -> None:
    for name in ("kafka-credentials", "kafka-acls"):
        assert merged[name]["profiles"] == ["local-kafka"], name
    # The order import reads no Kafka: it loads without the compose cluster's password file.
    env = {k: interpolate(v, CLUSTER) for k, v in env_of(merged["orders-import"]).items()}
    assert settings_load()(env).kafka.protocol == "PLAINTEXT"
    assert "kafka-credentials" not in merged["orders-import"]["depends_on"]

"""Settings from baton.toml < .env < the environment; secrets from files; one-line errors."""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import fields
from pathlib import Path
from types import SimpleNamespace

import pytest

from baton_kafka.streams.config import reference
from baton_kafka.streams.config.kafka import CLIENT_OPTIONS
from baton_kafka.streams.config.loading import specs
from baton_kafka.streams.runtime.faust_app.spawn import child_env
from baton_kafka.streams.settings import Settings, SettingsError, load


def _write(path: Path, text: str) -> Path:
    path.write_text(text, "utf-8")
    return path


def _error(tmp_path: Path, env: dict[str, str] | None = None) -> str:
    with pytest.raises(SettingsError) as raised:
        load(env or {}, cwd=tmp_path)
    message = str(raised.value)
    assert "\n" not in message
    return message


def test_the_file_then_dotenv_then_the_environment(tmp_path: Path) -> None:
    _write(
        tmp_path / "baton.toml",
        'namespace = "from-file"\nweb_port = 7001\npartitions = 3\n'
        "[kafka.client]\nlinger_ms = 5\nfetch_max_wait_ms = 50\n",
    )
    _write(tmp_path / ".env", "# the shop's\nexport BATON_WEB_PORT=7002\nBATON_PARTITIONS='4'\n")
    s = load({"BATON_PARTITIONS": "5"}, cwd=tmp_path)
    assert (s.namespace, s.web_port, s.partitions) == ("from-file", 7002, 5)
    assert s.kafka_client.producer == {"linger_ms": 5}
    assert s.kafka_client.consumer == {"fetch_max_wait_ms": 50}
    # Without files: the defaults.
    assert load({}, cwd=tmp_path / "nowhere").namespace == ""
    # A child gets every setting as a variable and reads no file again.
    rendered = s.to_env()
    assert rendered["BATON_CONFIG"] == "" and load(rendered, cwd=tmp_path) == s


def test_tables_join_their_keys_and_config_names_the_file(tmp_path: Path) -> None:
    pem = _write(tmp_path / "ca.pem", "x")
    shop = _write(
        tmp_path / "shop.toml",
        f'[kafka]\nsecurity_protocol = "SSL"\nca_file = "{pem}"\n'
        '[topic]\ntickets = "prod.cs.tickets.v1"\n'
        "[prices]\nmy-model = [1, 2]\n",
    )
    for s in (load({"BATON_CONFIG": str(shop)}), load({}, config=shop)):
        assert s.kafka.protocol == "SSL" and s.kafka.ca_file == pem
        assert s.topic("support.tickets") == "prod.cs.tickets.v1"
        assert s.prices["my-model"].output == 2
    missing = tmp_path / "nope.toml"
    with pytest.raises(SettingsError, match=f"BATON_CONFIG: no such file {missing}"):
        load({"BATON_CONFIG": str(missing)})


def test_errors_name_the_file_and_key_in_one_line(tmp_path: Path) -> None:
    toml = tmp_path / "baton.toml"
    _write(toml, "web_prot = 1\n")
    assert _error(tmp_path) == f"{toml}: unknown key 'web_prot' (did you mean 'web_port'?)"
    _write(toml, '[kafka]\nusername = "u"\n')
    assert _error(tmp_path).startswith(f"{toml}: key kafka.username: ")
    _write(toml, 'web_port = "soon"\n')
    assert _error(tmp_path) == (
        f"{toml}: key web_port: BATON_WEB_PORT must be an integer, got 'soon'"
    )
    _write(toml, "web_port = [1\n")
    assert _error(tmp_path).startswith(f"{toml}: not valid TOML: ")
    _write(toml, "")
    _write(tmp_path / ".env", "BATON_STORE=disk\n")
    assert _error(tmp_path).startswith(f"{tmp_path / '.env'}: BATON_STORE must be")
    _write(tmp_path / ".env", "BATON_ORDERS_AUTH Bearer dotenv-secret\n")
    message = _error(tmp_path)
    assert message == f"{tmp_path / '.env'}:1: not a KEY=value line"
    # The environment's own errors name the variable, as before.
    (tmp_path / ".env").unlink()
    assert _error(tmp_path, {"BATON_WEB_PORT": "x"}).startswith("BATON_WEB_PORT must be")


def test_dotenv_reads_quotes_comments_and_names_the_bad_line(tmp_path: Path) -> None:
    _write(
        tmp_path / ".env",
        "BATON_NAMESPACE='shop' # ours\nBATON_WEB_BIND=\"0.0.0.0\"\n"
        "BATON_WEB_TOKEN='a#b c'\nBATON_LOG_LEVEL=debug # loud\n",
    )
    s = load({}, cwd=tmp_path)
    assert (s.namespace, s.web_bind, s.web_token) == ("shop", "0.0.0.0", "a#b c")
    assert s.log_level == "debug"
    _write(tmp_path / ".env", "BATON_NAMESPACE=shop\n\n# next\nBATON_WEB_TOKEN\n")
    assert _error(tmp_path) == f"{tmp_path / '.env'}:4: not a KEY=value line"


@pytest.mark.parametrize(
    ("toml", "secret"),
    [
        ('broker = "http://svc:broker-pw-123@k1:9092"', "broker-pw-123"),
        ('orders_auth = "Bearer orders-secret"', "orders-secret"),
        ('schema_registry_user_info = "no-colon-secret"', "no-colon-secret"),
        ('signing_keys = "k1:short-secret"', "short-secret"),
        ('[kafka]\nsecurity_protocol = "SSL"\npassword = "kafka-pw-123"', "kafka-pw-123"),
    ],
)
def test_no_error_echoes_a_secret(tmp_path: Path, toml: str, secret: str) -> None:
    path = _write(tmp_path / "baton.toml", toml + "\n")
    message = _error(tmp_path)
    assert secret not in message and message.startswith(f"{path}: key ")


def test_every_secret_can_come_from_a_file_and_a_child_gets_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = _write(tmp_path / "anthropic_key", "sk-ant-from-file\n")
    pw = _write(tmp_path / "kafka_pw", "kafka-pw-from-file")
    _write(
        tmp_path / "baton.toml",
        f'[kafka]\nsecurity_protocol = "SASL_SSL"\nusername = "svc"\npassword_file = "{pw}"\n',
    )
    s = load({"ANTHROPIC_API_KEY_FILE": str(key)}, cwd=tmp_path)
    assert s.anthropic_api_key == "sk-ant-from-file" and s.llm == "anthropic"
    assert s.kafka.password == "kafka-pw-from-file"
    assert s.secret_files == {"ANTHROPIC_API_KEY": key, "BATON_KAFKA_PASSWORD": pw}
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    env = child_env(s)
    assert env["ANTHROPIC_API_KEY_FILE"] == str(key) and "ANTHROPIC_API_KEY" not in env
    assert env["BATON_KAFKA_PASSWORD_FILE"] == str(pw) and "BATON_KAFKA_PASSWORD" not in env
    assert not any("from-file" in value for value in env.values())
    assert load(env) == s
    # A secret changed in code is no longer the file's: the child gets the new value.
    changed = s.with_(anthropic_api_key="sk-ant-changed")
    assert changed.to_env()["ANTHROPIC_API_KEY"] == "sk-ant-changed"
    assert "ANTHROPIC_API_KEY_FILE" not in changed.to_env()
    assert changed.secret_files == {"BATON_KAFKA_PASSWORD": pw}
    # The environment's value wins over the file's *_FILE, and both in one source is refused.
    assert load({"BATON_KAFKA_PASSWORD": "env-pw"}, cwd=tmp_path).kafka.password == "env-pw"
    both = {"BATON_WEB_TOKEN": "a", "BATON_WEB_TOKEN_FILE": str(key)}
    assert _error(tmp_path, both).endswith("give BATON_WEB_TOKEN or BATON_WEB_TOKEN_FILE, not both")
    unreadable = {"BATON_WEB_TOKEN_FILE": str(tmp_path / "missing")}
    assert "BATON_WEB_TOKEN_FILE names no readable file" in _error(tmp_path, unreadable)


def test_every_setting_is_declared_and_documented() -> None:
    undeclared = {f.name for f in fields(Settings) if "spec" not in f.metadata}
    assert undeclared == {"kafka", "broker_given", "secret_files"}
    text = reference.render()
    for spec in specs():
        assert f"`{spec.env}`" in text and spec.help in text
    assert reference.PATH.read_text("utf-8") == text, (
        "docs/configuration.md is stale: run python -m baton_kafka.streams.config.reference"
    )
    # The README sends its readers to the reference instead of keeping a table of its own.
    readme = (reference.PATH.parents[1] / "README.md").read_text("utf-8")
    assert "docs/configuration.md" in readme and "| `BATON_BROKER` |" not in readme


def test_the_kafka_client_options_are_aiokafka_s_and_applied() -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    from baton_kafka.streams.kafka.connect import new_consumer, new_producer
    from baton_kafka.streams.kafka.faust_producer import configured_producer

    taken = {
        "producer": set(inspect.signature(AIOKafkaProducer.__init__).parameters),
        "consumer": set(inspect.signature(AIOKafkaConsumer.__init__).parameters),
    }
    for option, (_, clients) in CLIENT_OPTIONS.items():
        assert all(option in taken[client] for client in clients), option
    s = load(
        {
            "BATON_KAFKA_CLIENT_LINGER_MS": "7",
            "BATON_KAFKA_CLIENT_MAX_POLL_RECORDS": "9",
            "BATON_KAFKA_CLIENT_REQUEST_TIMEOUT_MS": "12345",
        }
    )

    async def built() -> tuple[int, int, int]:
        producer, consumer = new_producer(s), new_consumer(s)
        try:
            return (
                producer._request_timeout_ms,
                consumer._client._request_timeout_ms,
                consumer._max_poll_records,
            )
        finally:
            await producer.stop()
            await consumer.stop()

    assert asyncio.run(built()) == (12345, 12345, 9)
    # Faust's own consumers: the options set on the consumer it built, before it starts.
    from aiokafka import AIOKafkaConsumer

    from baton_kafka.streams.kafka.faust_consumer import apply_options

    async def faust_built() -> tuple[int, int, int]:
        consumer = AIOKafkaConsumer(bootstrap_servers="127.0.0.1:1", max_poll_records=500)
        try:
            apply_options(consumer, s.kafka_client.consumer)
            return (
                consumer._max_poll_records,
                consumer._request_timeout_ms,
                consumer._client._request_timeout_ms,
            )
        finally:
            await consumer.stop()

    assert asyncio.run(faust_built()) == (9, 12345, 12345)
    # Faust's producer gets them over its own settings, idempotence kept.
    faust_producer = object.__new__(configured_producer(s.kafka_client.producer, idempotent=True))
    faust_producer.app = SimpleNamespace(in_transaction=False)  # type: ignore[misc]
    assert faust_producer._settings_extra() == {
        "enable_idempotence": True,
        "linger_ms": 7,
        "request_timeout_ms": 12345,
    }
    for env, wanted in [
        ({"BATON_KAFKA_CLIENT_ACKS": "0"}, "is not a Kafka client option baton passes on"),
        ({"BATON_KAFKA_CLIENT_LINGER_MS": "soon"}, "BATON_KAFKA_CLIENT_LINGER_MS must be an"),
        ({"BATON_KAFKA_CLIENT_CHECK_CRCS": "maybe"}, "must be true or false"),
    ]:
        with pytest.raises(SettingsError, match=wanted):
            load(env)


def test_every_bad_client_option_is_told_with_the_other_settings(tmp_path: Path) -> None:
    toml = _write(
        tmp_path / "baton.toml",
        '[kafka.client]\nlinger_ms = -5\ncheck_crcs = "maybe"\nacks = 0\n'
        'compression_type = "zstd"\n',
    )
    with pytest.raises(SettingsError) as raised:
        load({"BATON_WEB_PORT": "0"}, cwd=tmp_path)
    assert sorted(raised.value.lines) == [
        f"{toml}: key kafka.client.acks: BATON_KAFKA_CLIENT_ACKS: 'acks' is not a Kafka client "
        f"option baton passes on (one of {', '.join(CLIENT_OPTIONS)})",
        f"{toml}: key kafka.client.check_crcs: BATON_KAFKA_CLIENT_CHECK_CRCS must be true or "
        "false (1/0, yes/no, on/off), got 'maybe'",
        f"{toml}: key kafka.client.linger_ms: BATON_KAFKA_CLIENT_LINGER_MS must be at least 0, "
        "got -5",
        "BATON_WEB_PORT must be at least 1, got 0",
    ]
    _write(toml, "[kafka.client]\ncheck_crcs = false\nlinger_ms = 0\n")
    options = load({}, cwd=tmp_path).kafka_client
    assert options.consumer == {"check_crcs": False} and options.producer == {"linger_ms": 0}

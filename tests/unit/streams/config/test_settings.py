"""Settings: read from the variables once, secrets hidden, rendered back for child processes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from baton_kafka.agents.models.prices import Price
from baton_kafka.streams.runtime.faust_app.spawn import child_env
from baton_kafka.streams.settings import Settings, SettingsError, load


def test_settings_defaults_and_overrides() -> None:
    s = load({})
    assert s.broker == "kafka://127.0.0.1:9092" and s.web_port == 6066 and s.llm == "offline"
    assert s.data_dir == Path(".baton") and s.orders_url.endswith(".baton/orders.sqlite3")
    keyed = load({"ANTHROPIC_API_KEY": "k", "BATON_MODEL_STRATEGY": "claude-opus-4-6"})
    assert keyed.llm == "anthropic"
    assert keyed.model_for("strategy") == "claude-opus-4-6"
    assert keyed.model_for("understand") == "claude-haiku-4-5"
    assert load({"BATON_MODEL": "m"}).model_for("understand") == "m"
    assert load({"BATON_NAMESPACE": "r1"}).topic("support.replies") == "r1.support.replies"
    with pytest.raises(SettingsError):
        load({"BATON_LLM": "gpt"})
    with pytest.raises(SettingsError):
        load({"BATON_BROKER": "localhost:9092"})
    with pytest.raises(SettingsError, match="BATON_EVENT_LOOP"):
        load({"BATON_EVENT_LOOP": "trio"})
    assert load({}).event_loop == "uvloop" and load({"BATON_EVENT_LOOP": "asyncio"}).event_loop
    assert load({}).embedded_fetch_wait_ms == 100
    assert load({"BATON_EMBEDDED_FETCH_WAIT_MS": "25"}).embedded_fetch_wait_ms == 25
    for bad in ("0", "-5", "20000", "soon"):
        with pytest.raises(SettingsError, match="BATON_EMBEDDED_FETCH_WAIT_MS"):
            load({"BATON_EMBEDDED_FETCH_WAIT_MS": bad})


def test_baton_prices_override_and_extend_the_price_table() -> None:
    env = {"BATON_PRICES": '{"claude-haiku-4-5": [2, 10], "my-model": [1, 2, 3, 4]}'}
    prices = load(env).prices
    assert prices == {"claude-haiku-4-5": Price(2, 10, 2.5, 0.2), "my-model": Price(1, 2, 3, 4)}
    assert load({}).prices == {}
    for bad in ("{nope", "[1]", '{"m": [1]}', '{"m": [1, -2]}', '{"m": "cheap"}'):
        with pytest.raises(SettingsError, match="BATON_PRICES") as raised:
            load({"BATON_PRICES": bad})
        assert "\n" not in str(raised.value)


def test_the_repr_hides_every_secret(tmp_path: Path) -> None:
    cert = tmp_path / "client.pem"
    cert.write_text("cert")
    s = load(
        {
            "BATON_WEB_TOKEN": "web-secret",
            "ANTHROPIC_API_KEY": "sk-ant-secret",
            "BATON_ORDERS_DSN": "postgresql://baton:db-secret@db:5432/orders",
            "BATON_BROKER": "kafka://user:broker-secret@k1:9092",
            "ANTHROPIC_BASE_URL": "https://proxy-user:proxy-secret@proxy.internal/anthropic",
            "BATON_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
            "BATON_KAFKA_USERNAME": "svc",
            "BATON_KAFKA_PASSWORD": "kafka-secret",
            "BATON_KAFKA_CERT_FILE": str(cert),
            "BATON_KAFKA_KEY_PASSWORD": "key-secret",
            "BATON_ORDERS_AUTH": "Authorization: Bearer shop-secret",
        }
    )
    shown = repr(s)
    assert str(s) == shown
    for secret in (
        "web-secret",
        "sk-ant-secret",
        "db-secret",
        "broker-secret",
        "proxy-secret",
        "kafka-secret",
        "key-secret",
        "shop-secret",
    ):
        assert secret not in shown, secret
    assert "orders_auth='Authorization: ***'" in shown
    assert "postgresql://baton:***@db:5432/orders" in shown
    assert "kafka://user:***@k1:9092" in shown
    assert "https://proxy-user:***@proxy.internal/anthropic" in shown
    assert "web_token='***'" in shown and "anthropic_api_key='***'" in shown
    assert "password='***'" in shown and "key_password='***'" in shown
    # Every field is shown, the secrets masked: none is left out of the repr.
    assert all(f"{name}=" in shown for name in ("orders_dsn", "kafka", "prices", "namespace"))
    assert "web_token=None" in repr(Settings())
    assert "anthropic_base_url=None" in repr(Settings())


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"BATON_MODEL": "claude-opus-4-6"},
        {
            "BATON_BROKER": "kafka://k1:9092,k2:9092",
            "BATON_DATA_DIR": "/var/lib/baton",
            "BATON_WEB_TOKEN": "t",
            "BATON_WEB_BIND": "0.0.0.0",
            "BATON_ORDERS_DSN": "postgresql://u:p@h/db",
            "BATON_NAMESPACE": "r1",
            "BATON_TOPIC_TICKETS": "prod.cs.tickets.v1",
            "BATON_TOPIC_DEAD_LETTERS": "prod.cs.dlq.v1",
            "BATON_EMBEDDED_BROKER": "yes",
            "BATON_PRODUCER_ACKS": "-1",
            "BATON_TURN_TIMEOUT": "0.1",
            "BATON_SESSION_TTL": "1e-3",
            "BATON_MODEL_LOOKUP": "claude-opus-4-6",
            "BATON_PRICES": '{"m": [1, 2]}',
            "BATON_LOG_LEVEL": "DEBUG",
            "BATON_LOG_FORMAT": "text",
            "BATON_EVENT_LOOP": "asyncio",
            "BATON_ORDERS_SOURCE": "my_shop.orders:source",
            "BATON_ORDERS_MAP": '{"table": "shop.orders"}',
            "BATON_ORDERS_AUTH": "X-Api-Key: k",
            "BATON_ORDERS_TIMEOUT": "2.5",
            "BATON_ORDERS_RETRIES": "0",
            "BATON_ORDERS_CACHE_TTL": "0",
            "BATON_DEAD_LETTER_FORMAT": "connect",
            "ANTHROPIC_API_KEY": "sk-x",
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:1",
        },
    ],
)
def test_settings_survive_the_round_trip_through_variables(env: dict[str, str]) -> None:
    s = load(env)
    rendered = s.to_env()
    assert load(rendered) == s
    assert all(k.startswith(("BATON_", "ANTHROPIC_")) for k in rendered)
    changed = s.with_(namespace="other", partitions=3, data_dir=Path("/tmp/x"))
    assert load(changed.to_env()) == changed


def test_a_child_gets_the_settings_not_the_parents_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-parent")
    monkeypatch.setenv("BATON_NAMESPACE", "parent")
    monkeypatch.setenv("SOMETHING_ELSE", "kept")
    env = child_env(load({"BATON_NAMESPACE": "child"}))
    assert "ANTHROPIC_API_KEY" not in env
    assert env["BATON_NAMESPACE"] == "child" and env["SOMETHING_ELSE"] == "kept"
    assert load(env).namespace == "child"


def _kafka_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    ca = tmp_path / "ca.pem"
    ca.write_text("not read here\n")
    return {
        "BATON_KAFKA_SECURITY_PROTOCOL": "sasl_ssl",
        "BATON_KAFKA_SASL_MECHANISM": "scram-sha-512",
        "BATON_KAFKA_USERNAME": "baton",
        "BATON_KAFKA_PASSWORD": "kafka-secret-pw",
        "BATON_KAFKA_CA_FILE": str(ca),
        **extra,
    }


def test_kafka_security_is_read_checked_and_rendered_back(tmp_path: Path) -> None:
    assert load({}).kafka.protocol == "PLAINTEXT" and not load({}).kafka.tls
    s = load(_kafka_env(tmp_path))
    assert s.kafka.protocol == "SASL_SSL" and s.kafka.mechanism == "SCRAM-SHA-512"
    assert s.kafka.sasl and s.kafka.tls and s.kafka.ca_file == tmp_path / "ca.pem"
    assert load(s.to_env()) == s
    cert = tmp_path / "client.pem"
    cert.write_text("x")
    mtls = load(
        {
            "BATON_KAFKA_SECURITY_PROTOCOL": "SSL",
            "BATON_KAFKA_CERT_FILE": str(cert),
            "BATON_KAFKA_KEY_FILE": str(cert),
            "BATON_KAFKA_KEY_PASSWORD": "key-secret-pw",
        }
    )
    assert mtls.kafka.cert_file == cert and mtls.kafka.ca_file is None
    assert load(mtls.to_env()) == mtls


def test_the_repr_hides_the_kafka_passwords(tmp_path: Path) -> None:
    s = load(_kafka_env(tmp_path, BATON_KAFKA_SECURITY_PROTOCOL="SASL_SSL"))
    s = s.with_(kafka=replace(s.kafka, key_password="key-secret-pw"))
    shown = repr(s)
    assert "kafka-secret-pw" not in shown and "key-secret-pw" not in shown
    assert "password='***'" in shown and "username='baton'" in shown


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"BATON_KAFKA_SECURITY_PROTOCOL": "TLS"}, "BATON_KAFKA_SECURITY_PROTOCOL must be one of"),
        (
            {"BATON_KAFKA_SECURITY_PROTOCOL": "SASL_SSL", "BATON_KAFKA_SASL_MECHANISM": "GSSAPI"},
            "BATON_KAFKA_SASL_MECHANISM must be one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512",
        ),
        (
            {"BATON_KAFKA_SECURITY_PROTOCOL": "SASL_SSL", "BATON_KAFKA_USERNAME": "u"},
            "SASL_SSL needs BATON_KAFKA_USERNAME and BATON_KAFKA_PASSWORD",
        ),
        (
            {"BATON_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "BATON_KAFKA_PASSWORD": "p"},
            "needs BATON_KAFKA_USERNAME",
        ),
        ({"BATON_KAFKA_PASSWORD": "p"}, "PLAINTEXT does not use a user name or password"),
        (
            {"BATON_KAFKA_SECURITY_PROTOCOL": "SSL", "BATON_KAFKA_CA_FILE": "/no/such/ca.pem"},
            "BATON_KAFKA_CA_FILE names no readable file: /no/such/ca.pem",
        ),
    ],
)
def test_bad_kafka_security_is_one_line(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message) as raised:
        load(env)
    assert "\n" not in str(raised.value)


def test_tls_files_without_tls_and_a_key_without_its_certificate_are_refused(
    tmp_path: Path,
) -> None:
    pem = tmp_path / "x.pem"
    pem.write_text("x")
    with pytest.raises(SettingsError, match=r"does not use TLS files .*: use SSL or SASL_SSL"):
        load({"BATON_KAFKA_CA_FILE": str(pem)})
    with pytest.raises(SettingsError, match="BATON_KAFKA_KEY_FILE needs BATON_KAFKA_CERT_FILE"):
        load({"BATON_KAFKA_SECURITY_PROTOCOL": "SSL", "BATON_KAFKA_KEY_FILE": str(pem)})


def test_the_processing_guarantee_is_a_closed_choice() -> None:
    assert load({}).processing_guarantee == "at_least_once"
    assert load({"BATON_PROCESSING_GUARANTEE": "exactly_once"}).processing_guarantee == (
        "exactly_once"
    )
    with pytest.raises(SettingsError, match="BATON_PROCESSING_GUARANTEE must be"):
        load({"BATON_PROCESSING_GUARANTEE": "twice"})


def test_exactly_once_is_refused_on_the_embedded_broker_in_one_line() -> None:
    from baton_kafka.streams.runtime.faust_app.app import faust_settings
    from baton_kafka.streams.runtime.worker import check_guarantee

    on_kafka = Settings(processing_guarantee="exactly_once")
    check_guarantee(on_kafka)
    assert faust_settings(on_kafka)["processing_guarantee"] == "exactly_once"
    with pytest.raises(SettingsError, match="the embedded broker has none") as info:
        check_guarantee(on_kafka.with_(embedded_broker=True))
    assert "\n" not in str(info.value)


def test_fair_sharing_and_memory_bounds_are_read_checked_and_rendered_back() -> None:
    s = load({})
    assert (s.max_queued_per_session, s.customer_token_budget) == (100, 2_000_000)
    assert (s.customer_budget_window_s, s.index_retention_days, s.index_keep) == (3600, 30, 20)
    env = {
        "BATON_MAX_QUEUED_PER_SESSION": "7",
        "BATON_CUSTOMER_TOKEN_BUDGET": "0",
        "BATON_CUSTOMER_BUDGET_WINDOW_S": "60",
        "BATON_INDEX_RETENTION_DAYS": "0.5",
        "BATON_INDEX_KEEP": "3",
    }
    custom = load(env)
    assert (custom.max_queued_per_session, custom.customer_token_budget) == (7, 0)
    assert (custom.customer_budget_window_s, custom.index_retention_days) == (60, 0.5)
    assert custom.index_keep == 3 and load(custom.to_env()) == custom
    for name, bad in [
        ("BATON_MAX_QUEUED_PER_SESSION", "0"),
        ("BATON_CUSTOMER_TOKEN_BUDGET", "-1"),
        ("BATON_CUSTOMER_BUDGET_WINDOW_S", "0"),
        ("BATON_INDEX_RETENTION_DAYS", "soon"),
        ("BATON_INDEX_KEEP", "0"),
    ]:
        with pytest.raises(SettingsError, match=name) as raised:
            load({name: bad})
        assert "\n" not in str(raised.value)


def test_lag_interval() -> None:
    assert load({}).lag_interval_s == 5.0
    custom = load({"BATON_LAG_INTERVAL": "2.5"})
    assert custom.lag_interval_s == 2.5 and load(custom.to_env()) == custom
    for bad in ("0", "-1", "often"):
        with pytest.raises(SettingsError, match="BATON_LAG_INTERVAL") as raised:
            load({"BATON_LAG_INTERVAL": bad})
        assert "\n" not in str(raised.value)


@pytest.mark.parametrize("auth", ["Bearer secret-token", "Bad Header: x", "X-Key:   "])
def test_a_bad_orders_auth_is_one_line_without_its_value(auth: str) -> None:
    with pytest.raises(SettingsError, match="BATON_ORDERS_AUTH must be 'Header-Name: value'") as e:
        load({"BATON_ORDERS_AUTH": auth})
    assert "secret-token" not in str(e.value) and "\n" not in str(e.value)


def test_the_order_source_settings_and_their_defaults() -> None:
    s = load({"BATON_ORDERS_AUTH": "X-Api-Key:  k-123 "})
    assert s.orders_auth_header == ("X-Api-Key", "k-123")
    assert (s.orders_timeout_s, s.orders_retries, s.orders_cache_ttl_s) == (10.0, 2, 30.0)
    assert Settings().orders_mapping is None and Settings().orders_auth_header is None
    with pytest.raises(SettingsError, match="BATON_ORDERS_CACHE_TTL must be a number"):
        load({"BATON_ORDERS_CACHE_TTL": "soon"})
    from baton_kafka.streams.observe.logs import logging_config

    secrets = logging_config(s)["filters"]["redact"]["secrets"]
    assert "k-123" in secrets


def test_the_dead_letter_format_is_a_closed_choice() -> None:
    assert load({}).dead_letter_format == "baton"
    assert load({"BATON_DEAD_LETTER_FORMAT": "connect"}).dead_letter_format == "connect"
    with pytest.raises(SettingsError, match="BATON_DEAD_LETTER_FORMAT must be 'baton' or"):
        load({"BATON_DEAD_LETTER_FORMAT": "avro"})


def test_every_bad_setting_is_told_at_once_the_kafka_login_and_ranges_included() -> None:
    env = {
        "BATON_ALLOW_UNSIGNED": "maybe",
        "BATON_LOG_LEVEL": "loud",
        "BATON_KAFKA_SECURITY_PROTOCOL": "tls",
        "BATON_KAFKA_SASL_MECHANISM": "kerberos",
        "BATON_MODEL_TIMEOUT": "nan",
        "BATON_MODEL_RATELIMIT_RESERVE": "1.5",
        "BATON_WEB_TOKEN": "web-token-secret",
    }
    with pytest.raises(SettingsError) as raised:
        load(env)
    assert sorted(raised.value.lines) == sorted(
        [
            "BATON_ALLOW_UNSIGNED must be true or false (1/0, yes/no, on/off), got 'maybe'",
            "BATON_LOG_LEVEL must be 'debug', 'info', 'warn', 'warning', 'error' or "
            "'critical', got 'loud'",
            "BATON_KAFKA_SECURITY_PROTOCOL must be one of PLAINTEXT, SSL, SASL_PLAINTEXT, "
            "SASL_SSL, got 'tls'",
            "BATON_KAFKA_SASL_MECHANISM must be one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, "
            "OAUTHBEARER, got 'kerberos'",
            "BATON_MODEL_TIMEOUT must be positive, got 'nan'",
            "BATON_MODEL_RATELIMIT_RESERVE must be a fraction below 1, got '1.5'",
        ]
    )
    assert "web-token-secret" not in str(raised.value)


def test_flags_and_the_log_level_read_their_usual_spellings() -> None:
    for raw, value in [("1", True), (" yes ", True), ("TRUE", True), ("0", False), ("off", False)]:
        assert load({"BATON_ALLOW_UNSIGNED": raw}).allow_unsigned is value
    for raw, level in [("DEBUG", "debug"), ("Warn", "warn"), ("warning", "warning")]:
        s = load({"BATON_LOG_LEVEL": raw})
        assert s.log_level == level and load(s.to_env()) == s

"""The client factory: aiokafka options and the TLS context of the BATON_KAFKA_* settings, the
Faust app's credentials, and the one-line refusals a bad login or certificate turns into."""

from __future__ import annotations

import ssl
from dataclasses import replace
from pathlib import Path

import pytest
from aiokafka.errors import KafkaConnectionError, SaslAuthenticationFailed
from faust.auth import SASLCredentials, SSLCredentials
from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth

from baton_kafka.streams.kafka.connect import (
    BrokerUnreachable,
    client_options,
    new_admin,
    new_consumer,
    new_producer,
    probe_broker,
    refusal,
    ssl_context,
)
from baton_kafka.streams.kafka.faust_auth import broker_credentials
from baton_kafka.streams.observe.logs import logging_config
from baton_kafka.streams.runtime.faust_app.app import faust_settings
from baton_kafka.streams.settings import Settings, SettingsError, load
from tests.fixtures.secure_kafka import make_ca, make_server_cert

BROKER = "kafka://k1:9093;k2:9093"


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A CA made with openssl, once for the module."""
    return make_ca(tmp_path_factory.mktemp("ca"), "unit-ca")


def sasl_ssl(ca_file: Path, **extra: str) -> Settings:
    return load(
        {
            "BATON_BROKER": BROKER,
            "BATON_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
            "BATON_KAFKA_SASL_MECHANISM": "SCRAM-SHA-256",
            "BATON_KAFKA_USERNAME": "baton",
            "BATON_KAFKA_PASSWORD": "kafka-secret-pw",
            "BATON_KAFKA_CA_FILE": str(ca_file),
            **extra,
        }
    )


def test_plaintext_options_are_the_bootstrap_list_only() -> None:
    options = client_options(load({"BATON_BROKER": BROKER}))
    assert options == {"bootstrap_servers": "k1:9093,k2:9093", "security_protocol": "PLAINTEXT"}
    assert broker_credentials(load({})) is None


def test_sasl_ssl_options_carry_the_login_and_one_tls_context(ca: tuple[Path, Path]) -> None:
    s = sasl_ssl(ca[0])
    options = client_options(s)
    assert options["security_protocol"] == "SASL_SSL"
    assert options["sasl_mechanism"] == "SCRAM-SHA-256"
    assert options["sasl_plain_username"] == "baton"
    assert options["sasl_plain_password"] == "kafka-secret-pw"
    context = options["ssl_context"]
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert client_options(sasl_ssl(ca[0]))["ssl_context"] is context
    assert [c["subject"] for c in context.get_ca_certs()] == [((("commonName", "unit-ca"),),)]


async def test_every_client_is_built_with_the_options(ca: tuple[Path, Path]) -> None:
    s = sasl_ssl(ca[0])
    consumer = new_consumer(s, "t1", group_id=None)
    assert consumer._client._security_protocol == "SASL_SSL"
    assert consumer._client._sasl_mechanism == "SCRAM-SHA-256"
    assert consumer._client._ssl_context is ssl_context(s.kafka)
    assert consumer._client._bootstrap_servers == "k1:9093,k2:9093"
    producer = new_producer(s, acks="all")
    assert producer.client._sasl_plain_username == "baton"
    assert producer.client._ssl_context is ssl_context(s.kafka)
    admin = new_admin(s)
    assert admin._client._security_protocol == "SASL_SSL"
    assert admin._client._sasl_plain_password == "kafka-secret-pw"
    await consumer.stop()
    await producer.stop()
    await admin.close()


def test_mtls_loads_the_client_certificate(ca: tuple[Path, Path], tmp_path: Path) -> None:
    make_server_cert(tmp_path, ca)
    s = load(
        {
            "BATON_KAFKA_SECURITY_PROTOCOL": "SSL",
            "BATON_KAFKA_CA_FILE": str(ca[0]),
            "BATON_KAFKA_CERT_FILE": str(tmp_path / "server.pem"),
            "BATON_KAFKA_KEY_FILE": str(tmp_path / "server.key"),
        }
    )
    assert client_options(s)["ssl_context"] is not None
    assert "sasl_mechanism" not in client_options(s)
    wrong_key = replace(s.kafka, key_file=ca[1])
    with pytest.raises(SettingsError, match="not a usable certificate and key") as raised:
        ssl_context(wrong_key)
    assert "\n" not in str(raised.value)


def test_a_ca_file_that_is_no_certificate_is_a_settings_error(tmp_path: Path) -> None:
    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate\n")
    s = load({"BATON_KAFKA_SECURITY_PROTOCOL": "SSL", "BATON_KAFKA_CA_FILE": str(bad)})
    with pytest.raises(SettingsError, match="BATON_KAFKA_CA_FILE holds no usable certificate"):
        client_options(s)


def test_faust_gets_sasl_ssl_with_the_same_context(ca: tuple[Path, Path]) -> None:
    s = sasl_ssl(ca[0])
    credentials = faust_settings(s)["broker_credentials"]
    assert isinstance(credentials, SASLCredentials)
    auth = credentials_to_aiokafka_auth(credentials)
    assert auth == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-256",
        "sasl_plain_username": "baton",
        "sasl_plain_password": "kafka-secret-pw",
        "ssl_context": ssl_context(s.kafka),
    }
    assert "kafka-secret-pw" not in repr(credentials)


def test_faust_gets_sasl_plaintext_and_ssl_credentials(ca: tuple[Path, Path]) -> None:
    plain = load(
        {
            "BATON_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
            "BATON_KAFKA_USERNAME": "u",
            "BATON_KAFKA_PASSWORD": "p",
        }
    )
    auth = credentials_to_aiokafka_auth(broker_credentials(plain))
    assert auth["security_protocol"] == "SASL_PLAINTEXT" and auth["sasl_mechanism"] == "PLAIN"
    assert auth["ssl_context"] is None
    tls = load({"BATON_KAFKA_SECURITY_PROTOCOL": "SSL", "BATON_KAFKA_CA_FILE": str(ca[0])})
    credentials = broker_credentials(tls)
    assert isinstance(credentials, SSLCredentials)
    assert credentials_to_aiokafka_auth(credentials) == {
        "security_protocol": "SSL",
        "ssl_context": ssl_context(tls.kafka),
    }


def test_refusals_name_the_cause_and_never_the_password(ca: tuple[Path, Path]) -> None:
    s = sasl_ssl(ca[0])
    login = refusal(s, SaslAuthenticationFailed("invalid credentials"))
    assert str(login) == (
        f"cannot authenticate to the Kafka broker at {BROKER} (SCRAM-SHA-256 as user 'baton'): "
        "authentication failed"
    )
    untrusted = ssl.SSLCertVerificationError(1, "certificate verify failed")
    untrusted.verify_message = "unable to get local issuer certificate"
    assert str(refusal(s, untrusted)) == (
        f"cannot connect to the Kafka broker at {BROKER}: TLS certificate not trusted "
        "(unable to get local issuer certificate); check BATON_KAFKA_CA_FILE"
    )
    plain = load({"BATON_BROKER": BROKER})
    assert str(refusal(plain, KafkaConnectionError("closed"))) == (
        f"cannot connect to the Kafka broker at {BROKER}: it closed the connection; "
        "is BATON_KAFKA_SECURITY_PROTOCOL=PLAINTEXT the protocol of that listener?"
    )
    assert "PROTOCOL=SASL_SSL" in str(refusal(s, KafkaConnectionError("closed")))
    assert refusal(plain, ConnectionRefusedError()) is None
    for error in (login, refusal(s, untrusted)):
        assert "kafka-secret-pw" not in str(error)


def test_the_worker_log_redacts_the_kafka_passwords(ca: tuple[Path, Path]) -> None:
    config = logging_config(sasl_ssl(ca[0]))
    assert "kafka-secret-pw" in config["filters"]["redact"]["secrets"]


@pytest.mark.parametrize("url", ["user:broker-pass-123@h1:9092", "kafka//user:broker-pass-123@h1"])
def test_a_broker_setting_error_never_echoes_its_password(url: str) -> None:
    with pytest.raises(SettingsError) as caught:
        load({"BATON_BROKER": url})
    assert "broker-pass-123" not in str(caught.value) and "***" in str(caught.value)


async def test_an_unreachable_broker_is_named_without_its_password() -> None:
    # A port nothing listens on: the probe really connects and fails.
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = load({"BATON_BROKER": f"kafka://user:broker-pass-123@127.0.0.1:{port}"})
    assert "broker-pass-123" not in settings.broker_shown
    with pytest.raises(BrokerUnreachable) as caught:
        await probe_broker(settings, timeout=2.0)
    assert "broker-pass-123" not in str(caught.value) and "***@127.0.0.1" in str(caught.value)

"""The Kafka settings: how clients log in (``BATON_KAFKA_*``) and extra client options."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field as Checked

from baton_kafka.agents.dsn import MASK
from baton_kafka.streams.config.spec import (
    SettingsError,
    choice,
    cut,
    flag,
    render_text,
    setting,
    spec_of,
    text,
)
from baton_kafka.streams.config.variables import read_as

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
OAUTHBEARER = "OAUTHBEARER"


def _file(name: str, raw: str) -> Path:
    path = Path(raw)
    if not path.is_file():
        raise SettingsError(f"{name} names no readable file: {raw}")
    return path


def _extensions(name: str, raw: str) -> tuple[tuple[str, str], ...]:
    pairs = []
    for item in filter(None, (part.strip() for part in raw.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SettingsError(f"{name} must be key=value[,key=value...]")
        pairs.append((key, value))
    return tuple(pairs)


def _render_extensions(value: Any) -> str:
    return ",".join(f"{k}={v}" for k, v in value)


@dataclass(frozen=True)
class KafkaSecurity:
    """How clients authenticate to Kafka and encrypt the connection (``BATON_KAFKA_*``)."""

    protocol: str = setting(
        "BATON_KAFKA_SECURITY_PROTOCOL",
        "`SSL`, `SASL_PLAINTEXT` or `SASL_SSL` for a secured or managed cluster "
        "([production](production.md#connecting-to-a-managed-or-secured-cluster))",
        "PLAINTEXT",
        parse=choice(*SECURITY_PROTOCOLS, upper=True),
    )
    mechanism: str = setting(
        "BATON_KAFKA_SASL_MECHANISM",
        "`PLAIN`, `SCRAM-SHA-256`, `SCRAM-SHA-512` or `OAUTHBEARER`",
        "PLAIN",
        parse=choice(*SASL_MECHANISMS, upper=True),
    )
    username: str = setting("BATON_KAFKA_USERNAME", "SASL login's user name", "")
    password: str = setting("BATON_KAFKA_PASSWORD", "SASL login's password", "", secret=True)
    ca_file: Path | None = setting(
        "BATON_KAFKA_CA_FILE",
        "PEM CA that signed the brokers' certificates",
        None,
        parse=_file,
        is_path=True,
        shown="system CAs",
    )
    cert_file: Path | None = setting(
        "BATON_KAFKA_CERT_FILE",
        "client certificate (PEM) for mutual TLS",
        None,
        parse=_file,
        is_path=True,
    )
    key_file: Path | None = setting(
        "BATON_KAFKA_KEY_FILE",
        "the client certificate's key (PEM)",
        None,
        parse=_file,
        is_path=True,
    )
    key_password: str = setting(
        "BATON_KAFKA_KEY_PASSWORD", "password of the client key", "", secret=True
    )
    # OAUTHBEARER: where the token comes from, one of a fixed token, an OIDC client-credentials
    # flow (token URL, client id and secret, scope) or a ``module:callable`` of one's own.
    oauth_token: str = setting(
        "BATON_KAFKA_OAUTH_TOKEN", "OAUTHBEARER: a fixed token", "", secret=True
    )
    oauth_token_url: str = setting(
        "BATON_KAFKA_OAUTH_TOKEN_URL",
        "OAUTHBEARER: the token endpoint of an OIDC client-credentials flow",
        "",
    )
    oauth_client_id: str = setting(
        "BATON_KAFKA_OAUTH_CLIENT_ID", "OAUTHBEARER: the client-credentials flow's client id", ""
    )
    oauth_client_secret: str = setting(
        "BATON_KAFKA_OAUTH_CLIENT_SECRET",
        "OAUTHBEARER: the client-credentials flow's client secret",
        "",
        secret=True,
    )
    oauth_scope: str = setting(
        "BATON_KAFKA_OAUTH_SCOPE", "OAUTHBEARER: the client-credentials flow's scope", ""
    )
    oauth_provider: str = setting(
        "BATON_KAFKA_OAUTH_PROVIDER",
        "OAUTHBEARER: `module:callable` giving the token (a cloud signer such as AWS MSK IAM's)",
        "",
    )
    # SASL extensions sent with the token (Confluent Cloud: logicalCluster, identityPoolId).
    oauth_extensions: tuple[tuple[str, str], ...] = setting(
        "BATON_KAFKA_OAUTH_EXTENSIONS",
        "OAUTHBEARER: `key=value,…` SASL extensions (Confluent Cloud: `logicalCluster`, "
        "`identityPoolId`)",
        (),
        parse=_extensions,
        render=_render_extensions,
    )

    def __repr__(self) -> str:
        shown = {f.name: getattr(self, f.name) for f in fields(self)}
        for f in fields(self):
            spec = spec_of(f)
            if spec and spec.secret and shown[f.name]:
                shown[f.name] = MASK
        return f"KafkaSecurity({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def oauth(self) -> bool:
        return self.sasl and self.mechanism == OAUTHBEARER

    def to_env(self) -> dict[str, str]:
        """These settings as the ``BATON_KAFKA_*`` variables they are read from."""
        env = {}
        for f in fields(self):
            spec = spec_of(f)
            assert spec is not None
            env[spec.env] = spec.render(getattr(self, f.name))
        return env


def check_security(sec: KafkaSecurity) -> KafkaSecurity:
    """Raise ``SettingsError`` on a combination of ``BATON_KAFKA_*`` that cannot connect."""
    protocol = f"BATON_KAFKA_SECURITY_PROTOCOL={sec.protocol}"
    _check_oauth(sec)
    if sec.sasl and not sec.oauth and not (sec.username and sec.password):
        raise SettingsError(f"{protocol} needs BATON_KAFKA_USERNAME and BATON_KAFKA_PASSWORD")
    # Credentials or certificates the protocol would not use are a forgotten protocol, and
    # silently connecting without them would send data in the clear.
    if not sec.sasl and (sec.username or sec.password):
        raise SettingsError(
            f"{protocol} does not use a user name or password (BATON_KAFKA_USERNAME, "
            "BATON_KAFKA_PASSWORD): use SASL_SSL"
        )
    if not sec.tls and (sec.ca_file or sec.cert_file or sec.key_file):
        raise SettingsError(
            f"{protocol} does not use TLS files (BATON_KAFKA_CA_FILE, _CERT_FILE, _KEY_FILE): "
            "use SSL or SASL_SSL"
        )
    if sec.key_file and not sec.cert_file:
        raise SettingsError(
            "BATON_KAFKA_KEY_FILE needs BATON_KAFKA_CERT_FILE (the client certificate)"
        )
    if sec.key_password and not sec.cert_file:
        raise SettingsError("BATON_KAFKA_KEY_PASSWORD needs BATON_KAFKA_CERT_FILE")
    return sec


def _check_oauth(sec: KafkaSecurity) -> None:
    """OAUTHBEARER takes its token from exactly one source, and nothing else uses them."""
    sources = {
        "BATON_KAFKA_OAUTH_TOKEN": sec.oauth_token,
        "BATON_KAFKA_OAUTH_TOKEN_URL": sec.oauth_token_url,
        "BATON_KAFKA_OAUTH_PROVIDER": sec.oauth_provider,
    }
    given = [name for name, value in sources.items() if value]
    flow = (sec.oauth_client_id, sec.oauth_client_secret, sec.oauth_scope, sec.oauth_extensions)
    if not sec.oauth:
        if given or any(flow):
            raise SettingsError(
                "BATON_KAFKA_OAUTH_* settings need BATON_KAFKA_SASL_MECHANISM=OAUTHBEARER "
                "and a SASL_* protocol"
            )
        return
    if sec.username or sec.password:
        raise SettingsError(
            "OAUTHBEARER logs in with a token, not BATON_KAFKA_USERNAME/BATON_KAFKA_PASSWORD"
        )
    if len(given) != 1:
        raise SettingsError(
            "BATON_KAFKA_SASL_MECHANISM=OAUTHBEARER needs exactly one of "
            f"{', '.join(sources)} (got {', '.join(given) or 'none'})"
        )
    if sec.oauth_token_url:
        if not re.match(r"^https?://", sec.oauth_token_url):
            raise SettingsError("BATON_KAFKA_OAUTH_TOKEN_URL must be an http(s):// URL")
        if not (sec.oauth_client_id and sec.oauth_client_secret):
            raise SettingsError(
                "BATON_KAFKA_OAUTH_TOKEN_URL needs BATON_KAFKA_OAUTH_CLIENT_ID and "
                "BATON_KAFKA_OAUTH_CLIENT_SECRET"
            )
    elif sec.oauth_client_id or sec.oauth_client_secret or sec.oauth_scope:
        raise SettingsError(
            "BATON_KAFKA_OAUTH_CLIENT_ID, _CLIENT_SECRET and _SCOPE belong to "
            "BATON_KAFKA_OAUTH_TOKEN_URL (the client-credentials flow)"
        )
    if sec.oauth_provider and not re.fullmatch(r"[\w.]+:[\w.]+", sec.oauth_provider):
        raise SettingsError("BATON_KAFKA_OAUTH_PROVIDER must be module.path:callable")


# Extra options passed on to the Kafka clients baton creates: the option's type and the
# clients (producer, consumer) that take it. What baton sets itself (the servers, the login,
# acks, idempotence, group, offsets, serializers) is not among them.
CLIENT_PREFIX = "BATON_KAFKA_CLIENT_"
CLIENT_OPTIONS: dict[str, tuple[type, tuple[str, ...]]] = {
    "compression_type": (str, ("producer",)),
    "linger_ms": (int, ("producer",)),
    "max_batch_size": (int, ("producer",)),
    "max_request_size": (int, ("producer",)),
    "transaction_timeout_ms": (int, ("producer",)),
    "fetch_max_bytes": (int, ("consumer",)),
    "fetch_max_wait_ms": (int, ("consumer",)),
    "fetch_min_bytes": (int, ("consumer",)),
    "max_partition_fetch_bytes": (int, ("consumer",)),
    "max_poll_records": (int, ("consumer",)),
    "max_poll_interval_ms": (int, ("consumer",)),
    "heartbeat_interval_ms": (int, ("consumer",)),
    "session_timeout_ms": (int, ("consumer",)),
    "rebalance_timeout_ms": (int, ("consumer",)),
    "client_rack": (str, ("consumer",)),
    "check_crcs": (bool, ("consumer",)),
    "request_timeout_ms": (int, ("producer", "consumer")),
    "retry_backoff_ms": (int, ("producer", "consumer")),
    "metadata_max_age_ms": (int, ("producer", "consumer")),
    "connections_max_idle_ms": (int, ("producer", "consumer")),
}


@dataclass(frozen=True)
class KafkaClientOptions:
    """Extra Kafka client options (``[kafka.client]``, ``BATON_KAFKA_CLIENT_<OPTION>``)."""

    options: tuple[tuple[str, Any], ...] = ()

    def for_client(self, kind: str) -> dict[str, Any]:
        """The options a ``producer`` or a ``consumer`` takes."""
        return {k: v for k, v in self.options if kind in CLIENT_OPTIONS[k][1]}

    @property
    def producer(self) -> dict[str, Any]:
        return self.for_client("producer")

    @property
    def consumer(self) -> dict[str, Any]:
        return self.for_client("consumer")

    def __bool__(self) -> bool:
        return bool(self.options)


# The pydantic type each kind of option is read as.
_KINDS: dict[type, Any] = {str: str, int: Annotated[int, Checked(ge=0)], bool: flag}


def read_client_options(env: Mapping[str, str], done: Mapping[str, Any]) -> KafkaClientOptions:
    """Every ``BATON_KAFKA_CLIENT_*`` variable given, checked against the known options (every
    problem told at once)."""
    given = {name: raw for name, raw in env.items() if name.startswith(CLIENT_PREFIX)}
    option = {name: name.removeprefix(CLIENT_PREFIX).lower() for name in given}
    problems = [
        f"{name}: {cut(option[name])} is not a Kafka client option baton passes on "
        f"(one of {', '.join(CLIENT_OPTIONS)})"
        for name in given
        if option[name] not in CLIENT_OPTIONS
    ]
    known = {name: raw for name, raw in given.items() if option[name] in CLIENT_OPTIONS}
    kinds = {name: _KINDS[CLIENT_OPTIONS[option[name]][0]] for name in known}
    read, wrong = read_as(kinds, known)
    if problems or wrong:
        raise SettingsError("\n".join([*problems, *wrong]))
    return KafkaClientOptions(tuple(sorted((option[name], v) for name, v in read.items())))


def write_client_options(value: KafkaClientOptions) -> dict[str, str]:
    return {
        f"{CLIENT_PREFIX}{k.upper()}": ("true" if v is True else "false" if v is False else str(v))
        for k, v in value.options
    }


def security_fields() -> list[tuple[str, Any]]:
    """(field name, spec) of each ``KafkaSecurity`` setting."""
    return [(f.name, spec_of(f)) for f in fields(KafkaSecurity)]


__all__ = [
    "CLIENT_OPTIONS",
    "KafkaClientOptions",
    "KafkaSecurity",
    "check_security",
    "render_text",
    "text",
]

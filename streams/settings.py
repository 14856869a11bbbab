"""One frozen settings object, read from the BATON_* and ANTHROPIC_* variables at start."""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Literal

import orjson

from agents.dsn import MASK, mask_url
from agents.languages import LanguageError, codes
from agents.models.capabilities import StructuredOutput, limits_for
from agents.models.prices import Price, parse_cache_minimums, parse_prices
from agents.models.providers import ProviderError, check_name
from agents.policy import PolicyError
from agents.policy import load as load_policy
from schemas.topics import ROLES, topic_problem

# A provider's name (agents.models.providers.PROVIDERS) or package.module:factory.
LLMKind = str
# Providers whose model names are their own: BATON_MODEL must name one.
NAMED_MODELS = ("bedrock", "vertex", "openai")
StoreKind = Literal["memory", "rocksdb"]
DeadLetterFormat = Literal["baton", "connect"]
DEAD_LETTER_FORMATS: tuple[DeadLetterFormat, ...] = ("baton", "connect")
STORE_KINDS: tuple[StoreKind, ...] = ("memory", "rocksdb")


DEFAULT_STAGE_MODELS = {"understand": "claude-haiku-4-5", "lookup": "claude-haiku-4-5"}
STAGES = ("understand", "lookup", "strategy")


# Settings changes that make a run read and write baton's own SQLite store in its data dir (an
# eval's or a bench's orders), whatever order source the environment names.
OWN_ORDERS: dict[str, str] = {"orders_dsn": "", "orders_source": "", "orders_map": ""}


class SettingsError(ValueError):
    """A ``BATON_*`` variable has a value baton cannot use."""


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
OAUTHBEARER = "OAUTHBEARER"


@dataclass(frozen=True)
class KafkaSecurity:
    """How clients authenticate to Kafka and encrypt the connection (``BATON_KAFKA_*``)."""

    protocol: str = "PLAINTEXT"
    mechanism: str = "PLAIN"
    username: str = ""
    password: str = ""
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    key_password: str = ""
    # OAUTHBEARER: where the token comes from, one of a fixed token, an OIDC client-credentials
    # flow (token URL, client id and secret, scope) or a ``module:callable`` of one's own.
    oauth_token: str = ""
    oauth_token_url: str = ""
    oauth_client_id: str = ""
    oauth_client_secret: str = ""
    oauth_scope: str = ""
    oauth_provider: str = ""
    # SASL extensions sent with the token (Confluent Cloud: logicalCluster, identityPoolId).
    oauth_extensions: tuple[tuple[str, str], ...] = ()

    def __repr__(self) -> str:
        shown = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("password", "key_password", "oauth_token", "oauth_client_secret"):
            if shown[name]:
                shown[name] = MASK
        return f"KafkaSecurity({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    def to_env(self) -> dict[str, str]:
        """These settings as the ``BATON_KAFKA_*`` variables :func:`kafka_security` reads."""
        return {
            "BATON_KAFKA_SECURITY_PROTOCOL": self.protocol,
            "BATON_KAFKA_SASL_MECHANISM": self.mechanism,
            "BATON_KAFKA_USERNAME": self.username,
            "BATON_KAFKA_PASSWORD": self.password,
            "BATON_KAFKA_CA_FILE": str(self.ca_file or ""),
            "BATON_KAFKA_CERT_FILE": str(self.cert_file or ""),
            "BATON_KAFKA_KEY_FILE": str(self.key_file or ""),
            "BATON_KAFKA_KEY_PASSWORD": self.key_password,
            "BATON_KAFKA_OAUTH_TOKEN": self.oauth_token,
            "BATON_KAFKA_OAUTH_TOKEN_URL": self.oauth_token_url,
            "BATON_KAFKA_OAUTH_CLIENT_ID": self.oauth_client_id,
            "BATON_KAFKA_OAUTH_CLIENT_SECRET": self.oauth_client_secret,
            "BATON_KAFKA_OAUTH_SCOPE": self.oauth_scope,
            "BATON_KAFKA_OAUTH_PROVIDER": self.oauth_provider,
            "BATON_KAFKA_OAUTH_EXTENSIONS": ",".join(f"{k}={v}" for k, v in self.oauth_extensions),
        }

    @property
    def oauth(self) -> bool:
        return self.sasl and self.mechanism == OAUTHBEARER


@dataclass(frozen=True)
class Settings:
    """Runtime configuration; build it with :func:`load`, render it with :meth:`to_env`."""

    broker: str = "kafka://127.0.0.1:9092"
    data_dir: Path = Path(".baton")
    # Where the tables live between restarts: memory (rebuilt from the changelogs at every
    # start) or RocksDB files in ``table_dir``, read back and topped up from the changelogs.
    store: StoreKind = "memory"
    # None: a directory of this worker's own under data_dir (see ``table_dir``).
    store_dir: Path | None = None
    web_port: int = 6066
    web_bind: str = "127.0.0.1"
    web_token: str | None = None
    llm: LLMKind = "offline"
    model: str = "claude-sonnet-4-6"
    stage_models: Mapping[str, str] = field(default_factory=dict)
    # The endpoint and key of a provider other than the first-party API (Bedrock's bearer
    # key, Vertex AI's access token, a self-hosted server's key).
    model_url: str | None = None
    model_api_key: str | None = None
    # auto: as the provider declares; off: the schema goes into the prompt instead.
    model_structured_output: StructuredOutput = "auto"
    orders_dsn: str = ""
    # The shop's service policy file (TOML); empty: the demo shop's, shipped with baton.
    policy_file: Path | None = None
    # The languages the shop serves (BCP 47), its default first; empty: the policy's.
    languages: tuple[str, ...] = ()
    # module:factory of an order source of the operator's own; empty: chosen by orders_dsn.
    orders_source: str = ""
    # JSON (or a JSON file's path) mapping the shop's table, view, queries or API to orders.
    orders_map: str = ""
    # "Header-Name: value" sent to an HTTP order source; the value is a secret.
    orders_auth: str = ""
    orders_timeout_s: float = 10.0
    orders_retries: int = 2
    # 0 turns the HTTP source's per-customer cache off.
    orders_cache_ttl_s: float = 30.0
    namespace: str = ""
    # A topic's name chosen by the shop (BATON_TOPIC_<ROLE>), by default name; the namespace
    # still prefixes it.
    topic_names: Mapping[str, str] = field(default_factory=dict)
    partitions: int = 8
    embedded_broker: bool = False
    replication_factor: int = 1
    producer_acks: str = "all"
    max_in_flight: int = 512
    max_buffered: int = 5_000
    # Beyond it a session's tickets are dead-lettered (session_flood) instead of queued.
    max_queued_per_session: int = 100
    turn_timeout_s: float = 300.0
    # The desk's SLA: a hand-off packet's deadline is this long after the customer wrote.
    handoff_deadline_s: float = 3600.0
    session_ttl_s: float = 7 * 24 * 3600.0
    retention_days: float = 7.0
    dead_letter_retention_days: float = 30.0
    # How a dead letter is written: baton's DeadLetter record, or the failed record itself with
    # Kafka Connect's error headers (what Connect tooling re-drives).
    dead_letter_format: DeadLetterFormat = "baton"
    # A Confluent-compatible Schema Registry: outputs registered and framed with their schema
    # id, framed tickets accepted at intake. Empty: off, plain JSON only.
    schema_registry_url: str = ""
    # ``key:secret`` for the registry's basic authentication (Confluent Cloud's API key).
    schema_registry_user_info: str = ""
    expiry_interval_s: float = 60.0
    # Each sample asks the group coordinator and the partition leaders once.
    lag_interval_s: float = 5.0
    model_timeout_s: float = 60.0
    model_max_retries: int = 4
    model_concurrency: int = 256
    ticket_model_budget_s: float = 180.0
    # Share of each API rate limit kept back, and the longest one call waits for a reset.
    model_ratelimit_reserve: float = 0.05
    model_ratelimit_wait_s: float = 30.0
    reask_limit: int = 1
    session_token_budget: int = 200_000
    # Per customer and per worker process (a customer's sessions may live on several workers);
    # 0 turns it off.
    customer_token_budget: int = 2_000_000
    customer_budget_window_s: float = 3600.0
    # How long the customer index keeps a session's summary after the session's last ticket.
    index_retention_days: float = 30.0
    index_keep: int = 20
    # A ticket's created_at further back is read as this long ago: its time words ("last
    # month") count from a date a producer can move back by at most this much.
    ticket_max_age_days: float = 7.0
    log_level: str = "info"
    log_format: Literal["json", "text"] = "json"
    event_loop: Literal["uvloop", "asyncio"] = "uvloop"
    processing_guarantee: Literal["at_least_once", "exactly_once"] = "at_least_once"
    prices: Mapping[str, Price] = field(default_factory=dict)
    cache_min_tokens: Mapping[str, int] = field(default_factory=dict)
    anthropic_api_key: str | None = None
    anthropic_base_url: str | None = None
    kafka: KafkaSecurity = KafkaSecurity()
    # (key id, secret) pairs: the first signs records between stages, every one verifies.
    signing_keys: tuple[tuple[str, str], ...] = ()
    # A worker on Apache Kafka refuses to start without signing keys unless this is set.
    allow_unsigned: bool = False
    # Whether BATON_BROKER was given: commands that can start their own broker do so otherwise.
    broker_given: bool = field(default=False, compare=False)

    @property
    def broker_shown(self) -> str:
        """``broker`` as every message shows it: any password in it masked."""
        return mask_url(self.broker)

    def __repr__(self) -> str:
        shown = {f.name: getattr(self, f.name) for f in fields(self) if f.repr}
        for name in (
            "web_token",
            "anthropic_api_key",
            "model_api_key",
            "schema_registry_user_info",
        ):
            if shown[name]:
                shown[name] = MASK
        if self.orders_auth:
            shown["orders_auth"] = f"{self.orders_auth.partition(':')[0]}: {MASK}"
        # Every URL may carry a user:password@ part.
        for name in (
            "orders_dsn",
            "broker",
            "anthropic_base_url",
            "model_url",
            "schema_registry_url",
        ):
            if shown[name]:
                shown[name] = mask_url(shown[name])
        shown["signing_keys"] = tuple((kid, MASK) for kid, _ in self.signing_keys)
        return f"Settings({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    def topic(self, name: str) -> str:
        """Full name of topic ``name`` (a default name) as chosen, in this namespace."""
        name = self.topic_names.get(name, name)
        return f"{self.namespace}.{name}" if self.namespace else name

    @property
    def app_id(self) -> str:
        return f"baton-{self.namespace}" if self.namespace else "baton"

    @property
    def orders_url(self) -> str:
        return self.orders_dsn or f"sqlite:///{(self.data_dir / 'orders.sqlite3').resolve()}"

    @property
    def orders_mapping(self) -> dict[str, object] | None:
        """``orders_map`` read (from its file when it names one); None when not set."""
        return _orders_map(self.orders_map)

    @property
    def orders_auth_header(self) -> tuple[str, str] | None:
        """``orders_auth`` as (header name, value); None when not set."""
        name, _, value = self.orders_auth.partition(":")
        return (name.strip(), value.strip()) if self.orders_auth else None

    @property
    def table_dir(self) -> Path:
        """The RocksDB store's directory: ``store_dir``, or one per host and web port (two
        workers of one host cannot share a port) under ``data_dir/store``."""
        if self.store_dir is not None:
            return self.store_dir
        return self.data_dir / "store" / self.app_id / f"{socket.gethostname()}-{self.web_port}"

    def model_for(self, stage: str) -> str:
        return self.stage_models.get(stage, self.model)

    def with_(self, **changes: object) -> Settings:
        return replace(self, **changes)  # type: ignore[arg-type]

    def to_env(self) -> dict[str, str]:
        """These settings as the variables :func:`load` reads: ``load(s.to_env()) == s``."""
        env = {
            "BATON_BROKER": self.broker,
            "BATON_DATA_DIR": str(self.data_dir),
            "BATON_STORE": self.store,
            "BATON_STORE_DIR": str(self.store_dir or ""),
            "BATON_WEB_PORT": str(self.web_port),
            "BATON_WEB_BIND": self.web_bind,
            "BATON_WEB_TOKEN": self.web_token or "",
            "BATON_LLM": self.llm,
            "BATON_MODEL": self.model,
            "BATON_MODEL_URL": self.model_url or "",
            "BATON_MODEL_API_KEY": self.model_api_key or "",
            "BATON_MODEL_STRUCTURED_OUTPUT": self.model_structured_output,
            "BATON_ORDERS_DSN": self.orders_dsn,
            "BATON_POLICY": str(self.policy_file or ""),
            "BATON_LANGUAGES": ",".join(self.languages),
            "BATON_ORDERS_SOURCE": self.orders_source,
            "BATON_ORDERS_MAP": self.orders_map,
            "BATON_ORDERS_AUTH": self.orders_auth,
            "BATON_ORDERS_TIMEOUT": repr(self.orders_timeout_s),
            "BATON_ORDERS_RETRIES": str(self.orders_retries),
            "BATON_ORDERS_CACHE_TTL": repr(self.orders_cache_ttl_s),
            "BATON_NAMESPACE": self.namespace,
            "BATON_PARTITIONS": str(self.partitions),
            "BATON_EMBEDDED_BROKER": "1" if self.embedded_broker else "0",
            "BATON_ALLOW_UNSIGNED": "1" if self.allow_unsigned else "0",
            "BATON_REPLICATION_FACTOR": str(self.replication_factor),
            "BATON_PRODUCER_ACKS": self.producer_acks,
            "BATON_MAX_IN_FLIGHT": str(self.max_in_flight),
            "BATON_MAX_BUFFERED": str(self.max_buffered),
            "BATON_MAX_QUEUED_PER_SESSION": str(self.max_queued_per_session),
            "BATON_TURN_TIMEOUT": repr(self.turn_timeout_s),
            "BATON_HANDOFF_DEADLINE": repr(self.handoff_deadline_s),
            "BATON_SESSION_TTL": repr(self.session_ttl_s),
            "BATON_RETENTION_DAYS": repr(self.retention_days),
            "BATON_DEAD_LETTER_RETENTION_DAYS": repr(self.dead_letter_retention_days),
            "BATON_DEAD_LETTER_FORMAT": self.dead_letter_format,
            "BATON_SCHEMA_REGISTRY_URL": self.schema_registry_url,
            "BATON_SCHEMA_REGISTRY_USER_INFO": self.schema_registry_user_info,
            "BATON_EXPIRY_INTERVAL": repr(self.expiry_interval_s),
            "BATON_LAG_INTERVAL": repr(self.lag_interval_s),
            "BATON_MODEL_TIMEOUT": repr(self.model_timeout_s),
            "BATON_MODEL_MAX_RETRIES": str(self.model_max_retries),
            "BATON_MODEL_CONCURRENCY": str(self.model_concurrency),
            "BATON_TICKET_MODEL_BUDGET": repr(self.ticket_model_budget_s),
            "BATON_MODEL_RATELIMIT_RESERVE": repr(self.model_ratelimit_reserve),
            "BATON_MODEL_RATELIMIT_WAIT": repr(self.model_ratelimit_wait_s),
            "BATON_REASK_LIMIT": str(self.reask_limit),
            "BATON_SESSION_TOKEN_BUDGET": str(self.session_token_budget),
            "BATON_CUSTOMER_TOKEN_BUDGET": str(self.customer_token_budget),
            "BATON_CUSTOMER_BUDGET_WINDOW_S": repr(self.customer_budget_window_s),
            "BATON_INDEX_RETENTION_DAYS": repr(self.index_retention_days),
            "BATON_INDEX_KEEP": str(self.index_keep),
            "BATON_TICKET_MAX_AGE_DAYS": repr(self.ticket_max_age_days),
            "BATON_LOG_LEVEL": self.log_level,
            "BATON_LOG_FORMAT": self.log_format,
            "BATON_EVENT_LOOP": self.event_loop,
            "BATON_PROCESSING_GUARANTEE": self.processing_guarantee,
        }
        # BATON_MODEL is always given, so the stage models must all be spelled out.
        env |= {f"BATON_MODEL_{stage.upper()}": m for stage, m in self.stage_models.items()}
        env |= {
            f"BATON_TOPIC_{role.upper()}": self.topic_names[default]
            for role, default in ROLES.items()
            if default in self.topic_names
        }
        if self.prices:
            rows = {
                m: [p.input, p.output, p.cache_write, p.cache_read] for m, p in self.prices.items()
            }
            env["BATON_PRICES"] = orjson.dumps(rows).decode()
        if self.cache_min_tokens:
            env["BATON_CACHE_MIN_TOKENS"] = orjson.dumps(dict(self.cache_min_tokens)).decode()
        env |= self.kafka.to_env()
        if self.signing_keys:
            env["BATON_SIGNING_KEYS"] = ",".join(f"{k}:{v}" for k, v in self.signing_keys)
        if self.anthropic_api_key:
            env["ANTHROPIC_API_KEY"] = self.anthropic_api_key
        if self.anthropic_base_url:
            env["ANTHROPIC_BASE_URL"] = self.anthropic_base_url
        return env


def _int(env: Mapping[str, str], name: str, default: int, minimum: int = 0) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise SettingsError(f"{name} must be at least {minimum}, got {value}")
    return value


def _fraction(env: Mapping[str, str], name: str, default: float) -> float:
    value = _float(env, name, default)
    if value >= 1:
        raise SettingsError(f"{name} must be a fraction below 1, got {env[name]!r}")
    return value


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a number, got {raw!r}") from None
    if value <= 0:
        raise SettingsError(f"{name} must be positive, got {raw!r}")
    return value


def _seconds_or_off(env: Mapping[str, str], name: str, default: float) -> float:
    if env.get(name, "").strip() in ("0", "0.0"):
        return 0.0
    return _float(env, name, default)


def _orders_map(raw: str) -> dict[str, object] | None:
    """BATON_ORDERS_MAP's JSON object, given inline or as a file's path."""
    if not raw.strip():
        return None
    text = raw
    if not raw.lstrip().startswith("{"):
        try:
            text = Path(raw).read_text("utf-8")
        except OSError as exc:
            raise SettingsError(
                f"BATON_ORDERS_MAP is neither a JSON object nor a readable file: {exc}"
            ) from None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise SettingsError(f"BATON_ORDERS_MAP is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise SettingsError("BATON_ORDERS_MAP must be a JSON object")
    return value


def _orders_auth(raw: str) -> str:
    name, sep, value = raw.partition(":")
    if raw and (not sep or not re.fullmatch(r"[A-Za-z0-9-]+", name.strip()) or not value.strip()):
        # Never the value in the message: it is the secret.
        raise SettingsError("BATON_ORDERS_AUTH must be 'Header-Name: value'")
    return raw


def _acks(raw: str) -> str:
    if raw not in ("all", "-1", "0", "1"):
        raise SettingsError(f"BATON_PRODUCER_ACKS must be all, 0 or 1, got {raw!r}")
    return "all" if raw == "-1" else raw


def _prices(env: Mapping[str, str]) -> dict[str, Price]:
    try:
        return parse_prices(env.get("BATON_PRICES", ""), "BATON_PRICES")
    except ValueError as exc:
        raise SettingsError(str(exc)) from None


def _cache_minimums(env: Mapping[str, str]) -> dict[str, int]:
    try:
        return parse_cache_minimums(env.get("BATON_CACHE_MIN_TOKENS", ""), "BATON_CACHE_MIN_TOKENS")
    except ValueError as exc:
        raise SettingsError(str(exc)) from None


def _llm(env: Mapping[str, str]) -> str:
    llm = env.get("BATON_LLM") or ("anthropic" if env.get("ANTHROPIC_API_KEY") else "offline")
    try:
        check_name(llm)
    except ProviderError as exc:
        raise SettingsError(str(exc)) from None
    if llm in NAMED_MODELS and not env.get("BATON_MODEL"):
        raise SettingsError(f"BATON_LLM={llm} needs BATON_MODEL: the model's name there")
    return llm


def _choice(env: Mapping[str, str], name: str, choices: tuple[str, ...], default: str) -> str:
    value = (env.get(name) or default).upper()
    if value not in choices:
        raise SettingsError(f"{name} must be one of {', '.join(choices)}, got {env[name]!r}")
    return value


def _registry_url(raw: str) -> str:
    url = raw.strip().rstrip("/")
    if url and not re.match(r"^https?://[^/\s]+", url):
        raise SettingsError(
            f"BATON_SCHEMA_REGISTRY_URL must look like https://host[:port], got {mask_url(url)!r}"
        )
    return url


def _user_info(raw: str) -> str:
    if raw and ":" not in raw:
        raise SettingsError("BATON_SCHEMA_REGISTRY_USER_INFO must look like key:secret")
    return raw


def _file(env: Mapping[str, str], name: str) -> Path | None:
    raw = env.get(name)
    if not raw:
        return None
    path = Path(raw)
    if not path.is_file():
        raise SettingsError(f"{name} names no readable file: {raw}")
    return path


def kafka_security(env: Mapping[str, str]) -> KafkaSecurity:
    """The ``BATON_KAFKA_*`` variables, checked: raises ``SettingsError`` on a bad combination."""
    sec = KafkaSecurity(
        protocol=_choice(env, "BATON_KAFKA_SECURITY_PROTOCOL", SECURITY_PROTOCOLS, "PLAINTEXT"),
        mechanism=_choice(env, "BATON_KAFKA_SASL_MECHANISM", SASL_MECHANISMS, "PLAIN"),
        username=env.get("BATON_KAFKA_USERNAME", ""),
        password=env.get("BATON_KAFKA_PASSWORD", ""),
        ca_file=_file(env, "BATON_KAFKA_CA_FILE"),
        cert_file=_file(env, "BATON_KAFKA_CERT_FILE"),
        key_file=_file(env, "BATON_KAFKA_KEY_FILE"),
        key_password=env.get("BATON_KAFKA_KEY_PASSWORD", ""),
        oauth_token=env.get("BATON_KAFKA_OAUTH_TOKEN", ""),
        oauth_token_url=env.get("BATON_KAFKA_OAUTH_TOKEN_URL", ""),
        oauth_client_id=env.get("BATON_KAFKA_OAUTH_CLIENT_ID", ""),
        oauth_client_secret=env.get("BATON_KAFKA_OAUTH_CLIENT_SECRET", ""),
        oauth_scope=env.get("BATON_KAFKA_OAUTH_SCOPE", ""),
        oauth_provider=env.get("BATON_KAFKA_OAUTH_PROVIDER", ""),
        oauth_extensions=_extensions(env.get("BATON_KAFKA_OAUTH_EXTENSIONS", "")),
    )
    protocol = f"BATON_KAFKA_SECURITY_PROTOCOL={sec.protocol}"
    _check_oauth(sec)
    if sec.sasl and not sec.oauth and not (sec.username and sec.password):
        raise SettingsError(f"{protocol} needs BATON_KAFKA_USERNAME and BATON_KAFKA_PASSWORD")
    # Credentials or certificates the protocol would not use are a forgotten protocol, and
    # silently connecting without them would send data in the clear.
    if not sec.sasl and (sec.username or sec.password):
        raise SettingsError(f"{protocol} does not use a user name or password: use SASL_SSL")
    if not sec.tls and (sec.ca_file or sec.cert_file or sec.key_file):
        raise SettingsError(f"{protocol} does not use TLS files: use SSL or SASL_SSL")
    if sec.key_file and not sec.cert_file:
        raise SettingsError(
            "BATON_KAFKA_KEY_FILE needs BATON_KAFKA_CERT_FILE (the client certificate)"
        )
    if sec.key_password and not sec.cert_file:
        raise SettingsError("BATON_KAFKA_KEY_PASSWORD needs BATON_KAFKA_CERT_FILE")
    return sec


def _extensions(raw: str) -> tuple[tuple[str, str], ...]:
    pairs = []
    for item in filter(None, (part.strip() for part in raw.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SettingsError("BATON_KAFKA_OAUTH_EXTENSIONS must be key=value[,key=value...]")
        pairs.append((key, value))
    return tuple(pairs)


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


_KEY_ID = re.compile(r"[A-Za-z0-9_.-]{1,32}")
MIN_SIGNING_SECRET = 16


def _signing_keys(raw: str) -> tuple[tuple[str, str], ...]:
    """``id:secret[,id:secret...]``: the first signs, all verify (so keys rotate live)."""
    keys: list[tuple[str, str]] = []
    for item in filter(None, (part.strip() for part in raw.split(","))):
        kid, sep, secret = item.partition(":")
        if not sep or not _KEY_ID.fullmatch(kid):
            raise SettingsError(
                "BATON_SIGNING_KEYS must be id:secret[,id:secret...] with ids of letters, "
                "digits, '.', '_' or '-'"
            )
        if len(secret) < MIN_SIGNING_SECRET:
            raise SettingsError(
                f"BATON_SIGNING_KEYS: the secret of key {kid!r} must have at least "
                f"{MIN_SIGNING_SECRET} characters"
            )
        if any(kid == known for known, _ in keys):
            raise SettingsError(f"BATON_SIGNING_KEYS: key id {kid!r} given twice")
        keys.append((kid, secret))
    return tuple(keys)


def _policy_file(env: Mapping[str, str]) -> Path | None:
    """``BATON_POLICY``, read and validated now: a bad policy stops the start in one line."""
    if not env.get("BATON_POLICY"):
        return None
    path = Path(env["BATON_POLICY"])
    try:
        load_policy(path)
    except PolicyError as exc:
        raise SettingsError(f"BATON_POLICY: {exc}") from None
    return path


def _languages(raw: str) -> tuple[str, ...]:
    """``BATON_LANGUAGES``: comma-separated BCP 47 codes, the default first."""
    if not raw.strip():
        return ()
    try:
        return codes(raw.split(","))
    except LanguageError as exc:
        raise SettingsError(f"BATON_LANGUAGES: {exc}") from None


def _topic_names(env: Mapping[str, str]) -> dict[str, str]:
    """The ``BATON_TOPIC_<ROLE>`` names given, by default name."""
    return {
        default: env[f"BATON_TOPIC_{role.upper()}"].strip()
        for role, default in ROLES.items()
        if env.get(f"BATON_TOPIC_{role.upper()}", "").strip()
    }


def check_topics(settings: Settings) -> Settings:
    """Raise ``SettingsError`` (one line, naming the setting) when Kafka would refuse one of
    the topic names ``settings`` make, or two of them are one topic to Kafka."""
    if settings.namespace:
        problem = topic_problem(settings.namespace)
        if problem:
            raise SettingsError(f"BATON_NAMESPACE {_cut(settings.namespace)} {problem}")
    # The tables' changelogs are named by Faust: <app id>-<table>-changelog.
    names = {
        f"{settings.app_id}-{table}-changelog": f"the {table} table's changelog"
        for table in ("batons", "customers")
    }
    for name in names:
        _check_topic(name, "BATON_NAMESPACE", {})
    for role, default in ROLES.items():
        chosen = default in settings.topic_names
        setting = f"BATON_TOPIC_{role.upper()}" if chosen else "BATON_NAMESPACE"
        name = settings.topic(default)
        _check_topic(name, setting, names)
        names[name] = f"the {role.replace('_', ' ')} topic"
    return settings


def _check_topic(name: str, setting: str, taken: Mapping[str, str]) -> None:
    problem = topic_problem(name)
    if problem:
        raise SettingsError(f"{setting}: the topic name {_cut(name)} {problem}")
    if name in taken:
        raise SettingsError(f"{setting}: {_cut(name)} is already {taken[name]}")
    # Kafka refuses a topic whose name differs from another's only by '.' against '_'.
    clash = next((n for n in taken if n.replace(".", "_") == name.replace(".", "_")), None)
    if clash is not None:
        raise SettingsError(
            f"{setting}: Kafka takes {_cut(name)} for {_cut(clash)}, {taken[clash]} ('.' and "
            "'_' collide in topic names)"
        )


def _cut(value: str, limit: int = 80) -> str:
    """A value for a one-line message: quoted, and cut when long."""
    return repr(value if len(value) <= limit else value[: limit - 1] + "…")


def load(env: Mapping[str, str] | None = None, **overrides: object) -> Settings:
    """Build settings from ``env`` (default: ``os.environ``); raises ``SettingsError``."""
    env = os.environ if env is None else env
    llm = _llm(env)
    structured = env.get("BATON_MODEL_STRUCTURED_OUTPUT") or "auto"
    if structured not in ("auto", "on", "off"):
        raise SettingsError(
            f"BATON_MODEL_STRUCTURED_OUTPUT must be 'auto', 'on' or 'off', got {structured!r}"
        )
    # A provider's own defaults for the model time limits (a slow self-hosted server).
    limits = limits_for(llm)
    log_format = env.get("BATON_LOG_FORMAT", "json")
    if log_format not in ("json", "text"):
        raise SettingsError(f"BATON_LOG_FORMAT must be 'json' or 'text', got {log_format!r}")
    event_loop = env.get("BATON_EVENT_LOOP", "uvloop")
    if event_loop not in ("uvloop", "asyncio"):
        raise SettingsError(f"BATON_EVENT_LOOP must be 'uvloop' or 'asyncio', got {event_loop!r}")
    store = env.get("BATON_STORE") or "memory"
    if store not in STORE_KINDS:
        raise SettingsError(f"BATON_STORE must be 'memory' or 'rocksdb', got {store!r}")
    guarantee = env.get("BATON_PROCESSING_GUARANTEE") or "at_least_once"
    if guarantee not in ("at_least_once", "exactly_once"):
        raise SettingsError(
            "BATON_PROCESSING_GUARANTEE must be 'at_least_once' or 'exactly_once', "
            f"got {guarantee!r}"
        )
    dead_letter_format = env.get("BATON_DEAD_LETTER_FORMAT") or "baton"
    if dead_letter_format not in DEAD_LETTER_FORMATS:
        raise SettingsError(
            f"BATON_DEAD_LETTER_FORMAT must be 'baton' or 'connect', got {dead_letter_format!r}"
        )
    broker = env.get("BATON_BROKER", Settings.broker)
    if not broker.startswith("kafka://"):
        raise SettingsError(
            f"BATON_BROKER must look like kafka://host:port, got {mask_url(broker)!r}"
        )
    # Understanding and choosing among orders are extraction tasks: a small fast model does
    # them well; BATON_MODEL alone moves every stage, BATON_MODEL_<STAGE> one of them.
    first_party_names = llm in ("anthropic", "offline")
    stage_models = (
        {} if env.get("BATON_MODEL") or not first_party_names else dict(DEFAULT_STAGE_MODELS)
    )
    stage_models |= {
        stage: env[f"BATON_MODEL_{stage.upper()}"]
        for stage in STAGES
        if env.get(f"BATON_MODEL_{stage.upper()}")
    }
    defaults = Settings()
    settings = Settings(
        broker=broker,
        broker_given="BATON_BROKER" in env,
        data_dir=Path(env.get("BATON_DATA_DIR", ".baton")),
        store=store,
        store_dir=Path(env["BATON_STORE_DIR"]) if env.get("BATON_STORE_DIR") else None,
        web_port=_int(env, "BATON_WEB_PORT", defaults.web_port, 1),
        web_bind=env.get("BATON_WEB_BIND", defaults.web_bind),
        web_token=env.get("BATON_WEB_TOKEN") or None,
        llm=llm,
        model=env.get("BATON_MODEL") or defaults.model,
        stage_models=stage_models,
        model_url=env.get("BATON_MODEL_URL") or None,
        model_api_key=env.get("BATON_MODEL_API_KEY") or None,
        model_structured_output=structured,  # type: ignore[arg-type]
        orders_dsn=env.get("BATON_ORDERS_DSN", ""),
        policy_file=_policy_file(env),
        languages=_languages(env.get("BATON_LANGUAGES", "")),
        orders_source=env.get("BATON_ORDERS_SOURCE", "").strip(),
        orders_map=env.get("BATON_ORDERS_MAP", ""),
        orders_auth=_orders_auth(env.get("BATON_ORDERS_AUTH", "")),
        orders_timeout_s=_float(env, "BATON_ORDERS_TIMEOUT", defaults.orders_timeout_s),
        orders_retries=_int(env, "BATON_ORDERS_RETRIES", defaults.orders_retries),
        orders_cache_ttl_s=_seconds_or_off(
            env, "BATON_ORDERS_CACHE_TTL", defaults.orders_cache_ttl_s
        ),
        namespace=env.get("BATON_NAMESPACE", ""),
        topic_names=_topic_names(env),
        partitions=_int(env, "BATON_PARTITIONS", defaults.partitions, 1),
        embedded_broker=env.get("BATON_EMBEDDED_BROKER", "") in ("1", "true", "yes"),
        allow_unsigned=env.get("BATON_ALLOW_UNSIGNED", "") in ("1", "true", "yes"),
        replication_factor=_int(env, "BATON_REPLICATION_FACTOR", defaults.replication_factor, 1),
        producer_acks=_acks(env.get("BATON_PRODUCER_ACKS", defaults.producer_acks)),
        max_in_flight=_int(env, "BATON_MAX_IN_FLIGHT", defaults.max_in_flight, 1),
        max_buffered=_int(env, "BATON_MAX_BUFFERED", defaults.max_buffered, 1),
        max_queued_per_session=_int(
            env, "BATON_MAX_QUEUED_PER_SESSION", defaults.max_queued_per_session, 1
        ),
        turn_timeout_s=_float(env, "BATON_TURN_TIMEOUT", defaults.turn_timeout_s),
        handoff_deadline_s=_float(env, "BATON_HANDOFF_DEADLINE", defaults.handoff_deadline_s),
        session_ttl_s=_float(env, "BATON_SESSION_TTL", defaults.session_ttl_s),
        retention_days=_float(env, "BATON_RETENTION_DAYS", defaults.retention_days),
        dead_letter_retention_days=_float(
            env, "BATON_DEAD_LETTER_RETENTION_DAYS", defaults.dead_letter_retention_days
        ),
        dead_letter_format=dead_letter_format,
        schema_registry_url=_registry_url(env.get("BATON_SCHEMA_REGISTRY_URL", "")),
        schema_registry_user_info=_user_info(env.get("BATON_SCHEMA_REGISTRY_USER_INFO", "")),
        expiry_interval_s=_float(env, "BATON_EXPIRY_INTERVAL", defaults.expiry_interval_s),
        lag_interval_s=_float(env, "BATON_LAG_INTERVAL", defaults.lag_interval_s),
        model_timeout_s=_float(env, "BATON_MODEL_TIMEOUT", limits.timeout_s),
        model_max_retries=_int(env, "BATON_MODEL_MAX_RETRIES", defaults.model_max_retries),
        model_concurrency=_int(env, "BATON_MODEL_CONCURRENCY", limits.concurrency, 1),
        ticket_model_budget_s=_float(env, "BATON_TICKET_MODEL_BUDGET", limits.ticket_budget_s),
        model_ratelimit_reserve=_fraction(
            env, "BATON_MODEL_RATELIMIT_RESERVE", defaults.model_ratelimit_reserve
        ),
        model_ratelimit_wait_s=_float(
            env, "BATON_MODEL_RATELIMIT_WAIT", defaults.model_ratelimit_wait_s
        ),
        reask_limit=_int(env, "BATON_REASK_LIMIT", defaults.reask_limit),
        session_token_budget=_int(
            env, "BATON_SESSION_TOKEN_BUDGET", defaults.session_token_budget, 1
        ),
        customer_token_budget=_int(
            env, "BATON_CUSTOMER_TOKEN_BUDGET", defaults.customer_token_budget
        ),
        customer_budget_window_s=_float(
            env, "BATON_CUSTOMER_BUDGET_WINDOW_S", defaults.customer_budget_window_s
        ),
        index_retention_days=_float(
            env, "BATON_INDEX_RETENTION_DAYS", defaults.index_retention_days
        ),
        index_keep=_int(env, "BATON_INDEX_KEEP", defaults.index_keep, 1),
        ticket_max_age_days=_float(env, "BATON_TICKET_MAX_AGE_DAYS", defaults.ticket_max_age_days),
        log_level=env.get("BATON_LOG_LEVEL", defaults.log_level).lower(),
        log_format=log_format,  # type: ignore[arg-type]
        event_loop=event_loop,  # type: ignore[arg-type]
        processing_guarantee=guarantee,  # type: ignore[arg-type]
        prices=_prices(env),
        cache_min_tokens=_cache_minimums(env),
        anthropic_api_key=env.get("ANTHROPIC_API_KEY") or None,
        anthropic_base_url=env.get("ANTHROPIC_BASE_URL") or None,
        kafka=kafka_security(env),
        signing_keys=_signing_keys(env.get("BATON_SIGNING_KEYS", "")),
    )
    _orders_map(settings.orders_map)
    known = {f.name for f in fields(Settings)}
    unknown = set(overrides) - known
    if unknown:
        raise SettingsError(f"unknown settings: {', '.join(sorted(unknown))}")
    return check_topics(replace(settings, **overrides))  # type: ignore[arg-type]

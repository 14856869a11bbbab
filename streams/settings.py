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

from agents.dsn import MASK, mask_dsn
from agents.models.capabilities import StructuredOutput, limits_for
from agents.models.prices import Price, parse_cache_minimums, parse_prices
from agents.models.providers import ProviderError, check_name
from agents.policy import PolicyError
from agents.policy import load as load_policy

# A provider's name (agents.models.providers.PROVIDERS) or package.module:factory.
LLMKind = str
# Providers whose model names are their own: BATON_MODEL must name one.
NAMED_MODELS = ("bedrock", "vertex", "openai")
StoreKind = Literal["memory", "rocksdb"]
STORE_KINDS: tuple[StoreKind, ...] = ("memory", "rocksdb")


DEFAULT_STAGE_MODELS = {"understand": "claude-haiku-4-5", "lookup": "claude-haiku-4-5"}
STAGES = ("understand", "lookup", "strategy")


# Settings changes that make a run read and write baton's own SQLite store in its data dir (an
# eval's or a bench's orders), whatever order source the environment names.
OWN_ORDERS: dict[str, str] = {"orders_dsn": "", "orders_source": "", "orders_map": ""}


class SettingsError(ValueError):
    """A ``BATON_*`` variable has a value baton cannot use."""


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


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

    def __repr__(self) -> str:
        shown = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("password", "key_password"):
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
        }


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
    # Whether BATON_BROKER was given: commands that can start their own broker do so otherwise.
    broker_given: bool = field(default=False, compare=False)

    def __repr__(self) -> str:
        shown = {f.name: getattr(self, f.name) for f in fields(self) if f.repr}
        for name in ("web_token", "anthropic_api_key", "model_api_key"):
            if shown[name]:
                shown[name] = MASK
        if self.orders_auth:
            shown["orders_auth"] = f"{self.orders_auth.partition(':')[0]}: {MASK}"
        # Every URL may carry a user:password@ part.
        for name in ("orders_dsn", "broker", "anthropic_base_url", "model_url"):
            if shown[name]:
                shown[name] = mask_dsn(shown[name])
        shown["signing_keys"] = tuple((kid, MASK) for kid, _ in self.signing_keys)
        return f"Settings({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    def topic(self, name: str) -> str:
        """Full name of topic ``name`` in this namespace."""
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
            "BATON_ORDERS_SOURCE": self.orders_source,
            "BATON_ORDERS_MAP": self.orders_map,
            "BATON_ORDERS_AUTH": self.orders_auth,
            "BATON_ORDERS_TIMEOUT": repr(self.orders_timeout_s),
            "BATON_ORDERS_RETRIES": str(self.orders_retries),
            "BATON_ORDERS_CACHE_TTL": repr(self.orders_cache_ttl_s),
            "BATON_NAMESPACE": self.namespace,
            "BATON_PARTITIONS": str(self.partitions),
            "BATON_EMBEDDED_BROKER": "1" if self.embedded_broker else "0",
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
            "BATON_LOG_LEVEL": self.log_level,
            "BATON_LOG_FORMAT": self.log_format,
            "BATON_EVENT_LOOP": self.event_loop,
            "BATON_PROCESSING_GUARANTEE": self.processing_guarantee,
        }
        # BATON_MODEL is always given, so the stage models must all be spelled out.
        env |= {f"BATON_MODEL_{stage.upper()}": m for stage, m in self.stage_models.items()}
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
    )
    protocol = f"BATON_KAFKA_SECURITY_PROTOCOL={sec.protocol}"
    if sec.sasl and not (sec.username and sec.password):
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
    broker = env.get("BATON_BROKER", Settings.broker)
    if not broker.startswith("kafka://"):
        raise SettingsError(f"BATON_BROKER must look like kafka://host:port, got {broker!r}")
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
        orders_source=env.get("BATON_ORDERS_SOURCE", "").strip(),
        orders_map=env.get("BATON_ORDERS_MAP", ""),
        orders_auth=_orders_auth(env.get("BATON_ORDERS_AUTH", "")),
        orders_timeout_s=_float(env, "BATON_ORDERS_TIMEOUT", defaults.orders_timeout_s),
        orders_retries=_int(env, "BATON_ORDERS_RETRIES", defaults.orders_retries),
        orders_cache_ttl_s=_seconds_or_off(
            env, "BATON_ORDERS_CACHE_TTL", defaults.orders_cache_ttl_s
        ),
        namespace=env.get("BATON_NAMESPACE", ""),
        partitions=_int(env, "BATON_PARTITIONS", defaults.partitions, 1),
        embedded_broker=env.get("BATON_EMBEDDED_BROKER", "") in ("1", "true", "yes"),
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
    return replace(settings, **overrides)  # type: ignore[arg-type]

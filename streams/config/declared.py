"""Every setting, declared once: its field, type, default, variable and one-line help (the
model and the shop settings in their own modules)."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from dataclasses import dataclass as _dataclass
from dataclasses import field, fields, replace
from pathlib import Path
from typing import Any, Literal

from baton_kafka.agents.dsn import MASK, mask_url
from baton_kafka.schemas.topics import ROLES
from baton_kafka.streams.config import values as v
from baton_kafka.streams.config.kafka import (
    KafkaClientOptions,
    KafkaSecurity,
    read_client_options,
    write_client_options,
)
from baton_kafka.streams.config.model_settings import ModelSettings
from baton_kafka.streams.config.order_settings import OrderSettings
from baton_kafka.streams.config.rendering import render, secret_values
from baton_kafka.streams.config.spec import (
    choice,
    flag,
    integer,
    path,
    positive,
    seconds_or_off,
    setting,
    spec_of,
    stripped,
)

StoreKind = Literal["memory", "rocksdb"]
DeadLetterFormat = Literal["baton", "connect"]
DEAD_LETTER_FORMATS: tuple[DeadLetterFormat, ...] = ("baton", "connect")
STORE_KINDS: tuple[StoreKind, ...] = ("memory", "rocksdb")
LOG_LEVELS = ("debug", "info", "warn", "warning", "error", "critical")


@_dataclass(frozen=True)
class Settings(OrderSettings, ModelSettings):
    """Runtime configuration; build it with ``load``, render it with :meth:`to_env`."""

    broker: str = setting(
        "BATON_BROKER",
        "Kafka bootstrap (`kafka://h1:9092;h2:9092` for several)",
        "kafka://127.0.0.1:9092",
        parse=v.broker,
    )
    data_dir: Path = setting(
        "BATON_DATA_DIR",
        "local state: the SQLite order store, Faust's data dir",
        Path(".baton"),
        parse=path,
        is_path=True,
    )
    # Where the tables live between restarts: memory (rebuilt from the changelogs at every
    # start) or RocksDB files in ``table_dir``, read back and topped up from the changelogs.
    store: StoreKind = setting(
        "BATON_STORE",
        "where a worker keeps its tables: `memory` (rebuilt from the changelogs at every "
        "start) or `rocksdb` (local disk; needs `pip install 'baton[rocksdb]'`)",
        "memory",
        parse=choice(*STORE_KINDS),
    )
    # None: a directory of this worker's own under data_dir (see ``table_dir``).
    store_dir: Path | None = setting(
        "BATON_STORE_DIR",
        "the RocksDB store's directory; one per worker, locked while the worker runs",
        None,
        parse=path,
        shown="`BATON_DATA_DIR/store/<app id>/<host>-<web port>`",
        is_path=True,
    )
    web_port: int = setting(
        "BATON_WEB_PORT",
        "the worker's HTTP port (`/metrics`, `/health`, `/dashboard`)",
        6066,
        parse=integer(1, 65535),
    )
    web_bind: str = setting(
        "BATON_WEB_BIND",
        "address the HTTP port binds to; anything but loopback needs a token",
        "127.0.0.1",
    )
    web_token: str | None = setting(
        "BATON_WEB_TOKEN",
        "bearer token that reads the HTTP port: metrics, health, the dashboard's figures "
        "(requests without a token get 401); it never decides",
        None,
        secret=True,
    )
    desk_token: str | None = setting(
        "BATON_DESK_TOKEN",
        "bearer token of the dashboard's desk: the hand-off queue, the ids, people's decisions "
        "(reads what BATON_WEB_TOKEN reads too); unset, the desk is off",
        None,
        secret=True,
    )
    action_webhook_secret: str | None = setting(
        "BATON_ACTION_WEBHOOK_SECRET",
        "HMAC secret (16+ characters) the shop's system signs its reports of actions with, "
        "on `POST /actions/webhook` ([actions](actions.md)); unset, the webhook is off",
        None,
        secret=True,
    )
    namespace: str = setting(
        "BATON_NAMESPACE",
        "prefix of every topic, the consumer group and the tables (isolation)",
        "",
    )
    # A topic's name chosen by the shop (BATON_TOPIC_<ROLE>), by default name; the namespace
    # still prefixes it.
    topic_names: Mapping[str, str] = setting(
        "BATON_TOPIC_<ROLE>",
        "the shop's own name of a topic (`BATON_TOPIC_TICKETS=prod.cs.tickets.v1`); "
        "`BATON_NAMESPACE` still prefixes it; a name Kafka would refuse stops the start",
        factory=dict,
        read=v.read_topic_names,
        write=v.write_topic_names,
        also=tuple(f"BATON_TOPIC_{role.upper()}" for role in ROLES),
        shown="the default names ([design](design.md))",
    )
    partitions: int = setting(
        "BATON_PARTITIONS", "partitions of the topics baton creates", 8, parse=integer(1)
    )
    embedded_broker: bool = setting(
        "BATON_EMBEDDED_BROKER",
        "`1` applies the embedded-broker tuning; detected from the cluster id",
        False,
        parse=flag,
        shown="auto",
    )
    embedded_fetch_wait_ms: int = setting(
        "BATON_EMBEDDED_FETCH_WAIT_MS",
        "ms the embedded broker holds each fetch (it answers only when the wait is up): lower "
        "reads a lone ticket sooner for more CPU at rest ([bench](bench.md))",
        100,
        parse=integer(1, 10000),
    )
    replication_factor: int = setting(
        "BATON_REPLICATION_FACTOR",
        "replication factor of the topics baton creates",
        1,
        parse=integer(1),
    )
    producer_acks: str = setting(
        "BATON_PRODUCER_ACKS", "acks of baton's producers: `all`, `0` or `1`", "all", parse=v.acks
    )
    max_in_flight: int = setting(
        "BATON_MAX_IN_FLIGHT",
        "records processed at once per stage and worker",
        512,
        parse=integer(1),
    )
    max_buffered: int = setting(
        "BATON_MAX_BUFFERED",
        "records held per stage and worker (running + waiting their turn)",
        5_000,
        parse=integer(1),
    )
    # Beyond it a session's tickets are dead-lettered (session_flood) instead of queued.
    max_queued_per_session: int = setting(
        "BATON_MAX_QUEUED_PER_SESSION",
        "tickets of one session waiting at the understand stage of a worker; beyond it a "
        "ticket gets a `session_flood` dead letter, so one session cannot stall the others",
        100,
        parse=integer(1),
    )
    # Customers write in bursts ("hi" / "my kettle leaks" / "order K-1002"): 3 s covers the gap
    # between a burst's messages without a customer noticing the wait.
    coalesce_window_s: float = setting(
        "BATON_COALESCE_WINDOW",
        "seconds a session's ticket waits for the session's next ones: tickets that reach "
        "baton no further apart are understood and answered together as one turn (one reply, "
        "a `coalesced` record for each other ticket); 0 turns it off",
        3.0,
        parse=seconds_or_off,
    )
    # A sender's refused tickets (another customer's session) kept as dead letters per minute.
    refusals_per_minute: int = setting(
        "BATON_REFUSALS_PER_MINUTE",
        "refused tickets of one sender (tickets for a session that is not theirs) written as "
        "`session_conflict` dead letters per minute and worker; the rest of the minute are "
        "counted (`throttled`), not kept; 0 keeps all",
        30,
        parse=integer(0),
    )
    turn_timeout_s: float = setting(
        "BATON_TURN_TIMEOUT",
        "longest wait of a ticket for its session's previous ticket (seconds)",
        300.0,
        parse=positive,
    )
    # The agents' clock: 20 s is past a healthy chain's slowest reply and well inside the
    # ticket's time budget, so a customer only hears "still working" when the model is slow.
    first_reply_deadline_s: float = setting(
        "BATON_FIRST_REPLY_DEADLINE",
        "seconds after the customer wrote before a ticket not answered yet gets one holding "
        "reply (status `holding`, a fixed text); 0 turns it off",
        20.0,
        parse=seconds_or_off,
    )
    # The desk's SLA: a hand-off packet's deadline is this long after the customer wrote.
    handoff_deadline_s: float = setting(
        "BATON_HANDOFF_DEADLINE",
        "the desk's SLA in seconds: a hand-off packet's `deadline` is this long after the "
        "customer wrote",
        3600.0,
        parse=positive,
    )
    # A parked offer nobody decides is escalated once: the customer is told it takes longer.
    approval_timeout_s: float = setting(
        "BATON_APPROVAL_TIMEOUT",
        "seconds an offer waits for a person's approval before it is escalated once (a reply "
        "that promises nothing, a hand-off packet `approval_timeout`); 0 turns it off",
        4 * 3600.0,
        parse=seconds_or_off,
        shown="`14400` (4 hours)",
    )
    # Applied decision ids are kept this long in the baton: a copy older is refused by age.
    decision_max_age_s: float = setting(
        "BATON_DECISION_MAX_AGE",
        "seconds after its `decided_at` a person's decision is still applied; older ones (and "
        "any more than 5 minutes ahead of the worker's clock) are dead letters "
        "`decision_expired`; at most `BATON_SESSION_TTL` less those 5 minutes counts",
        24 * 3600.0,
        parse=positive,
        shown="`86400` (1 day)",
    )
    session_ttl_s: float = setting(
        "BATON_SESSION_TTL",
        "idle seconds before a session's baton expires",
        7 * 24 * 3600.0,
        parse=positive,
        shown="`604800` (7 days)",
    )
    retention_days: float = setting(
        "BATON_RETENTION_DAYS",
        "retention of baton's data topics, set when it creates them",
        7.0,
        parse=positive,
    )
    dead_letter_retention_days: float = setting(
        "BATON_DEAD_LETTER_RETENTION_DAYS",
        "retention of the dead-letter topic (kept longer, to be re-driven)",
        30.0,
        parse=positive,
    )
    # How a dead letter is written: baton's DeadLetter record, or the failed record itself with
    # Kafka Connect's error headers (what Connect tooling re-drives).
    dead_letter_format: DeadLetterFormat = setting(
        "BATON_DEAD_LETTER_FORMAT",
        "`baton`: a `DeadLetter` record; `connect`: the failed record as it was read plus "
        "Kafka Connect's `__connect.errors.*` headers ([consuming](consuming.md))",
        "baton",
        parse=choice(*DEAD_LETTER_FORMATS),
    )
    # A Confluent-compatible Schema Registry: outputs registered and framed with their schema
    # id, framed tickets accepted at intake. Empty: off, plain JSON only.
    schema_registry_url: str = setting(
        "BATON_SCHEMA_REGISTRY_URL",
        "a Confluent-compatible Schema Registry: replies, hand-off packets and dead letters "
        "registered (closed JSON Schemas) and framed with their schema id "
        "([consuming](consuming.md#schema-registry))",
        "",
        parse=v.registry_url,
        shown="none (plain JSON)",
    )
    # ``key:secret`` for the registry's basic authentication (Confluent Cloud's API key).
    schema_registry_user_info: str = setting(
        "BATON_SCHEMA_REGISTRY_USER_INFO",
        "`key:secret` for the registry's basic authentication",
        "",
        parse=v.user_info,
        secret=True,
    )
    expiry_interval_s: float = setting(
        "BATON_EXPIRY_INTERVAL",
        "seconds between expiry sweeps",
        60.0,
        parse=positive,
    )
    # Each sample asks the group coordinator and the partition leaders once.
    lag_interval_s: float = setting(
        "BATON_LAG_INTERVAL",
        "seconds between consumer-lag samples (committed offsets against high-water marks)",
        5.0,
        parse=positive,
    )
    # How long the customer index keeps a session's summary after the session's last ticket.
    index_retention_days: float = setting(
        "BATON_INDEX_RETENTION_DAYS",
        "the customer index drops a session's summary this long after its last ticket",
        30.0,
        parse=positive,
    )
    index_keep: int = setting(
        "BATON_INDEX_KEEP",
        "sessions kept per customer in the customer index (the most recent)",
        20,
        parse=integer(1),
    )
    # A ticket's created_at further back is read as this long ago: its time words ("last
    # month") count from a date a producer can move back by at most this much.
    ticket_max_age_days: float = setting(
        "BATON_TICKET_MAX_AGE_DAYS",
        "a ticket's `created_at` further back is read as this many days ago",
        7.0,
        parse=positive,
    )
    log_level: str = setting(
        "BATON_LOG_LEVEL", "worker log level", "info", parse=choice(*LOG_LEVELS, lower=True)
    )
    log_format: Literal["json", "text"] = setting(
        "BATON_LOG_FORMAT",
        "worker logs: one JSON line per event, or `text`",
        "json",
        parse=choice("json", "text"),
    )
    event_loop: Literal["uvloop", "asyncio"] = setting(
        "BATON_EVENT_LOOP",
        "the worker's event loop: `uvloop`, or `asyncio` for the standard one",
        "uvloop",
        parse=choice("uvloop", "asyncio"),
    )
    stage_priority: bool = setting(
        "BATON_STAGE_PRIORITY",
        "`1` runs a ticket already in the chain before a new ticket's first stage (a burst's "
        "tickets finish one after another rather than all late)",
        False,
        parse=flag,
    )
    relay: bool = setting(
        "BATON_RELAY",
        "`0` sends a stage's output only through its topic; `1` also gives it at once to the next "
        "stage when this worker reads its partition (its copy from the topic then stops)",
        True,
        parse=flag,
    )
    processing_guarantee: Literal["at_least_once", "exactly_once"] = setting(
        "BATON_PROCESSING_GUARANTEE",
        "or `exactly_once` (Faust transactions; Apache Kafka only; not recommended: see "
        "[guarantees](guarantees.md#exactly_once))",
        "at_least_once",
        parse=choice("at_least_once", "exactly_once"),
    )
    kafka: KafkaSecurity = field(default_factory=KafkaSecurity)
    kafka_client: KafkaClientOptions = setting(
        "BATON_KAFKA_CLIENT_<OPTION>",
        "an extra option of the Kafka producers and consumers baton creates "
        '(`BATON_KAFKA_CLIENT_LINGER_MS=5`, `[kafka.client] compression_type = "zstd"`)',
        factory=KafkaClientOptions,
        read=read_client_options,
        write=write_client_options,
        prefix="BATON_KAFKA_CLIENT_",
        shown="none",
    )
    # (key id, secret) pairs: the first signs records between stages, every one verifies.
    signing_keys: tuple[tuple[str, str], ...] = setting(
        "BATON_SIGNING_KEYS",
        "`id:secret[,id:secret…]`: HMAC keys of the records between stages; the first "
        "signs, every one verifies; secrets of 16+ characters",
        (),
        parse=v.signing_keys,
        render=v.render_signing_keys,
        secret=True,
        shown="none (a worker on Apache Kafka refuses to start without)",
    )
    # A worker on Apache Kafka refuses to start without signing keys unless this is set.
    allow_unsigned: bool = setting(
        "BATON_ALLOW_UNSIGNED",
        "`1` lets a worker on Apache Kafka run without `BATON_SIGNING_KEYS`",
        False,
        parse=flag,
    )
    # What carries approved offers out on the shop's systems: "" (none: the actions are only
    # written to their topic), "manual" (a person), the path of an HTTP executor's JSON map,
    # or module:factory.
    executor: str = setting(
        "BATON_EXECUTOR",
        "what carries approved offers out: `manual` (a person, through the hand-off queue), "
        "the path of an HTTP executor's JSON map, or `module:factory` ([actions](actions.md))",
        "",
        parse=stripped,
        shown="none: actions are only written to `support.actions`",
    )
    # Daily caps on what executors carry out: a runaway model or a stolen key stops there.
    cap_shop_money: dict[str, float] = setting(
        "BATON_CAP_SHOP_MONEY",
        "the shop's daily cap on actions' money, per currency: `EUR:5000,USD:6000` (`*`: any "
        "other currency; one not named is refused) ([actions](actions.md#daily-caps))",
        factory=dict,
        parse=v.money_caps,
        render=v.render_money_caps,
        shown="none",
    )
    cap_shop_actions: int = setting(
        "BATON_CAP_SHOP_ACTIONS",
        "the shop's daily cap on the number of actions carried out (0: none)",
        0,
        parse=integer(0),
    )
    cap_customer_money: dict[str, float] = setting(
        "BATON_CAP_CUSTOMER_MONEY",
        "each customer's daily cap on actions' money, per currency, as `BATON_CAP_SHOP_MONEY`",
        factory=dict,
        parse=v.money_caps,
        render=v.render_money_caps,
        shown="none",
    )
    cap_customer_actions: int = setting(
        "BATON_CAP_CUSTOMER_ACTIONS",
        "each customer's daily cap on the number of actions carried out (0: none)",
        0,
        parse=integer(0),
    )
    # Whether BATON_BROKER was given: commands that can start their own broker do so otherwise.
    broker_given: bool = field(default=False, compare=False)
    # The secrets read from files (variable -> the file): a child process gets the file's
    # variable, never the secret.
    secret_files: Mapping[str, Path] = field(default_factory=dict)

    @property
    def broker_shown(self) -> str:
        """``broker`` as every message shows it: any password in it masked."""
        return mask_url(self.broker)

    def __repr__(self) -> str:
        shown = {f.name: getattr(self, f.name) for f in fields(self) if f.repr}
        for f in fields(self):
            spec = spec_of(f)
            if spec and spec.secret and shown[f.name]:
                shown[f.name] = MASK
        if self.orders_auth:
            shown["orders_auth"] = f"{self.orders_auth.partition(':')[0]}: {MASK}"
        # Every URL may carry a user:password@ part.
        for name in ("orders_dsn", "broker", "anthropic_base_url", "model_url"):
            if shown[name]:
                shown[name] = mask_url(getattr(self, name))
        if self.schema_registry_url:
            shown["schema_registry_url"] = mask_url(self.schema_registry_url)
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
        return v.orders_map(self.orders_map)

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
        """These settings changed; a secret changed no longer comes from its file."""
        changed = replace(self, **changes)  # type: ignore[arg-type]
        before, after = secret_values(self), secret_values(changed)
        files = {k: p for k, p in self.secret_files.items() if before[k] == after[k]}
        return changed if files == self.secret_files else replace(changed, secret_files=files)

    def to_env(self) -> dict[str, str]:
        """These settings as the variables ``load`` reads: ``load(s.to_env()) == s``; a secret
        read from a file is passed as its file's variable."""
        return render(self)


def shown_order() -> list[Any]:
    """The fields of ``Settings`` and then ``KafkaSecurity`` in the order the reference shows
    them: the core settings, the shop's, the models', then the Kafka login."""
    groups = (Settings, OrderSettings, ModelSettings)
    own = [[f for f in fields(Settings) if f.name in vars(g)["__annotations__"]] for g in groups]
    return [f for group in own for f in group] + list(fields(KafkaSecurity))


def declared() -> list[tuple[str, Any]]:
    """(field name, spec) of every declared setting of ``Settings``, in order."""
    return [(f.name, spec) for f in fields(Settings) if (spec := spec_of(f))]

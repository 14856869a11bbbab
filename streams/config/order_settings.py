"""The shop settings: its policy file, its own stages and where its orders are read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from baton_kafka.streams.config import values as v
from baton_kafka.streams.config.spec import (
    integer,
    positive,
    seconds_or_off,
    setting,
    stripped,
)

# A provider's name (agents.models.providers.PROVIDERS) or package.module:factory.
LLMKind = str


@dataclass(frozen=True)
class OrderSettings:
    """The shop's policy, its own stages and its order source."""

    orders_dsn: str = setting(
        "BATON_ORDERS_DSN",
        "`sqlite:///path`, `postgresql://…`, or a shop's REST API `https://…` "
        "([order sources](extending.md#an-order-source))",
        "",
        secret=True,
        shown="SQLite file in `BATON_DATA_DIR`",
    )
    # The shop's service policy file (TOML); empty: the demo shop's, shipped with baton.
    policy_file: Path | None = setting(
        "BATON_POLICY",
        "the shop's service policy file (TOML): remedies, limits, approvals, hand-offs "
        "([policy](policy.md))",
        None,
        parse=v.policy_file,
        shown="the demo shop's (`agents/policy/default.toml`)",
        is_path=True,
    )
    # The languages the shop serves (BCP 47), its default first; empty: the policy's.
    languages: tuple[str, ...] = setting(
        "BATON_LANGUAGES",
        "the languages the shop serves, BCP 47 codes separated by commas, its default first "
        "(`de,en,zh`): replies are written in the customer's language when it is one of them, "
        "else in the default",
        (),
        parse=v.languages,
        render=",".join,
        shown="the policy's `[shop] languages`",
    )
    # module:attribute of each stage of the shop's own, in the order they are inserted; each
    # Stage says where it goes (its ``after``). Loaded when a worker or a command starts.
    stages: tuple[str, ...] = setting(
        "BATON_STAGES",
        "stages of your own, `module:attribute` separated by commas (a list in `baton.toml`): "
        "each a `Stage`, or a factory called with the settings that returns one, inserted "
        "after the stage its `after` names ([a stage](extending.md#a-stage))",
        (),
        parse=v.stage_refs,
        render=",".join,
        shown="none (the built-in chain)",
    )
    # module:factory of an order source of the operator's own; empty: chosen by orders_dsn.
    orders_source: str = setting(
        "BATON_ORDERS_SOURCE",
        "`module:factory` of an order source of your own, called with the settings",
        "",
        parse=stripped,
    )
    # JSON (or a JSON file's path) mapping the shop's table, view, queries or API to orders.
    orders_map: str = setting(
        "BATON_ORDERS_MAP",
        "JSON (inline or a file's path) mapping the shop's PostgreSQL table, view or queries, "
        "or its REST API, to orders: read-only, no DDL",
        "",
        parse=v.orders_map_text,
        is_path=True,
    )
    # "Header-Name: value" sent to an HTTP order source; the value is a secret.
    orders_auth: str = setting(
        "BATON_ORDERS_AUTH",
        "`Header-Name: value` sent to an HTTP order source",
        "",
        parse=v.orders_auth,
        secret=True,
    )
    orders_timeout_s: float = setting(
        "BATON_ORDERS_TIMEOUT",
        "seconds per request to an HTTP order source, or to connect to PostgreSQL",
        10.0,
        parse=positive,
    )
    orders_retries: int = setting(
        "BATON_ORDERS_RETRIES",
        "retries of an HTTP order source's request after a connection error, timeout, 429 "
        "or 5xx (exponential backoff)",
        2,
        parse=integer(0),
    )
    # 0 turns the HTTP source's per-customer cache off.
    orders_cache_ttl_s: float = setting(
        "BATON_ORDERS_CACHE_TTL",
        "seconds an HTTP order source's answers are kept per customer and order; `0` turns it off",
        30.0,
        parse=seconds_or_off,
    )

"""One frozen settings object, read at start from ``baton.toml``, ``.env`` and the environment.

The settings are declared in :mod:`streams.config.declared`; this module is their import path.
"""

from __future__ import annotations

from baton_kafka.streams.config.declared import (
    DEAD_LETTER_FORMATS,
    STORE_KINDS,
    DeadLetterFormat,
    Settings,
    StoreKind,
)
from baton_kafka.streams.config.kafka import (
    OAUTHBEARER,
    SASL_MECHANISMS,
    SECURITY_PROTOCOLS,
    KafkaClientOptions,
    KafkaSecurity,
)
from baton_kafka.streams.config.loading import kafka_security, load
from baton_kafka.streams.config.model_settings import LLMKind
from baton_kafka.streams.config.spec import SettingsError
from baton_kafka.streams.config.topics import check_topics
from baton_kafka.streams.config.values import (
    DEFAULT_STAGE_MODELS,
    MIN_SIGNING_SECRET,
    NAMED_MODELS,
    STAGES,
)

# Settings changes that make a run read and write baton's own SQLite store in its data dir (an
# eval's or a bench's orders), whatever order source the environment names.
OWN_ORDERS: dict[str, str] = {"orders_dsn": "", "orders_source": "", "orders_map": ""}

__all__ = [
    "DEAD_LETTER_FORMATS",
    "DEFAULT_STAGE_MODELS",
    "MIN_SIGNING_SECRET",
    "NAMED_MODELS",
    "OAUTHBEARER",
    "OWN_ORDERS",
    "SASL_MECHANISMS",
    "SECURITY_PROTOCOLS",
    "STAGES",
    "STORE_KINDS",
    "DeadLetterFormat",
    "KafkaClientOptions",
    "KafkaSecurity",
    "LLMKind",
    "Settings",
    "SettingsError",
    "StoreKind",
    "check_topics",
    "kafka_security",
    "load",
]

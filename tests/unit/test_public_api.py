"""Each package's exported API, pinned: a change to it is a deliberate edit here."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

from baton_kafka import agents, schemas, streams

PINNED: dict[str, list[str]] = {
    "baton_kafka.schemas": [
        "MAX_TEXT_CHARS",
        "SCHEMA_VERSION",
        "Baton",
        "CallUsage",
        "ChainEntry",
        "DeadLetter",
        "Erasure",
        "HandoffPacket",
        "InFlight",
        "IndexUpdate",
        "MemoryIndex",
        "Offer",
        "OfferLine",
        "Order",
        "OrderCandidate",
        "OrderChoice",
        "OrderLine",
        "OrderMatch",
        "Promise",
        "Promised",
        "Reply",
        "SessionSummary",
        "Snapshot",
        "StageRecord",
        "StrategyDraft",
        "Ticket",
        "TicketMemory",
        "Turn",
        "Understanding",
        "UsageTotals",
        "decode",
        "dumps",
        "loads",
    ],
    "baton_kafka.agents": [
        "LLM",
        "Failure",
        "OrderSource",
        "OrderStore",
        "Outcome",
        "StoreUnavailable",
        "decide",
        "look_up",
        "open_source",
        "open_store",
        "understand",
    ],
    "baton_kafka.agents.stages": ["ORDER"],
    "baton_kafka.agents.stages.lookup": ["NAME"],
    "baton_kafka.agents.stages.strategy": ["NAME"],
    "baton_kafka.agents.stages.understand": ["NAME"],
    "baton_kafka.streams.actions": [
        "Executor",
        "ExecutorRefused",
        "ExecutorUnavailable",
        "Outcome",
    ],
    "baton_kafka.agents.articles": [
        "Article",
        "ArticleIndex",
        "ArticlesError",
        "index_for",
        "parse",
        "search",
        "tokens",
    ],
    "baton_kafka.agents.packs": [
        "LANGUAGES",
        "SHIPPED",
        "PackError",
        "all_packs",
        "extend",
        "languages",
        "pack",
        "reset",
        "version",
    ],
    "baton_kafka.agents.policy": [
        "DEFAULT_FILE",
        "ORIGINAL_PAYMENT",
        "Policy",
        "PolicyError",
        "Remedy",
        "default_policy",
        "load",
        "parse",
    ],
    "baton_kafka.agents.guards": [
        "DRIFT",
        "UNTRUSTED",
        "Checked",
        "CustomerOrders",
        "Identifier",
        "Money",
        "audit",
        "check",
        "drift_problems",
        "identifiers",
        "money",
        "product_names",
    ],
    "baton_kafka.agents.models": [
        "LLM",
        "Answer",
        "BudgetExceeded",
        "Capabilities",
        "Limits",
        "ModelFailure",
        "ModelOptions",
        "OutputInvalid",
        "Prompt",
        "ProviderError",
        "Refused",
        "SpendLimit",
        "TimedOut",
        "Truncated",
        "Unavailable",
        "open_llm",
    ],
    "baton_kafka.agents.orders": [
        "HttpMap",
        "HttpOrderSource",
        "OrderSource",
        "OrderStore",
        "OrderWriter",
        "PostgresOrderSource",
        "PostgresOrderStore",
        "SQLiteOrderStore",
        "SourceMisconfigured",
        "SqlMap",
        "StoreUnavailable",
        "WritableStore",
        "load_factory",
        "open_source",
        "open_store",
    ],
    "baton_kafka.agents.rules": ["OfflineLLM"],
    "baton_kafka.agents.testing": [
        "Call",
        "FAULTS",
        "FaultRule",
        "PromptCache",
        "Request",
        "Responder",
        "ScriptedLLM",
        "StandIn",
        "directives",
        "echo_responder",
        "estimate_tokens",
        "read_request",
        "run_in_thread",
    ],
    "baton_kafka.agents.testing.standin": [
        "FAULTS",
        "RULE_BREAKS",
        "FaultRule",
        "PromptCache",
        "RateBudget",
        "Request",
        "Responder",
        "StandIn",
        "WEAK",
        "WeakStyle",
        "directives",
        "echo_responder",
        "estimate_tokens",
        "near_miss",
        "read_request",
        "run_in_thread",
    ],
    "baton_kafka.streams": ["Settings", "SettingsError", "load"],
    "baton_kafka.streams.kafka": [
        "BrokerError",
        "BrokerUnreachable",
        "EmbeddedBroker",
        "Message",
        "TopicMismatch",
        "TopicNames",
        "bootstrap_servers",
        "ensure_topics",
        "probe_broker",
        "publish",
        "read",
    ],
    "baton_kafka.streams.runtime": [
        "BatonStore",
        "Chain",
        "Pipeline",
        "Runtime",
        "STAGES",
        "SessionGate",
        "SessionScheduler",
        "Sink",
        "Stage",
        "StageContext",
        "State",
        "create_app",
        "stage",
    ],
    "baton_kafka.streams.runtime.answers": [],
    "baton_kafka.streams.runtime.faust_app": [],
    "baton_kafka.streams.runtime.people": [],
    "baton_kafka.streams.runtime.records": [],
    "baton_kafka.streams.runtime.session": [],
    "baton_kafka.streams.runtime.trust": [],
    "baton_kafka.streams.testing": [
        "MemoryOrders",
        "MemorySink",
        "MemoryState",
        "MemoryTable",
        "TestPipeline",
    ],
    "baton_kafka.streams.observe": [],
    "baton_kafka.streams.cli": [],
    "baton_kafka.streams.config": [],
    "baton_kafka.streams.admin": [],
    "baton_kafka.streams.debug": [],
    "baton_kafka.streams.eval": [],
    "baton_kafka.streams.bench": [],
}


def _packages() -> list[str]:
    found = []
    for root in (schemas, agents, streams):
        found.append(root.__name__)
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{root.__name__}."):
            if info.ispkg:
                found.append(info.name)
    return sorted(found)


@pytest.mark.parametrize("name", sorted(PINNED))
def test_exported_names_are_pinned(name: str) -> None:
    module = importlib.import_module(name)
    assert sorted(module.__all__) == sorted(PINNED[name])
    missing = [n for n in module.__all__ if getattr(module, n, None) is None]
    assert missing == []


def test_every_package_declares_its_api() -> None:
    undeclared = [p for p in _packages() if not hasattr(importlib.import_module(p), "__all__")]
    assert undeclared == []
    assert set(_packages()) <= set(PINNED)


def test_a_lazy_export_is_the_module_attribute_itself() -> None:
    from baton_kafka.streams.runtime import Pipeline
    from baton_kafka.streams.runtime.pipeline import Pipeline as defined

    assert Pipeline is defined
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        importlib.import_module("baton_kafka.streams.runtime").Nope  # noqa: B018

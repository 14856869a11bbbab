"""The worker's runtime: the Faust app, the pipeline, its stages, batons and redelivery."""

from __future__ import annotations

import importlib
from typing import Any

# Resolved on first use: importing a runtime module must not pull in Faust and the app.
_HOMES = {
    "BatonStore": "baton_kafka.streams.runtime.session.batons",
    "Chain": "baton_kafka.streams.runtime.chain",
    "Pipeline": "baton_kafka.streams.runtime.pipeline",
    "Runtime": "baton_kafka.streams.runtime.faust_app.app",
    "STAGES": "baton_kafka.streams.runtime.chain",
    "SessionGate": "baton_kafka.streams.runtime.session.scheduler",
    "SessionScheduler": "baton_kafka.streams.runtime.session.scheduler",
    "Sink": "baton_kafka.streams.runtime.records.sink",
    "Stage": "baton_kafka.agents.stage",
    "StageContext": "baton_kafka.agents.stage_context",
    "State": "baton_kafka.streams.runtime.session.batons",
    "create_app": "baton_kafka.streams.runtime.faust_app.app",
    "stage": "baton_kafka.agents.declare",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)

"""The worker's runtime: the Faust app, the pipeline, its stages, batons and redelivery."""

from __future__ import annotations

import importlib
from typing import Any

# Resolved on first use: importing a runtime module must not pull in Faust and the app.
_HOMES = {
    "BatonStore": "streams.runtime.batons",
    "Chain": "streams.runtime.chain",
    "Pipeline": "streams.runtime.pipeline",
    "Runtime": "streams.runtime.app",
    "STAGES": "streams.runtime.stages",
    "SessionGate": "streams.runtime.scheduler",
    "SessionScheduler": "streams.runtime.scheduler",
    "Sink": "streams.runtime.sink",
    "Stage": "streams.runtime.stages",
    "State": "streams.runtime.batons",
    "create_app": "streams.runtime.app",
    "stage": "streams.runtime.custom",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)

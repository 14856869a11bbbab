"""``StageContext``, where a shop's code has imported it from: declared in
``agents.stage_context``."""

from baton_kafka.agents.stage_context import (
    STAGE_EVENTS,
    StageContext,
    StageMetrics,
    wants_context,
)

__all__ = ["STAGE_EVENTS", "StageContext", "StageMetrics", "wants_context"]

"""The strategy stage's offline rule, where it was first published (now in
``stages.strategy``)."""

from baton_kafka.agents.stages.strategy.rule import (
    conditions_said,
    handoff_triggers,
    strategy_rules,
)

__all__ = ["conditions_said", "handoff_triggers", "strategy_rules"]

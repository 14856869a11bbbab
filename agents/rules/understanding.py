"""The understand stage's offline rule, where it was first published (now in
``stages.understand``)."""

from baton_kafka.agents.stages.understand.rule import DEMAND_NAMES, understand_rules

__all__ = ["DEMAND_NAMES", "understand_rules"]

"""``stage()``, where a shop's code has imported it from: declared in ``agents.declare``."""

from baton_kafka.agents.declare import Agent, Rule, Run, stage

__all__ = ["Agent", "Rule", "Run", "stage"]

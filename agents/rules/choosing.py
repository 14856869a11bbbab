"""The look-up stage's offline rule, where it was first published (now in ``stages.lookup``)."""

from baton_kafka.agents.stages.lookup.rule import choose_rules

__all__ = ["choose_rules"]

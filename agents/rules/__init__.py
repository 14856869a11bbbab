"""The offline rule model: every stage's answer without a model, and each stage's fallback."""

from baton_kafka.agents.rules.offline import OfflineLLM

__all__ = ["OfflineLLM"]

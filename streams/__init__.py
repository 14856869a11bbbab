"""baton's runtime on Kafka: the worker, Kafka utilities, the CLI, observability and tools."""

from baton_kafka.streams.settings import Settings, SettingsError, load

__all__ = ["Settings", "SettingsError", "load"]

"""A Faust producer whose retried sends are written once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from faust.transport.drivers.aiokafka import Producer


class IdempotentProducer(Producer):
    """Faust's aiokafka producer with ``enable_idempotence`` on outside transactions too.

    When a partition's leader moves while a produce request waits for its replicas (a broker
    shutting down), the old leader answers ``NotLeaderForPartition`` although the record is
    already in the log the new leader continues; without idempotence the retry writes a
    second copy (a rolling restart of a three-node cluster did, for a reply). With it the
    broker recognises the retry by producer id and sequence number and keeps one.
    """

    def _settings_extra(self) -> Mapping[str, Any]:
        return {**super()._settings_extra(), "enable_idempotence": True}


def configured_producer(options: Mapping[str, Any], *, idempotent: bool) -> type[Producer]:
    """Faust's producer (idempotent or not) with the operator's extra client ``options``
    (``BATON_KAFKA_CLIENT_*``) over Faust's own."""
    base: type[Producer] = IdempotentProducer if idempotent else Producer
    extra = dict(options)

    class ConfiguredProducer(base):  # type: ignore[valid-type,misc]
        def _settings_extra(self) -> Mapping[str, Any]:
            return {**super()._settings_extra(), **extra}

    return ConfiguredProducer

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

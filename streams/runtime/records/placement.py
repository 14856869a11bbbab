"""A session's records live under its key on its partition; one found elsewhere is not trusted.

A signed record re-produced under another key or onto another partition would be read by a
worker that holds no baton for its session: ownership would see no owner, and a second baton
would be written to a changelog partition that expiry and erasure never visit.
"""

from __future__ import annotations

import functools

from baton_kafka.streams.runtime.records.dead_letters import Source


# Per session, not per record: murmur2 is pure Python, and every record of a session is placed
# again (its read checked, each durable baton write, each tombstone).
@functools.lru_cache(maxsize=1 << 16)
def session_partition(session_id: str, partitions: int) -> int:
    """The partition Kafka's default partitioner gives a session's records."""
    from aiokafka.partitioner import murmur2

    return (murmur2(session_id.encode()) & 0x7FFFFFFF) % partitions


def misplaced(source: Source, key: str, partitions: int) -> str | None:
    """Why a record of ``key`` (a session or customer) read at ``source`` is not where its
    records belong, or None when it is (or when ``source`` names no key: a record handed over
    in-process, not read from a broker)."""
    if source.key is None:
        return None
    if source.key != key:
        return f"the record of {key} was read under another key on {source.topic}"
    if source.partition is not None and source.partition != session_partition(key, partitions):
        return (
            f"the record of {key} was read on partition {source.partition} of {source.topic}, "
            f"not on its own ({session_partition(key, partitions)})"
        )
    return None

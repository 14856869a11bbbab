"""A session's partition, remembered per session, is the one Kafka's default partitioner picks."""

from __future__ import annotations

import random

from aiokafka.partitioner import DefaultPartitioner

from baton_kafka.streams.bench.load import Workload
from baton_kafka.streams.runtime.records.placement import session_partition
from tests.fixtures.data import ticket


def _ids() -> list[str]:
    """Session ids as the bench, the fixtures and odd real systems write them."""
    rng = random.Random(7)
    alphabet = "abcXYZ019-_+@./: \"'$()é中ЖΩ🙂"
    generated = [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 200))) for _ in range(2000)
    ]
    bench = [t.session_id for t in Workload("cpu", 200, 2).tickets()]
    return [*bench, ticket("t1", "hello").session_id, "s1", "-", "a" * 200, *generated]


def test_the_remembered_partition_is_the_default_partitioners_every_time() -> None:
    partitioner = DefaultPartitioner()
    session_partition.cache_clear()
    for partitions in (1, 3, 8, 12):
        every = list(range(partitions))
        for session_id in _ids():
            expected = partitioner(session_id.encode(), every, every)
            # The first call computes it, the second reads it back.
            assert session_partition(session_id, partitions) == expected
            assert session_partition(session_id, partitions) == expected
    assert session_partition.cache_info().hits > 0

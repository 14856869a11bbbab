"""baton's topics: retention per topic, and a describe that waits for just-created topics."""

from __future__ import annotations

from typing import Any

from streams.kafka.topics import _described, changelogs, topic_configs
from streams.settings import Settings


def test_dead_letters_are_kept_longer_than_the_hops() -> None:
    settings = Settings(namespace="ns", retention_days=7, dead_letter_retention_days=30)
    assert topic_configs(settings, "ns.support.replies") == {
        "cleanup.policy": "delete",
        "retention.ms": str(7 * 86_400_000),
    }
    assert topic_configs(settings, "ns.support.dead-letters")["retention.ms"] == str(
        30 * 86_400_000
    )


def test_changelogs_are_compacted_and_sized_like_their_tables() -> None:
    settings = Settings(namespace="ns", partitions=6)
    assert changelogs(settings) == {
        "baton-ns-batons-changelog": 6,
        "baton-ns-customers-changelog": 1,
    }
    assert topic_configs(settings, "baton-ns-batons-changelog") == {
        "cleanup.policy": "compact",
        "max.compaction.lag.ms": str(7 * 86_400_000),
    }


class LateAdmin:
    """Answers "unknown topic" (no partitions) for its first describes, as Kafka does."""

    def __init__(self, late: int) -> None:
        self.late = late
        self.calls = 0

    async def describe_topics(self, topics: list[str]) -> list[dict[str, Any]]:
        self.calls += 1
        ready = self.calls > self.late
        return [
            {"topic": t, "error_code": 0 if ready else 3, "partitions": [{}] * 4 if ready else []}
            for t in topics
        ]


async def test_a_just_created_topic_is_described_once_the_broker_lists_it() -> None:
    admin = LateAdmin(late=3)
    assert await _described(admin, ["a", "b"]) == {"a": 4, "b": 4}
    assert admin.calls == 4


async def test_a_topic_that_never_appears_is_reported_missing_after_the_wait() -> None:
    admin = LateAdmin(late=10**6)
    assert await _described(admin, ["a"], patience_s=0.2) == {}

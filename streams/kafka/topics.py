"""Topic names: the public contract plus baton's internal, session-keyed hops."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from schemas.topics import (
    DEAD_LETTERS,
    HANDOFFS,
    MATCHED,
    MEMORY_INDEX,
    REPLIES,
    SESSIONS,
    TICKETS,
    UNDERSTOOD,
)
from streams.settings import Settings

# The worker's changelog-backed tables: batons by session, the customer index.
BATON_TABLE = "batons"
CUSTOMER_TABLE = "customers"


def changelog_topic(settings: Settings, table: str = BATON_TABLE) -> str:
    """The Faust changelog topic of one of the worker's tables."""
    return f"{settings.app_id}-{table}-changelog"


def changelogs(settings: Settings) -> dict[str, int]:
    """Each table's changelog topic and its partition count (the index table is global)."""
    return {
        changelog_topic(settings, BATON_TABLE): settings.partitions,
        changelog_topic(settings, CUSTOMER_TABLE): 1,
    }


@dataclass(frozen=True)
class TopicNames:
    """Full topic names in one namespace (empty namespace: production names)."""

    tickets: str
    sessions: str
    understood: str
    matched: str
    replies: str
    dead_letters: str
    memory_index: str
    handoffs: str

    @classmethod
    def of(cls, settings: Settings) -> TopicNames:
        return cls(
            tickets=settings.topic(TICKETS),
            sessions=settings.topic(SESSIONS),
            understood=settings.topic(UNDERSTOOD),
            matched=settings.topic(MATCHED),
            replies=settings.topic(REPLIES),
            dead_letters=settings.topic(DEAD_LETTERS),
            memory_index=settings.topic(MEMORY_INDEX),
            handoffs=settings.topic(HANDOFFS),
        )

    def all(self) -> tuple[str, ...]:
        return (
            self.tickets,
            self.sessions,
            self.understood,
            self.matched,
            self.replies,
            self.dead_letters,
            self.memory_index,
            self.handoffs,
        )


class TopicMismatch(RuntimeError):
    """An existing internal topic has a partition count the tables cannot work with."""


async def ensure_topics(settings: Settings) -> dict[str, int]:
    """Create baton's topics if missing; return each topic's partition count.

    Created before Faust starts: a broker that auto-creates topics on first use would give
    them its default partition count, and tables need every session-keyed topic alike.
    """
    from aiokafka.admin import NewTopic

    from streams.kafka.connect import new_admin

    names = TopicNames.of(settings)
    # The memory index has one partition: one writer per key keeps the global index table
    # consistent on every worker. Changelogs are created here too, compacted, so that a
    # worker never subscribes before they exist (Faust would then leave them unassigned).
    wanted = {
        name: 1 if name == names.memory_index else settings.partitions for name in names.all()
    } | changelogs(settings)
    admin = new_admin(settings)
    await admin.start()
    try:
        await admin.create_topics(
            [
                NewTopic(
                    name,
                    partitions,
                    settings.replication_factor,
                    topic_configs=topic_configs(settings, name),
                )
                for name, partitions in wanted.items()
            ]
        )
        counts = await _described(admin, list(wanted))
    finally:
        await admin.close()
    for name in (names.sessions, names.understood, names.matched):
        if counts.get(name) != settings.partitions:
            raise TopicMismatch(
                f"topic {name} has {counts.get(name)} partitions but BATON_PARTITIONS is "
                f"{settings.partitions}; use the same value as when it was created"
            )
    return counts


def topic_configs(settings: Settings, name: str) -> dict[str, str]:
    """A changelog is compacted; a data topic has retention, dead letters the longest.

    A changelog is compacted at the latest ``retention_days`` after a write, so an erased or
    expired baton's older values leave the log within the data topics' retention.
    """
    if name in changelogs(settings):
        lag = str(int(settings.retention_days * 86_400_000))
        return {"cleanup.policy": "compact", "max.compaction.lag.ms": lag}
    days = (
        settings.dead_letter_retention_days
        if name == settings.topic(DEAD_LETTERS)
        else settings.retention_days
    )
    return {"cleanup.policy": "delete", "retention.ms": str(int(days * 86_400_000))}


async def _described(admin: Any, topics: list[str], patience_s: float = 10.0) -> dict[str, int]:
    """Each topic's partition count, once the broker lists every one of them.

    Apache Kafka answers a describe right after the create with "unknown topic" for up to
    about half a second, until the new topics' metadata reaches the broker asked.
    """
    deadline = time.monotonic() + patience_s
    while True:
        described = await admin.describe_topics(topics)
        counts = {t["topic"]: len(t["partitions"]) for t in described if t["partitions"]}
        if len(counts) == len(topics) or time.monotonic() > deadline:
            return counts
        await asyncio.sleep(0.1)

"""Topic names: the public contract plus baton's internal, session-keyed hops."""

from __future__ import annotations

import asyncio
import functools
import time
from dataclasses import dataclass
from typing import Any

from baton_kafka.schemas.topics import (
    ACTIONS,
    DEAD_LETTERS,
    DECISIONS,
    HANDOFFS,
    MATCHED,
    MEMORY_INDEX,
    REPLIES,
    SESSIONS,
    TICKETS,
    UNDERSTOOD,
)
from baton_kafka.streams.settings import Settings

# The worker's changelog-backed tables: batons by session, the customer index.
BATON_TABLE = "batons"
CUSTOMER_TABLE = "customers"
# The actions' ledger: each session's actions and their states (streams.actions.ledger).
ACTION_TABLE = "actions"


def changelog_topic(settings: Settings, table: str = BATON_TABLE) -> str:
    """The Faust changelog topic of one of the worker's tables."""
    return f"{settings.app_id}-{table}-changelog"


def changelogs(settings: Settings) -> dict[str, int]:
    """Each table's changelog topic and its partition count (the index table is global)."""
    return {
        changelog_topic(settings, BATON_TABLE): settings.partitions,
        changelog_topic(settings, CUSTOMER_TABLE): 1,
        changelog_topic(settings, ACTION_TABLE): settings.partitions,
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
    decisions: str
    actions: str
    # The output topics of the chain's stages of the shop's own: (stage name, full name).
    stages: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, settings: Settings, chain: Any = None) -> TopicNames:
        """The names for ``settings``; ``chain`` (a ``streams.runtime.chain.Chain``) adds its
        own stages' topics."""
        own = chain.own_topics() if chain is not None else {}
        return cls(
            tickets=settings.topic(TICKETS),
            sessions=settings.topic(SESSIONS),
            understood=settings.topic(UNDERSTOOD),
            matched=settings.topic(MATCHED),
            replies=settings.topic(REPLIES),
            dead_letters=settings.topic(DEAD_LETTERS),
            memory_index=settings.topic(MEMORY_INDEX),
            handoffs=settings.topic(HANDOFFS),
            decisions=settings.topic(DECISIONS),
            actions=settings.topic(ACTIONS),
            stages=tuple((role, settings.topic(name)) for role, name in own.items()),
        )

    def role(self, role: str) -> str:
        """The full name of the topic with ``role`` (an attribute, or a stage's own)."""
        own = self._own.get(role)
        return own if own is not None else str(getattr(self, role))

    @functools.cached_property
    def _own(self) -> dict[str, str]:
        # Made once: every stage record's checks and its stage ask for a role.
        return dict(self.stages)

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
            self.decisions,
            self.actions,
            *(name for _, name in self.stages),
        )


class TopicMismatch(RuntimeError):
    """A topic baton needs is not as its tables need it (an existing one's partition count)."""


class TopicRefused(TopicMismatch):
    """The cluster refused to create a topic baton needs (ACL, policy, replication factor)."""


# Kafka's answer for a topic that is there already: what a second start gets, not an error.
TOPIC_ALREADY_EXISTS = 36


def wanted_partitions(settings: Settings, chain: Any = None) -> dict[str, int]:
    """Every topic baton creates and the partition count it creates it with.

    The memory index has one partition: one writer per key keeps the global index table
    consistent on every worker. Changelogs are created here too, compacted, so that a worker
    never subscribes before they exist (Faust would then leave them unassigned).
    """
    names = TopicNames.of(settings, chain)
    return {
        name: 1 if name == names.memory_index else settings.partitions for name in names.all()
    } | changelogs(settings)


def required_partitions(settings: Settings, chain: Any = None) -> dict[str, int]:
    """The topics whose partition count must be exactly what baton would create.

    Session-keyed topics and the baton changelog are read partition by partition against the
    tables (a reply is looked for in its session's partition); the index and its changelog are
    single-partition. The tickets and dead-letter topics may have any count.
    """
    names = TopicNames.of(settings, chain)
    anything = {names.tickets, names.dead_letters}
    return {t: n for t, n in wanted_partitions(settings, chain).items() if t not in anything}


async def ensure_topics(settings: Settings, chain: Any = None) -> dict[str, int]:
    """Create baton's topics (and ``chain``'s own stages') if missing; return each topic's
    partition count.

    Created before Faust starts: a broker that auto-creates topics on first use would give
    them its default partition count, and tables need every session-keyed topic alike. Every
    topic's answer is checked: one refused and absent raises :class:`TopicRefused`, one there
    with another partition count :class:`TopicMismatch`, each naming the topic and why.
    """
    from aiokafka.admin import NewTopic

    from baton_kafka.streams.kafka.connect import new_admin

    wanted = wanted_partitions(settings, chain)
    admin = new_admin(settings)
    await admin.start()
    try:
        response = await admin.create_topics(
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
        refused = refusals(response.topic_errors)
        counts = await _described(admin, [t for t in wanted if t not in refused])
        if refused:
            # A refused topic may still be there (created beforehand by whoever may).
            counts |= await _described(admin, list(refused), patience_s=0.0)
    finally:
        await admin.close()
    check_topics(settings, counts, refused, chain)
    return counts


def refusals(topic_errors: list[Any]) -> dict[str, str]:
    """Each topic the create answered with an error (other than "exists") and why, readably."""
    from aiokafka.errors import for_code

    refused: dict[str, str] = {}
    for answer in topic_errors:
        topic, code = answer[0], answer[1]
        if code in (0, TOPIC_ALREADY_EXISTS):
            continue
        message = answer[2] if len(answer) > 2 and answer[2] else for_code(code).description
        refused[topic] = f"{for_code(code).message}: {' '.join(str(message).split())}"
    return refused


def check_topics(
    settings: Settings, counts: dict[str, int], refused: dict[str, str], chain: Any = None
) -> None:
    """Raise for the first topic baton cannot use, saying which topic and why in one line."""
    missing = [t for t in refused if t not in counts]
    if missing:
        first = missing[0]
        more = f"; also refused: {', '.join(missing[1:])}" if missing[1:] else ""
        raise TopicRefused(
            f"the cluster refused to create topic {first}: {refused[first]}{more} "
            "(create the topics beforehand, or see docs/production.md)"
        )
    for name in wanted_partitions(settings, chain):
        if name not in counts:
            raise TopicMismatch(
                f"topic {name} was created but the cluster does not list it: check that this "
                "login may describe it"
            )
    for name, partitions in required_partitions(settings, chain).items():
        if counts[name] != partitions:
            setting = "it must have 1" if partitions == 1 else f"BATON_PARTITIONS is {partitions}"
            raise TopicMismatch(
                f"topic {name} has {counts[name]} partitions but {setting}; use the same "
                "value as when it was created, or recreate the topic"
            )


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
    if not topics:
        return {}  # an empty describe would list every topic of the cluster
    deadline = time.monotonic() + patience_s
    while True:
        described = await admin.describe_topics(topics)
        counts = {t["topic"]: len(t["partitions"]) for t in described if t["partitions"]}
        if len(counts) == len(topics) or time.monotonic() > deadline:
            return counts
        await asyncio.sleep(0.1)

"""``baton forget``: find a customer's data in the worker's tables and have the workers erase it.

The command reads the tables' changelogs to find the customer's sessions, sends one erasure
request per session, waits for each baton's tombstone, then erases the customer's index entry
(last, so a reply finishing meanwhile cannot write it back) and waits for that tombstone.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field

from baton_kafka.schemas.baton import Baton, Erasure, MemoryIndex
from baton_kafka.schemas.codec import InvalidRecord, dumps, loads, parse
from baton_kafka.streams.kafka.client import Message, publish
from baton_kafka.streams.kafka.reader import read_topics
from baton_kafka.streams.kafka.topics import (
    BATON_TABLE,
    CUSTOMER_TABLE,
    TopicNames,
    changelog_topic,
    changelogs,
    topic_configs,
)
from baton_kafka.streams.runtime.own_stages import configured_chain
from baton_kafka.streams.runtime.records.signing import Signer
from baton_kafka.streams.runtime.session import erasure
from baton_kafka.streams.settings import Settings

POLL_S = 1.0


@dataclass
class Forgotten:
    """What ``baton forget`` found and what the workers confirmed erased."""

    customer_id: str
    request_id: str
    sessions: list[str] = field(default_factory=list)
    index_sessions: list[str] = field(default_factory=list)
    erased_sessions: list[str] = field(default_factory=list)
    index_erased: bool = False

    @property
    def confirmed(self) -> bool:
        return set(self.erased_sessions) == set(self.sessions) and self.index_erased


def _latest(messages: list[Message]) -> dict[str, bytes | None]:
    """Each key's last value in a changelog (None: a tombstone)."""
    out: dict[str, bytes | None] = {}
    for m in messages:
        if m.key is None:
            continue
        # Faust writes a table's str keys as JSON strings.
        try:
            key = loads(m.key)
        except ValueError:
            key = m.key.decode("utf-8", "replace")
        if isinstance(key, str):
            out[key] = m.value
    return out


async def _tables(settings: Settings) -> tuple[dict[str, bytes | None], dict[str, bytes | None]]:
    batons, index = (
        changelog_topic(settings, BATON_TABLE),
        changelog_topic(settings, CUSTOMER_TABLE),
    )
    read = await read_topics(settings, [batons, index], idle_timeout=2.0)
    return _latest(read[batons]), _latest(read[index])


def _sessions_of(customer_id: str, batons: dict[str, bytes | None]) -> list[str]:
    found = []
    for session, raw in batons.items():
        try:
            baton = parse(Baton, raw) if raw else None
        except InvalidRecord:
            continue
        if baton is not None and baton.customer_id == customer_id:
            found.append(session)
    return sorted(found)


def _index_sessions(customer_id: str, index: dict[str, bytes | None]) -> list[str]:
    raw = index.get(customer_id)
    if not raw:
        return []
    try:
        return [s.session_id for s in parse(MemoryIndex, raw).sessions]
    except InvalidRecord:
        return []


async def _request(settings: Settings, topic: str, records: list[tuple[str, Erasure]]) -> None:
    signer = Signer(settings.signing_keys)
    await publish(
        settings,
        topic,
        [(key, dumps(e)) for key, e in records],
        headers_of=lambda key, value: [*erasure.headers(), *signer.headers(topic, key, value)],
    )


async def forget(settings: Settings, customer_id: str, timeout: float = 60.0) -> Forgotten:
    """Erase the customer's batons, then their index entry; wait up to ``timeout`` s for each."""
    names = TopicNames.of(settings)
    done = Forgotten(customer_id=customer_id, request_id=uuid.uuid4().hex[:16])
    batons, index = await _tables(settings)
    done.sessions = _sessions_of(customer_id, batons)
    done.index_sessions = _index_sessions(customer_id, index)
    deadline = time.monotonic() + timeout
    if done.sessions:
        await _request(
            settings,
            names.sessions,
            [
                (s, Erasure(request_id=done.request_id, customer_id=customer_id, session_id=s))
                for s in done.sessions
            ],
        )
        while time.monotonic() < deadline:
            batons, _ = await _tables(settings)
            done.erased_sessions = [s for s in done.sessions if batons.get(s) is None]
            if len(done.erased_sessions) == len(done.sessions):
                break
            await asyncio.sleep(POLL_S)
    # Always, even with no index entry: the mark of the erasure is what makes it last.
    request = Erasure(request_id=done.request_id, customer_id=customer_id)
    await _request(settings, names.memory_index, [(customer_id, request)])
    while time.monotonic() < deadline:
        _, index = await _tables(settings)
        if _marked(index.get(customer_id), request):
            done.index_erased = True
            break
        await asyncio.sleep(POLL_S)
    return done


def _marked(raw: bytes | None, request: Erasure) -> bool:
    """Whether the index entry is the mark of ``request``'s erasure (or a later one)."""
    try:
        index = parse(MemoryIndex, raw) if raw else None
    except InvalidRecord:
        return False
    if index is None or index.erased_at is None:
        return False
    return index.erased_at >= request.requested_at and not index.sessions


def retention(settings: Settings) -> dict[str, float]:
    """Days each topic may still hold the customer's records (changelogs: until compacted);
    the topics of the shop's own stages (``BATON_STAGES``) included."""
    topics = [*TopicNames.of(settings, configured_chain(settings)).all(), *changelogs(settings)]
    days = {}
    for t in topics:
        config = topic_configs(settings, t)
        ms = config.get("retention.ms") or config["max.compaction.lag.ms"]
        days[t] = int(ms) / 86_400_000
    return days

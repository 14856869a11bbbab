"""The pipeline's own CPU cost without Kafka: the real ``Pipeline`` over in-memory topics.

Splits a worker's CPU per ticket into what the stages' code costs (decode, context, prompts,
checks, baton, dead letters), what the model costs (here: the offline rules), and, by
difference with the worker, what the transport costs (Faust, aiokafka, changelogs).
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agents.models.llm import LLM, Answer, Prompt, T
from agents.orders import open_store
from agents.rules.offline import OfflineLLM
from schemas.codec import dumps
from schemas.records import StageName, Ticket
from streams.runtime.dead_letters import Source
from streams.runtime.pipeline import Pipeline
from streams.settings import Settings


class MemoryState:
    """The pipeline's tables as dicts."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[str, bytes]] = {}

    def get(self, table: str, key: str) -> bytes | None:
        return self.tables.get(table, {}).get(key)

    def put(self, table: str, key: str, value: bytes) -> None:
        self.tables.setdefault(table, {})[key] = value

    async def put_durably(self, table: str, key: str, value: bytes) -> None:
        self.put(table, key, value)

    def items(self, table: str) -> list[tuple[str, bytes]]:
        return list(self.tables.get(table, {}).items())

    def delete(self, table: str, key: str, session_id: str) -> None:
        self.tables.get(table, {}).pop(key, None)


@dataclass
class MemorySink:
    """Topics as queues of ``(key, value)`` still to be taken, plus everything ever sent."""

    topics: dict[str, deque[tuple[str | None, bytes]]] = field(default_factory=dict)
    sent: dict[str, list[tuple[str | None, bytes]]] = field(default_factory=dict)

    async def send(
        self,
        topic: str,
        key: str | None,
        value: bytes,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> None:
        self.topics.setdefault(topic, deque()).append((key, value))
        self.sent.setdefault(topic, []).append((key, value))

    async def contains(
        self, topic: str, key: str, since: datetime, match: Callable[[bytes], bool]
    ) -> bool:
        return any(k == key and match(v) for k, v in self.sent.get(topic, []))

    def take(self, topic: str) -> list[tuple[str | None, bytes]]:
        queue = self.topics.get(topic)
        if not queue:
            return []
        taken = list(queue)
        queue.clear()
        return taken


class TimedLLM:
    """Wraps a model and adds up the CPU seconds its answers take."""

    def __init__(self, inner: LLM) -> None:
        self.inner = inner
        self.name = inner.name
        self.cpu_s = 0.0

    def model_for(self, stage: StageName) -> str:
        return self.inner.model_for(stage)

    async def ask(
        self, prompt: Prompt[T], *, feedback: str | None = None, max_tokens: int | None = None
    ) -> Answer[T]:
        started = time.process_time()
        try:
            return await self.inner.ask(prompt, feedback=feedback, max_tokens=max_tokens)
        finally:
            self.cpu_s += time.process_time() - started

    async def aclose(self) -> None:
        await self.inner.aclose()


@dataclass(frozen=True)
class InProcessCost:
    """CPU seconds of the stages' code and of the model, for ``tickets`` tickets."""

    tickets: int
    replies: int
    total_s: float
    model_s: float


async def measure(
    settings: Settings,
    tickets: list[Ticket],
    on_reply: Callable[[Ticket, MemoryState], None] | None = None,
) -> InProcessCost:
    """Run every ticket through the real pipeline code, stage after stage, in this process."""
    store = open_store(settings.orders_url)
    sink = MemorySink()
    llm = TimedLLM(OfflineLLM())
    state = MemoryState()
    pipeline = Pipeline(settings=settings, llm=llm, store=store, sink=sink, state=state)
    t = pipeline.topics
    hops: list[tuple[str, Any]] = [
        (t.sessions, lambda v, s: pipeline.run_stage("understand", v, s)),
        (t.understood, lambda v, s: pipeline.run_stage("lookup", v, s)),
        (t.matched, lambda v, s: pipeline.run_stage("strategy", v, s)),
    ]
    index_topic = getattr(t, "memory_index", None)
    apply_index = getattr(pipeline, "apply_index", None)
    replies = 0
    started = time.process_time()
    try:
        # One wave at a time keeps each session's tickets in order, as the gate would.
        for offset, ticket in enumerate(tickets):
            source = Source(topic=t.tickets, partition=0, offset=offset)
            await pipeline.intake(dumps(ticket), source)
            for topic, step in hops:
                for _, value in sink.take(topic):
                    await step(value, source)
            if index_topic and apply_index is not None:
                for _, value in sink.take(index_topic):
                    await apply_index(value)
            replies += len(sink.take(t.replies))
            sink.take(t.dead_letters)
            if on_reply is not None:
                on_reply(ticket, state)
    finally:
        total = time.process_time() - started
        await store.close()
    return InProcessCost(len(tickets), replies, total, llm.cpu_s)


async def baton_growth(
    settings: Settings, tickets: list[Ticket], marks: set[int]
) -> dict[int, int]:
    """Bytes of the session's baton after each of ``marks`` tickets of one long session."""
    sizes: dict[int, int] = {}
    answered = itertools.count(1)

    def note(ticket: Ticket, state: MemoryState) -> None:
        count = next(answered)
        if count in marks:
            sizes[count] = len(state.get("batons", ticket.session_id) or b"")

    await measure(settings, tickets, note)
    return sizes

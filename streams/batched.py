"""Tickets through the real pipeline code in this process, the model calls sent as message batches.

For ``baton replay --batch`` and ``baton eval --batch``. The tickets run in waves: wave k holds
the k-th ticket of every session (a session's tickets stay in order, as the session gate keeps
them), and a wave runs stage by stage over all its tickets, so the model calls of one stage of a
wave go out as one batch, built from the previous stage's results (understand, then lookup for
the tickets whose candidates need the model, then strategy). The pipeline is the worker's own
(``Pipeline`` over an in-memory sink and tables): decode, context, baton, dead letters, replies.
Records never leave the process, so they are not signed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baton_kafka.agents.models.batch_journal import BatchJournal, digest
from baton_kafka.agents.models.batches import BatchLLM, BatchSender, run_batched
from baton_kafka.agents.orders import OrderSource
from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.records import DeadLetter, Reply, Ticket
from baton_kafka.streams.runtime.pipeline import Pipeline
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.settings import Settings
from baton_kafka.streams.testing import MemorySink, MemoryState


@dataclass(frozen=True)
class BatchOptions:
    """How to batch: where the state file is (None: under the data dir) and how often to poll."""

    state: str | None = None
    poll_s: float = 60.0


def waves(tickets: Sequence[Ticket]) -> list[list[Ticket]]:
    """Wave k: the k-th ticket of every session, sessions in order of their first ticket."""
    sessions: dict[str, list[Ticket]] = {}
    for t in tickets:
        sessions.setdefault(t.session_id, []).append(t)
    depth = max((len(s) for s in sessions.values()), default=0)
    return [[s[k] for s in sessions.values() if k < len(s)] for k in range(depth)]


def run_key(settings: Settings, tickets: Sequence[Ticket], *extra: Any) -> str:
    """What makes two runs the same run: the tickets, the models and ``extra``."""
    models = [settings.model, sorted(dict(settings.stage_models).items())]
    return digest([[dumps(t).decode() for t in tickets], models, repr(extra)])


def batch_llm(
    settings: Settings, journal: BatchJournal, *, poll_s: float, say: Callable[[str], None]
) -> BatchLLM:
    """Claude of ``settings`` (key, address, models, prices) through message batches, and live
    for what a batch cannot settle."""
    from baton_kafka.agents.models.claude import AnthropicLLM
    from baton_kafka.streams.runtime.worker import build_llm, client_options

    live = build_llm(settings.with_(llm="anthropic"))
    assert isinstance(live, AnthropicLLM)
    sender = BatchSender(**client_options(settings))
    return BatchLLM(live, sender, journal, poll_s=poll_s, say=say)


class Answered:
    """What a batched run produced: every reply and dead letter, as the sink holds them."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline
        sink = pipeline.sink
        assert isinstance(sink, MemorySink)
        self.sink = sink

    @property
    def replies(self) -> dict[str, Reply]:
        """The first reply of every ticket."""
        out: dict[str, Reply] = {}
        for _, value in self.sink.sent[self.pipeline.topics.replies]:
            reply = Reply.model_validate_json(value)
            out.setdefault(reply.ticket_id, reply)
        return out

    @property
    def dead_letters(self) -> list[DeadLetter]:
        return [
            DeadLetter.model_validate_json(v)
            for _, v in self.sink.sent[self.pipeline.topics.dead_letters]
        ]


async def answer_in_batches(
    settings: Settings, groups: Sequence[Sequence[Ticket]], llm: BatchLLM, store: OrderSource
) -> Answered:
    """Every ticket of every group through the pipeline, a group after the previous one ended
    (the eval's phases; replay has one group), each wave's stages as batches."""
    pipeline = Pipeline(
        # Nobody waits on a replay or an evaluation: no holding replies.
        settings=settings.with_(signing_keys=(), first_reply_deadline_s=0.0),
        llm=llm,
        store=store,
        sink=MemorySink(),
        state=MemoryState(),
    )
    sink, topics = pipeline.sink, pipeline.topics
    assert isinstance(sink, MemorySink)
    offset = 0
    for group in groups:
        for wave in waves(group):
            for t in wave:
                await pipeline.intake(dumps(t), Source(topics.tickets, 0, offset))
                offset += 1
            for stage in pipeline.chain:
                topic = pipeline.source_topic(stage)
                records = sink.take(topic)
                await run_batched(
                    llm,
                    [
                        pipeline.run_stage(stage.name, value, Source(topic, 0, i))
                        for i, (_, value) in enumerate(records)
                    ],
                )
            for _, value in sink.take(topics.memory_index):
                await pipeline.apply_index(value)
    return Answered(pipeline)


def state_path(settings: Settings, kind: str, name: str, given: str | None) -> Path:
    """Where a batched run keeps its batches: ``given``, else the data dir's
    ``<kind>/<name>-batch.json``."""
    return Path(given) if given else settings.data_dir / kind / f"{name}-batch.json"


def cost_line(figures: dict[str, Any]) -> str:
    """A batched run's ``Tally.as_dict()`` for people: what was sent and what it cost."""
    live, paid = figures["live_run_cost_usd"], figures["cost_usd"]
    share = f", {100 * (live - paid) / live:.1f}%" if live > 0 else ""
    return (
        f"batches: {figures['batches']} ({figures['created']} created, {figures['resumed']} "
        f"resumed) of {figures['batched_requests']} requests ({figures['succeeded']} succeeded, "
        f"{figures['errored']} errored, {figures['expired']} expired, {figures['canceled']} "
        f"canceled); {figures['live_calls']} live call(s); cost ${paid:.6f} with batches vs "
        f"${live:.6f} as live calls (saved ${live - paid:.6f}{share})"
    )

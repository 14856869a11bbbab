"""The pipeline's own CPU cost without Kafka: the real ``Pipeline`` over in-memory topics.

Splits a worker's CPU per ticket into what the stages' code costs (decode, context, prompts,
checks, baton, dead letters), what the model costs (here: the offline rules), and, by
difference with the worker, what the transport costs (Faust, aiokafka, changelogs).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from baton_kafka.agents import text_cache
from baton_kafka.agents.models.llm import LLM, Answer, Prompt, T
from baton_kafka.agents.orders import open_store
from baton_kafka.agents.rules.offline import OfflineLLM
from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.records import StageName, Ticket
from baton_kafka.streams.runtime import heap
from baton_kafka.streams.runtime.pipeline import Pipeline
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.settings import Settings
from baton_kafka.streams.testing import MemorySink, MemoryState


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
    """CPU seconds of the stages' code and of the model, for ``tickets`` tickets; and of the
    reply audit plus the policy check, over ``drafts`` drafts audited."""

    tickets: int
    replies: int
    total_s: float
    model_s: float
    checks_s: float = 0.0
    drafts: int = 0
    # Each draft's audit CPU seconds, with the policy checks after it until the next draft.
    per_draft_s: tuple[float, ...] = ()
    # The promise checks' CPU seconds (commitments, claims, cited facts, conditions, shop terms).
    promises_s: float = 0.0


class CheckClock:
    """Adds up the CPU the strategy stage spends in the reply audit and the policy check
    (``audit`` and ``settle`` as it calls them), for as long as it is entered."""

    NAMES = ("audit", "settle")

    def __init__(self) -> None:
        self.cpu_s = 0.0
        self.drafts = 0
        self.per_draft_s: list[float] = []
        self._saved: dict[str, Any] = {}

    @staticmethod
    def _homes() -> dict[str, Any]:
        """Where the strategy stage looks each checked function up: its validators, its agent."""
        from baton_kafka.agents.stages.strategy import agent, validators

        return {"audit": validators, "settle": agent}

    def __enter__(self) -> CheckClock:
        homes = self._homes()
        for name in self.NAMES:
            inner = self._saved[name] = getattr(homes[name], name)
            setattr(homes[name], name, self._timed(inner, counts=name == "audit"))
        return self

    def __exit__(self, *exc: object) -> None:
        homes = self._homes()
        for name, inner in self._saved.items():
            setattr(homes[name], name, inner)

    def _timed(self, inner: Callable[..., Any], *, counts: bool) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return inner(*args, **kwargs)
            finally:
                spent = time.process_time() - started
                self.cpu_s += spent
                self.drafts += counts
                if counts:
                    self.per_draft_s.append(spent)
                elif self.per_draft_s:
                    self.per_draft_s[-1] += spent

        return timed


class PromiseClock:
    """Adds up the CPU of the promise checks (a reply's commitments, claims, cited facts,
    conditions and shop terms), each outermost call once, for as long as it is entered."""

    CHECKS = (
        ("commitments", ("problems",)),
        ("claims", ("problems",)),
        ("cited", ("problems",)),
        ("conditions", ("problems",)),
        ("shop_terms", ("never_promised", "shipping", "channels", "masked", "stated_costs")),
    )

    def __init__(self) -> None:
        self.cpu_s = 0.0
        self._depth = 0
        self._saved: list[tuple[Any, str, Callable[..., Any]]] = []

    def __enter__(self) -> PromiseClock:
        import importlib

        for module_name, names in self.CHECKS:
            module = importlib.import_module(f"baton_kafka.agents.guards.{module_name}")
            for name in names:
                inner = getattr(module, name)
                self._saved.append((module, name, inner))
                setattr(module, name, self._timed(inner))
        return self

    def __exit__(self, *exc: object) -> None:
        for module, name, inner in self._saved:
            setattr(module, name, inner)
        self._saved.clear()

    def _timed(self, inner: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if self._depth:  # inside another promise check: counted there
                return inner(*args, **kwargs)
            self._depth += 1
            started = time.process_time()
            try:
                return inner(*args, **kwargs)
            finally:
                self.cpu_s += time.process_time() - started
                self._depth -= 1

        return timed


async def measure(
    settings: Settings,
    tickets: list[Ticket],
    on_reply: Callable[[Ticket, MemoryState], None] | None = None,
    model: LLM | None = None,
    every_text_new: bool = False,
) -> InProcessCost:
    """Run every ticket through the real pipeline code, stage after stage, in this process,
    with ``model`` (the offline rules when None; the caller closes a model it passes);
    ``every_text_new``: the readings of texts kept across tickets are dropped after each one."""
    store = open_store(settings.orders_url)
    sink = MemorySink()
    llm = TimedLLM(model if model is not None else OfflineLLM())
    state = MemoryState()
    pipeline = Pipeline(settings=settings, llm=llm, store=store, sink=sink, state=state)
    t = pipeline.topics
    replies = 0
    # The collector as a worker runs it once built: its start-up objects set aside, young
    # objects collected in batches. Without this the split counted collector work (about
    # 0.2-0.3 ms a ticket) that the worker does not do.
    heaped = heap.settled()
    heaped.__enter__()
    clock = CheckClock().__enter__()
    promises = PromiseClock().__enter__()
    forgetting = 0.0
    started = time.process_time()
    try:
        # One wave at a time keeps each session's tickets in order, as the gate would.
        for offset, ticket in enumerate(tickets):
            source = Source(topic=t.tickets, partition=0, offset=offset)
            await pipeline.intake(dumps(ticket), source)
            for stage in pipeline.chain:
                for _, value in sink.take(pipeline.source_topic(stage)):
                    await pipeline.run_stage(stage.name, value, source)
            for _, value in sink.take(t.memory_index):
                await pipeline.apply_index(value)
            replies += len(sink.take(t.replies))
            sink.take(t.dead_letters)
            if on_reply is not None:
                on_reply(ticket, state)
            if every_text_new:
                # The bench's few texts recur far more than a desk's: without this, what is
                # read from them looks nearly free. Dropping them is not the pipeline's work.
                dropping = time.process_time()
                text_cache.forget()
                forgetting += time.process_time() - dropping
    finally:
        total = time.process_time() - started - forgetting
        promises.__exit__()
        clock.__exit__()
        heaped.__exit__(None, None, None)
        await store.close()
    return InProcessCost(
        len(tickets),
        replies,
        total,
        llm.cpu_s,
        clock.cpu_s,
        clock.drafts,
        tuple(clock.per_draft_s),
        promises.cpu_s,
    )


async def baton_growth(
    settings: Settings, tickets: list[Ticket], marks: set[int]
) -> dict[int, int]:
    """Bytes of the session's baton after each of ``marks`` tickets of one long session."""
    sizes: dict[int, int] = {}
    answered = itertools.count(1)

    def note(ticket: Ticket, state: MemoryState) -> None:
        count = next(answered)
        if count in marks:
            sizes[count] = len(state.batons.get(ticket.session_id) or b"")

    await measure(settings, tickets, note)
    return sizes

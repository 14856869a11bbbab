"""The stages' wrapper: decode, hold the session, run the stage, route its result, record it."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from agents import memory
from agents.asking import budget_tokens
from agents.guards import UNTRUSTED
from agents.models.llm import LLM
from agents.orders import OrderSource
from agents.outcome import Outcome
from agents.policy import load as load_policy
from schemas.baton import Baton
from schemas.codec import InvalidRecord, dumps, parse
from schemas.records import DeadLetter, Reply, StageName, Ticket, utcnow
from schemas.stages import StageRecord
from streams.kafka.topics import TopicNames
from streams.observe import tracing
from streams.observe.observer import CountingObserver, Observer
from streams.runtime import context, dead_letters, erasure, expiry, handoffs, ownership, replies
from streams.runtime.batons import BatonStore, State
from streams.runtime.budgets import CustomerBudgets
from streams.runtime.dead_letters import Source
from streams.runtime.index import CustomerIndex
from streams.runtime.redelivery import Redelivery, own_entry
from streams.runtime.scheduler import SessionGate
from streams.runtime.signing import Headers, SignedSink, Signer
from streams.runtime.sink import Sink, TracedSink
from streams.runtime.stages import BY_NAME, PREVIOUS, Inputs, Stage
from streams.settings import Settings

log = logging.getLogger("baton.pipeline")

STAGE_ATTEMPTS = 3


@dataclass
class Pipeline:
    """Runs each stage for one record: every way out is a record, a reply or a dead letter.

    ``observer`` is fixed at construction (the redelivery component reports to it too).
    """

    settings: Settings
    llm: LLM
    store: OrderSource
    sink: Sink
    state: State
    gate: SessionGate = field(default_factory=SessionGate)
    observer: Observer = field(default_factory=CountingObserver)

    def __post_init__(self) -> None:
        self.policy = load_policy(self.settings.policy_file)
        self.topics = TopicNames.of(self.settings)
        self.batons = BatonStore(self.state, self.settings.index_keep)
        self.budgets = CustomerBudgets(
            self.settings.customer_token_budget, self.settings.customer_budget_window_s
        )
        self.signer = Signer(self.settings.signing_keys)
        # What the stages read from each other is signed; replies and dead letters go to users.
        internal = {self.topics.sessions, self.topics.understood, self.topics.matched}
        self.out = SignedSink(
            TracedSink(self.sink), self.signer, frozenset({*internal, self.topics.memory_index})
        )
        self.redelivery = Redelivery(
            self.batons,
            self.out,
            self.gate,
            self.observer,
            self.topics.replies,
            self.topics.handoffs,
        )
        self.desk = handoffs.Desk(self.batons, self.settings.handoff_deadline_s, self.policy)
        self.index = CustomerIndex(
            self.settings, self.batons, self.signer, self.out, self.topics.memory_index
        )

    async def intake(
        self, value: bytes | None, source: Source, headers: Headers | None = None
    ) -> None:
        """Validate a raw ticket and forward it keyed by session, or dead-letter it."""
        with tracing.stage_span("intake", headers, source):
            await self._intake(value, source)

    async def _intake(self, value: bytes | None, source: Source) -> None:
        self.observer.record_in("intake")
        try:
            ticket = parse(Ticket, value)
        except InvalidRecord as exc:
            self.observer.stage_done("intake", "invalid", 0.0)
            await self._reject("intake", value, exc, source)
            return
        tracing.annotate(ticket.ticket_id, ticket.session_id)
        self.observer.stage_done("intake", "ok", 0.0)
        record = StageRecord(
            ticket=ticket,
            source_topic=source.topic,
            source_partition=source.partition,
            source_offset=source.offset,
        )
        await self.out.send(self.topics.sessions, ticket.session_id, dumps(record))

    async def run_stage(
        self, stage: StageName, value: bytes | None, source: Source, headers: Headers | None = None
    ) -> None:
        """Run ``stage`` on one signed stage record, up to ``STAGE_ATTEMPTS`` times."""
        with tracing.stage_span(stage, headers, source):
            await self._run_stage(stage, value, source, headers)

    async def _run_stage(
        self, stage: StageName, value: bytes | None, source: Source, headers: Headers | None
    ) -> None:
        self.observer.record_in(stage)
        step = BY_NAME[stage]
        problem = self.signer.problem(step.source_topic(self.topics), value, headers)
        if problem is not None:
            await self.dead_letter(dead_letters.untrusted(stage, value, problem, source))
            self.observer.stage_done(stage, "refused", 0.0)
            return
        if step.name == "understand" and erasure.requested(headers):
            await erasure.erase_session(self.batons, self.gate, value)
            return
        try:
            record = parse(StageRecord, value)
        except InvalidRecord as exc:
            await self._reject(stage, value, exc, source)
            self.observer.stage_done(stage, "invalid", 0.0)
            return
        ticket = record.ticket
        tracing.annotate(ticket.ticket_id, ticket.session_id)
        if step.name == "understand":
            await self.gate.enter(
                ticket.session_id, ticket.ticket_id, lambda: self.redelivery.unfinished(ticket)
            )
        for attempt in range(1, STAGE_ATTEMPTS + 1):
            try:
                await self._run(step, record, source)
                return
            except Exception as exc:
                if attempt < STAGE_ATTEMPTS:
                    log.warning(
                        "%s failed on %s (attempt %d): %r", stage, ticket.ticket_id, attempt, exc
                    )
                    await asyncio.sleep(0.2 * 2**attempt)
                    continue
                log.exception("%s gave up on %s", stage, ticket.ticket_id)
                dl = dead_letters.letter(
                    stage=stage,
                    reason="stage_error",
                    error=f"{type(exc).__name__}: {exc}",
                    payload=value.decode("utf-8", "replace") if value else "",
                    source=source,
                    ticket=ticket,
                    attempts=attempt,
                )
                await self._fail_ticket(record, stage, dl)
                self.observer.stage_done(stage, "failed", 0.0)

    async def shed(
        self, stage: StageName, value: bytes | None, source: Source, headers: Headers | None = None
    ) -> None:
        """Dead-letter a record its session's full queue has no room for: no model, no reply.

        A copy of a ticket the baton knows (in flight or answered), an erasure request and a
        record that is not a valid signed one go through ``run_stage`` as usual: the session's
        later tickets may be waiting for the copy at the gate, an erasure is never dropped.
        """
        try:
            ticket: Ticket | None = parse(StageRecord, value).ticket
        except InvalidRecord:
            ticket = None  # run_stage dead-letters it as invalid
        untrusted = self.signer.problem(BY_NAME[stage].source_topic(self.topics), value, headers)
        if ticket is None or untrusted or self.redelivery.known(ticket):
            await self.run_stage(stage, value, source, headers)
            return
        with tracing.stage_span(stage, headers, source):
            tracing.annotate(ticket.ticket_id, ticket.session_id)
            self.observer.record_in(stage)
            cap = self.settings.max_queued_per_session
            await self.dead_letter(dead_letters.flood(stage, ticket, source, cap))
            self.observer.stage_done(stage, "flooded", 0.0)

    async def _run(self, stage: Stage[Any], record: StageRecord, source: Source) -> None:
        ticket = record.ticket
        held = self.batons.get(ticket.session_id)
        if (problem := ownership.conflict(held, ticket)) is not None:
            await self._refuse(record, stage.name, problem, source)
            return
        entry = own_entry(held, ticket)
        if stage.answers and held is not None and entry is not None and entry.pending:
            await self._answered(*await self.redelivery.resume(entry, held))
            return
        target = stage.target_topic(self.topics)
        if await self.redelivery.settle(stage.name, ticket, entry, target):
            return
        if any(getattr(record, need) is None for need in stage.needs):
            self.observer.context(stage.name, "broken")
            dl = dead_letters.letter(
                stage=stage.name,
                reason="context_broken",
                error=stage.missing,
                payload="",
                source=source,
                ticket=ticket,
            )
            await self._fail_ticket(record, stage.name, dl)
            return
        started = time.monotonic()
        level, baton = context.restore(record, held, PREVIOUS.get(stage.name))
        self.observer.context(stage.name, level)
        session_left = (
            self.settings.session_token_budget
            - budget_tokens(baton.usage)
            - budget_tokens(record.usage)
        )
        allowance = self.budgets.allowance(ticket.customer_id, session_left)
        inputs = Inputs(
            record=record,
            baton=baton,
            llm=self.llm,
            store=self.store,
            batons=self.batons,
            reask_limit=self.settings.reask_limit,
            tokens_left=allowance.tokens,
            policy=self.policy,
        )
        outcome = self.budgets.settle(ticket.customer_id, allowance, await stage.run(inputs))
        await self._finish(stage, record, baton, outcome, source, started)

    async def _finish(
        self,
        stage: Stage[Any],
        record: StageRecord,
        baton: Baton,
        outcome: Outcome[Any],
        source: Source,
        started: float,
    ) -> None:
        """Book a stage's result (usage, dead letter, hand-off), then forward it or reply."""
        ticket = record.ticket
        usage = record.usage
        for call in outcome.calls:
            usage = usage.add(call)
        degraded = list(record.degraded)
        handoff = record.handoff
        if outcome.failure is not None:
            dl = dead_letters.from_failure(
                outcome.failure, stage=stage.name, ticket=ticket, source=source
            )
            await self.dead_letter(dl)
            degraded.append(dl.id)
            handoff = handoff or outcome.failure.handoff
        if stage.carries is None or stage.update is None:
            reply = replies.answer(
                record,
                baton,
                outcome.value,
                usage=usage,
                degraded=degraded,
                handoff=handoff,
                llm=self.llm.name,
                timings=replies.reply_timings(record, stage.name, started),
                order_trusted=outcome.failure is None or outcome.failure.reason != UNTRUSTED,
                policy=self.policy,
            )
            packet = self.desk.for_answer(record, baton, reply, outcome, degraded)
            await self._answered(reply, await self.redelivery.reply(reply, baton, packet))
        else:
            baton = stage.update(baton, ticket, outcome.value)
            out = record.model_copy(
                update={
                    stage.carries: outcome.value,
                    "baton_version": baton.version,
                    "snapshot": memory.snapshot(baton),
                    "usage": usage,
                    "degraded": degraded,
                    "handoff": handoff,
                    "timings_ms": replies.stage_timings(record, stage.name, started),
                }
            )
            await self.redelivery.forward(stage.name, out, baton, stage.target_topic(self.topics))
        self.observer.model_calls(outcome.calls)
        outcome_name = "degraded" if outcome.degraded else "ok"
        self.observer.stage_done(stage.name, outcome_name, time.monotonic() - started)

    async def _answered(self, reply: Reply, baton: Baton) -> None:
        """The reply is published and recorded: report it, free the session, index it."""
        self.observer.reply(reply, replies.age(reply))
        self.gate.leave(reply.session_id, reply.ticket_id)
        await self.index.send(baton, reply.ticket_id)

    async def _refuse(
        self, record: StageRecord, stage: StageName, problem: str, source: Source
    ) -> None:
        """Dead-letter a ticket that may not use its session: no reply, no baton touched."""
        ticket = record.ticket
        await self.dead_letter(dead_letters.conflict(stage, ticket, problem, source))
        self.gate.leave(ticket.session_id, ticket.ticket_id)
        self.observer.stage_done(stage, "refused", 0.0)

    async def _fail_ticket(self, record: StageRecord, stage: StageName, dl: DeadLetter) -> None:
        """Dead-letter the ticket (carrying the record) and still answer it once, as degraded."""
        ticket = record.ticket
        if not dl.payload:
            dl = dl.model_copy(update={"payload": dumps(record).decode()})
        await self.dead_letter(dl)
        if self.redelivery.finished(ticket, self.redelivery.entry(ticket)):
            self.gate.leave(ticket.session_id, ticket.ticket_id)
            return
        baton = self.batons.get(ticket.session_id)
        if ownership.conflict(baton, ticket) is not None:
            self.gate.leave(ticket.session_id, ticket.ticket_id)
            return
        baton = baton or memory.new_baton(ticket)
        note = f"{stage} failed ({dl.reason}): {dl.error}; dead letter {dl.id}"
        reply = replies.fallback(record, baton, stage, note, llm=self.llm.name)
        packet = self.desk.for_fallback(record, baton, reply, dl)
        await self._answered(reply, await self.redelivery.reply(reply, baton, packet))

    async def _reject(
        self, stage: StageName, value: bytes | None, exc: InvalidRecord, source: Source
    ) -> None:
        dl = dead_letters.letter(
            stage=stage, reason="invalid_input", error=str(exc), payload=value or b"", source=source
        )
        await self.dead_letter(dl)

    async def dead_letter(self, dl: DeadLetter) -> None:
        """Write a dead letter and wait for the broker's acknowledgement."""
        self.observer.dead_letter(dl.stage, dl.reason)
        dl = dl.model_copy(update={"policy_version": self.policy.version})
        key = dl.session_id or dl.ticket_id
        # Through ``out``: dead letters are not signed, but carry the ticket's trace.
        await self.out.send(self.topics.dead_letters, key, dumps(dl), dead_letters.headers(dl))

    async def apply_index(self, value: bytes | None, headers: Headers | None = None) -> None:
        """Fold one signed session summary into the customer's index."""
        self.index.apply(value, headers)

    async def expire_sessions(
        self, owned: Callable[[str], bool], now: datetime | None = None
    ) -> int:
        """Tombstone batons idle longer than the TTL; forget idle customers' budgets.

        The customer index keeps each expired session's summary (for the index retention), so
        "the order I asked about before" still resolves after expiry.
        """
        cutoff = (now or utcnow()) - timedelta(seconds=self.settings.session_ttl_s)
        self.budgets.sweep()
        return await expiry.expire_batons(
            self.batons, owned, cutoff, lambda b: self.index.send(b, None, expired=True)
        )

    async def sweep_index(self, now: datetime | None = None) -> expiry.IndexSweep:
        """Drop index entries past the retention; only the index agent's worker calls it."""
        return await self.index.sweep(now)

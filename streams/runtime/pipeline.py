"""The stages' wrapper: decode, hold the session, run the stage, route its result, record it."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from baton_kafka.agents import languages, memory, people_replays
from baton_kafka.agents.guards import UNTRUSTED
from baton_kafka.agents.models.llm import LLM
from baton_kafka.agents.orders import OrderSource
from baton_kafka.agents.orders.snapshot import TicketOrders
from baton_kafka.agents.outcome import Outcome
from baton_kafka.agents.policy import load as load_policy
from baton_kafka.agents.ticket_memo import TicketMemos
from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.records import StageName, utcnow
from baton_kafka.schemas.stages import StageRecord
from baton_kafka.streams.kafka.topics import TopicNames
from baton_kafka.streams.observe import tracing
from baton_kafka.streams.observe.observer import CountingObserver, Observer
from baton_kafka.streams.observe.redaction import describe
from baton_kafka.streams.observe.shown import shown
from baton_kafka.streams.runtime import warm
from baton_kafka.streams.runtime.answers import handoffs, replies
from baton_kafka.streams.runtime.answers.clocks import Clocks
from baton_kafka.streams.runtime.answers.index import CustomerIndex
from baton_kafka.streams.runtime.answers.redelivery import Redelivery
from baton_kafka.streams.runtime.answers.refusals import Refusals
from baton_kafka.streams.runtime.chain import BUILTIN, Chain
from baton_kafka.streams.runtime.intake import Intake
from baton_kafka.streams.runtime.people import decisions
from baton_kafka.streams.runtime.people.escalations import Escalations
from baton_kafka.streams.runtime.records import dead_letters
from baton_kafka.streams.runtime.records.dead_letters import Source, read_as
from baton_kafka.streams.runtime.records.delivery import Delivery
from baton_kafka.streams.runtime.records.placement import session_partition
from baton_kafka.streams.runtime.records.signing import Headers, SignedSink, Signer
from baton_kafka.streams.runtime.records.sink import FramingSink, Sink, TracedSink
from baton_kafka.streams.runtime.session import expiry
from baton_kafka.streams.runtime.session.batons import BatonStore, State
from baton_kafka.streams.runtime.session.budgets import CustomerBudgets
from baton_kafka.streams.runtime.session.bursts import Bursts
from baton_kafka.streams.runtime.session.priority import ChainPriority, Paced
from baton_kafka.streams.runtime.session.relay import Passed, Relay
from baton_kafka.streams.runtime.session.scheduler import SessionGate
from baton_kafka.streams.runtime.stages import Inputs, Stage
from baton_kafka.streams.runtime.trust import checks
from baton_kafka.streams.runtime.trust.admission import Admission
from baton_kafka.streams.runtime.trust.admission_checks import ADMITTING
from baton_kafka.streams.runtime.trust.checks import RecordView
from baton_kafka.streams.runtime.trust.turn_checks import ATTEMPTING
from baton_kafka.streams.settings import Settings

log = logging.getLogger("baton.pipeline")

STAGE_ATTEMPTS = 3


@dataclass
class Pipeline(Intake):
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
    # Topic -> Schema Registry id of the topics written framed (empty: plain JSON).
    schema_ids: dict[str, int] = field(default_factory=dict)
    chain: Chain = BUILTIN
    # The sessions' queues at the first stage, when bursts are answered once (a scheduler tells
    # it of each record queued; none in-process, where nothing is queued).
    bursts: Bursts | None = None
    # The stages' turns on the event loop: a ticket in the chain before a new one's first stage
    # (None: as ``BATON_STAGE_PRIORITY`` says).
    priority: ChainPriority | None = None
    # The per-record checks, in order: once per record, then once per attempt at the stage.
    admitting: tuple[checks.Check, ...] = ADMITTING
    attempting: tuple[checks.Check, ...] = ATTEMPTING
    # Outputs passed straight to the next stage when this worker reads its partition (none
    # in-process, where the runner reads every topic in turn).
    relay: Relay = field(default_factory=Relay)

    def __post_init__(self) -> None:
        self.policy = load_policy(self.settings.policy_file).serving(self.settings.languages)
        languages.ready()  # the detector's model, loaded before the first ticket waits for it
        # The packs' patterns too: in a burst after a short warm-up, compiling them was a tenth
        # of the stages' CPU (tickets in languages the worker had not read yet).
        warm.patterns(self.policy)
        self.topics = TopicNames.of(self.settings, self.chain)
        self.consumer = tracing.Consumer.of(self.settings.app_id, self.settings.broker)
        self.batons = BatonStore(self.state, self.settings.index_keep)
        # What a ticket's stages read once and share (its customer's orders, its history).
        self.memos = TicketMemos()
        self.budgets = CustomerBudgets(
            self.settings.customer_token_budget, self.settings.customer_budget_window_s
        )
        self.signer = Signer(self.settings.signing_keys)
        self.admission = Admission(self.settings, self.signer, self.batons)
        # A send waits for the broker's acknowledgement; the model and the order source are
        # asked over the network: waits, during which the chain's other work goes on.
        self.turns = self.priority or ChainPriority(enabled=self.settings.stage_priority)
        sink: Sink = Paced(self.sink, self.turns) if self.turns.enabled else self.sink
        self.raw = FramingSink(sink, self.schema_ids) if self.schema_ids else sink
        # What the stages read from each other is signed; replies and dead letters go to users.
        internal = {self.topics.role(r) for r in self.chain.internal_roles()}
        self.out = SignedSink(
            TracedSink(self.raw), self.signer, frozenset({*internal, self.topics.memory_index})
        )
        self.clocks = Clocks(
            self.settings.first_reply_deadline_s,
            self.batons,
            self.out,
            self.topics.replies,
            self.policy.languages,
            self.policy.version,
        )
        self.redelivery = Redelivery(
            self.batons,
            self.out,
            self.gate,
            self.observer,
            self.topics.replies,
            self.topics.handoffs,
            self.chain,
            self.clocks.answering,
        )
        self.desk = handoffs.Desk(self.batons, self.settings.handoff_deadline_s, self.policy)
        self.index = CustomerIndex(
            self.settings, self.batons, self.signer, self.out, self.topics.memory_index
        )
        # Offers waiting for approval: escalated once past BATON_APPROVAL_TIMEOUT.
        self.escalations = Escalations(
            self.settings.approval_timeout_s,
            self.batons,
            self.clocks,
            self.gate,
            self.out,
            self.topics.replies,
            self.topics.handoffs,
            self.desk,
            self.index,
            self.policy.version,
            self.policy.languages[0],
            self.redelivery.unfinished,
        )
        self.redelivery.parked = self.escalations.arm
        self.redelivery.actions_topic = self.topics.actions
        self.refusals = Refusals(self.settings.refusals_per_minute)
        # People's decisions (support.decisions): applied between the session's tickets.
        self.people = decisions.Decisions(
            topics=decisions.DecisionTopics(
                decisions=self.topics.decisions,
                replies=self.topics.replies,
                actions=self.topics.actions,
            ),
            batons=self.batons,
            gate=self.gate,
            signer=self.signer,
            admission=self.admission,
            sink=self.out,
            store=self.store,
            policy=self.policy,
            observer=self.observer,
            dead_letter=self.dead_letter,
            unfinished=self.redelivery.unfinished,
            index=self.index,
            oldest=people_replays.max_age(
                self.settings.decision_max_age_s, self.settings.session_ttl_s
            ),
        )

    def _paced(self, part: Any) -> Any:
        """``part`` (the model or the order source) as the stages see it: its waits let later
        stages' work go first when the chain's priority is on; itself, as set now, when off."""
        return Paced(part, self.turns) if self.turns.enabled else part

    def source_topic(self, stage: Stage[Any]) -> str:
        """The full name of the topic ``stage`` reads."""
        return self.topics.role(self.chain.source_role(stage))

    def _given(self, stage: Stage[Any], record: StageRecord) -> Any:
        """What ``stage`` reads: its feeder's result as its declared type, or the ticket."""
        feeder = self.chain.feeder(stage)
        if feeder is None:
            return record.ticket
        value = feeder.result(record)
        return stage.input.model_validate(value) if isinstance(value, dict) else value

    async def run_stage(
        self, stage: StageName, value: bytes | None, source: Source, headers: Headers | None = None
    ) -> None:
        """Run ``stage`` on one signed stage record, up to ``STAGE_ATTEMPTS`` times."""
        await self.deliver(stage, Delivery(value, source, headers))

    async def deliver(self, stage: StageName, delivery: Delivery) -> None:
        """``run_stage`` on a record as read, decoded once for every check that reads it; then
        on each output passed straight on to the next stage (see ``Relay``)."""
        relay, value = self.relay, delivery.value
        copy = relay.copy_of(stage, delivery.source, value) if relay.enabled else None
        if copy is not None and await relay.copy_done(copy, stage, value):
            return  # told by its place and bytes: no decoding for a copy that stops
        ticket = delivery.ticket() if relay.enabled else None
        if ticket is None:
            await relay.carry(await self._deliver(stage, delivery), self._deliver)
            return
        if await relay.copy_done(ticket.ticket_id, stage, value):
            return  # the copy read back of a record passed on here, whose run finished
        with self.relay.running(ticket.ticket_id, stage):
            passed = await self._deliver(stage, delivery)
        await self.relay.carry(passed, self._deliver)

    async def _deliver(self, stage: StageName, delivery: Delivery) -> Passed | None:
        first = self.chain[stage].opens_session
        if self.bursts is not None and first:
            self.bursts.started(delivery)
        source = read_as(delivery.source, delivery.value, delivery.headers)
        async with self.turns.working(first):
            # Whether a tracer provider is set, read once for the record's spans: the lookup
            # reads the environment each time.
            traced = tracing.enabled()
            with tracing.stage_span(stage, delivery.headers, source, self.consumer, traced=traced):
                return await self._run_stage(stage, delivery, source, traced)

    async def quiet(self, delivery: Delivery) -> None:
        """Wait out the coalescing window of the record's session before its turn takes a
        running place: the session's tickets that follow within it join the turn."""
        if self.bursts is None or (ticket := delivery.ticket()) is None:
            return
        if not self.redelivery.known(ticket):
            arrived = self.bursts.arrival(delivery)
            await self.bursts.gather(delivery.record(), delivery.source, lambda _: True, arrived)

    async def _run_stage(
        self, stage: StageName, delivery: Delivery, source: Source, traced: bool
    ) -> Passed | None:
        """The record's checks once, then up to ``STAGE_ATTEMPTS`` attempts at the stage
        (``traced``: whether the record's spans are made, as ``tracing.enabled`` said)."""
        self.observer.record_in(stage)
        view = RecordView(self.chain[stage], delivery, source, self.batons)
        if not await checks.passed(self.admitting, self, view):
            return None
        record, value = view.record, delivery.value
        assert record is not None  # the decode check passed
        ticket = record.ticket
        for attempt in range(1, STAGE_ATTEMPTS + 1):
            if attempt > 1:
                view.refresh()  # the failed attempt and the wait may have written the baton
            try:
                with tracing.agent_span(stage, ticket.session_id, self.llm.name, traced=traced):
                    return await self._run(view)
            except Exception as exc:
                # The type and a short message: the record's contents stay out of the logs.
                if attempt < STAGE_ATTEMPTS:
                    log.warning(
                        "%s failed on %s (attempt %d): %s",
                        stage,
                        shown(ticket.ticket_id),
                        attempt,
                        describe(exc),
                    )
                    await self.turns.waited(asyncio.sleep(0.2 * 2**attempt))
                    continue
                log.error("%s gave up on %s: %s", stage, shown(ticket.ticket_id), describe(exc))
                log.debug("%s failed on %s", stage, shown(ticket.ticket_id), exc_info=True)
                dl = dead_letters.letter(
                    stage=stage,
                    reason="stage_error",
                    error=f"{type(exc).__name__}: {exc}",
                    payload=value.decode("utf-8", "replace") if value else "",
                    source=source,
                    ticket=ticket,
                    attempts=attempt,
                )
                await self._fail_ticket(record, stage, dl, source)
                self.observer.stage_done(stage, "failed", 0.0)
        return None

    def refuses(
        self, stage: StageName, value: bytes | None, source: Source, headers: Headers | None = None
    ) -> bool:
        """Whether ``stage`` refuses the record before it touches the session (see
        ``Admission.refuses``): it takes no place in the session's queue."""
        return self.refuses_delivery(stage, Delivery(value, source, headers))

    def refuses_delivery(self, stage: StageName, delivery: Delivery) -> bool:
        """``refuses`` on a record as read (its decoded record kept for the stage)."""
        if self.relay.copy_of(stage, delivery.source, delivery.value) is not None:
            # The copy of a record passed on here, its very bytes checked by the run they
            # were given to: it takes its place in the queue, where it stops or runs checked.
            return False
        return self.admission.refuses(self.source_topic(self.chain[stage]), delivery)

    async def shed(
        self, stage: StageName, value: bytes | None, source: Source, headers: Headers | None = None
    ) -> None:
        """Dead-letter a record its session's full queue has no room for: no model, no reply.

        A copy of a ticket the baton knows (in flight or answered), an erasure request and a
        record that is not a valid signed one go through ``run_stage`` as usual: the session's
        later tickets may be waiting for the copy at the gate, an erasure is never dropped.
        """
        await self.shed_delivery(stage, Delivery(value, source, headers))

    async def shed_delivery(self, stage: StageName, delivery: Delivery) -> None:
        """``shed`` on a record as read (decoded once for its checks and the stage)."""
        value, source, headers = delivery.value, delivery.source, delivery.headers
        ticket = delivery.ticket()  # None: run_stage dead-letters it as invalid
        topic = self.source_topic(self.chain[stage])
        untrusted = delivery.problem(self.signer, topic) or (
            ticket is not None and self.admission.misplaced(source)(ticket.session_id)
        )
        # An erased customer's old record is dropped there, never kept in a dead letter.
        erased = ticket is not None and self.admission.erased(ticket, source)
        if ticket is None or untrusted or erased or self.redelivery.known(ticket):
            await self.deliver(stage, delivery)
            return
        source = read_as(source, value, headers)
        with tracing.stage_span(stage, headers, source, self.consumer):
            tracing.annotate(ticket.ticket_id, ticket.session_id)
            self.observer.record_in(stage)
            cap = self.settings.max_queued_per_session
            await self.dead_letter(dead_letters.flood(stage, ticket, source, cap), source)
            self.observer.stage_done(stage, "flooded", 0.0)

    async def _run(self, view: RecordView) -> Passed | None:
        """One attempt: the checks at the session's turn, then the stage on what they read."""
        if not await checks.passed(self.attempting, self, view):
            return None
        stage, record, baton, allowance = view.stage, view.record, view.baton, view.allowance
        assert record is not None and baton is not None and allowance is not None
        memo = self.memos.of(record.ticket)
        inputs = Inputs(
            record=record,
            baton=baton,
            llm=self._paced(self.llm),
            store=TicketOrders(self._paced(self.store), memo),
            batons=self.batons,
            reask_limit=self.settings.reask_limit,
            tokens_left=allowance.tokens,
            policy=self.policy,
            given=self._given(stage, record),
            read=self.settings.reader == "on",
            memo=memo,
        )
        customer = record.ticket.customer_id
        outcome = self.budgets.settle(customer, allowance, await stage.run(inputs))
        return await self._finish(stage, inputs, outcome, view.source, view.started)

    async def _finish(
        self,
        stage: Stage[Any],
        inputs: Inputs,
        outcome: Outcome[Any],
        source: Source,
        started: float,
    ) -> Passed | None:
        """Book a stage's result (usage, dead letter, hand-off), then forward it or reply; what
        is passed straight on to the next stage, if anything."""
        record, baton = inputs.record, inputs.baton
        ticket = record.ticket
        passed: Passed | None = None
        usage = record.usage
        for call in outcome.calls:
            usage = usage.add(call)
        degraded = list(record.degraded)
        handoff = record.handoff
        if outcome.failure is not None:
            dl = dead_letters.from_failure(
                outcome.failure, stage=stage.name, ticket=ticket, source=source
            )
            await self.dead_letter(dl, source)
            degraded.append(dl.id)
            handoff = handoff or outcome.failure.handoff
        if stage.answers:
            history = inputs.history()
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
                history=history,
            )
            packet = self.desk.for_answer(record, baton, reply, outcome, degraded, history)
            answered = await self.turns.waited(self.redelivery.reply(reply, baton, packet))
            await self._answered(reply, answered)
        else:
            if stage.update is not None:
                baton = stage.update(baton, ticket, outcome.value)
            result: dict[str, Any] = (
                {stage.carries: outcome.value}
                if stage.carries is not None
                else {
                    "results": {**record.results, stage.name: outcome.value.model_dump(mode="json")}
                }
            )
            out = record.model_copy(
                update={
                    **result,
                    "baton_version": baton.version,
                    "snapshot": memory.snapshot(baton),
                    "usage": usage,
                    "degraded": degraded,
                    "handoff": handoff,
                    "timings_ms": replies.stage_timings(record, stage.name, started),
                }
            )
            target = self.topics.role(stage.target_role)
            passed = await self._forward(stage.name, out, baton, target)
        self.observer.model_calls(outcome.calls)
        outcome_name = "degraded" if outcome.degraded else "ok"
        self.observer.stage_done(stage.name, outcome_name, time.monotonic() - started)
        return passed

    async def _forward(
        self, stage: StageName, out: StageRecord, baton: Baton, target: str
    ) -> Passed | None:
        """Send ``out`` on; when this worker reads its partition of ``target``, also what the
        next stage is given here at once (its copy from the topic then waits and stops)."""
        ticket = out.ticket
        following = self.chain.following(stage)
        marked = following is not None and self.relay.mark(
            ticket.ticket_id, following, target, ticket.session_id
        )
        try:
            data, offset = await self.redelivery.forward(stage, out, baton, target)
        except BaseException:
            if following is not None and marked:
                self.relay.finish(ticket.ticket_id, following, False)
            raise
        if following is None or not marked:
            return None
        key = ticket.session_id
        # Read where the topic's copy is, signed and traced as it is: the next stage checks it
        # as any record, and its dead letters name the copy's offset for a re-drive.
        source = Source(
            topic=target,
            partition=session_partition(key, self.settings.partitions),
            offset=offset,
            key=key,
            timestamp=utcnow(),
            raw_key=key.encode("utf-8", "surrogateescape"),
        )
        headers = tracing.inject(self.signer.headers(target, key, data))
        return self.relay.given(ticket.ticket_id, following, source, data, headers)

    async def apply_index(
        self, value: bytes | None, headers: Headers | None = None, source: Source | None = None
    ) -> None:
        """Fold one signed session summary into the customer's index."""
        self.index.apply(value, headers, source or Source())

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

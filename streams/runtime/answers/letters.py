"""Every way a record leaves without going on: dead letters, refusals, drops, the fallback reply."""

from __future__ import annotations

import logging

from baton_kafka.agents import memory
from baton_kafka.agents.models.llm import LLM
from baton_kafka.agents.policy import Policy
from baton_kafka.agents.ticket_memo import TicketMemos
from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.codec import InvalidRecord, dumps
from baton_kafka.schemas.records import DeadLetter, Reply, StageName, Ticket
from baton_kafka.schemas.stages import StageRecord
from baton_kafka.streams.kafka.topics import TopicNames
from baton_kafka.streams.observe.observer import Observer
from baton_kafka.streams.observe.shown import shown
from baton_kafka.streams.runtime.answers import handoffs, replies
from baton_kafka.streams.runtime.answers.index import CustomerIndex
from baton_kafka.streams.runtime.answers.redelivery import Redelivery
from baton_kafka.streams.runtime.answers.refusals import Refusals
from baton_kafka.streams.runtime.records import dead_letters
from baton_kafka.streams.runtime.records.connect_letters import connect_record
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.sink import Sink
from baton_kafka.streams.runtime.session import ownership
from baton_kafka.streams.runtime.session.batons import BatonStore
from baton_kafka.streams.runtime.session.scheduler import SessionGate
from baton_kafka.streams.settings import Settings

log = logging.getLogger("baton.pipeline")


class Letters:
    """The pipeline's ways out other than a stage's result: each dead letter is acknowledged
    before the record's offset can be committed; a failed ticket still gets one reply."""

    settings: Settings
    llm: LLM
    observer: Observer
    gate: SessionGate
    policy: Policy
    topics: TopicNames
    batons: BatonStore
    raw: Sink
    out: Sink
    redelivery: Redelivery
    desk: handoffs.Desk
    index: CustomerIndex
    refusals: Refusals
    memos: TicketMemos

    def _drop_erased(self, stage: StageName, ticket: Ticket) -> None:
        """Drop a record of an erased customer written before the erasure: no dead letter (it
        would keep the data), no baton, no reply."""
        log.info(
            "%s dropped ticket %s: written before its customer's erasure", stage, ticket.ticket_id
        )
        # A later stage's copy may be the ticket holding the session: free it.
        self.gate.leave(ticket.session_id, ticket.ticket_id)
        self.observer.stage_done(stage, "erased", 0.0)

    async def _untrusted(
        self,
        stage: StageName,
        value: bytes | None,
        problem: str,
        source: Source,
        ticket: Ticket | None = None,
    ) -> None:
        """Dead-letter a record that is not signed for where it was read: nothing is written.

        ``ticket`` is the record's, already decoded (None: decoded here, if it can be)."""
        dl = dead_letters.untrusted(stage, value, problem, source, ticket)
        await self.dead_letter(dl, source)
        self.observer.stage_done(stage, "refused", 0.0)

    async def _answered(self, reply: Reply, baton: Baton) -> None:
        """The reply is published and recorded: report it, free the session, index it, and
        forget what its stages read (a copy of the ticket reads afresh)."""
        self.memos.drop(reply.ticket_id)
        self.observer.reply(reply, replies.age(reply))
        self.gate.leave(reply.session_id, reply.ticket_id)
        await self.index.send(baton, reply.ticket_id)

    async def _refuse(
        self, record: StageRecord, stage: StageName, problem: str, source: Source
    ) -> None:
        """Dead-letter a ticket that may not use its session: no reply, no baton touched.

        Past its sender's budget of refusals for the minute (``BATON_REFUSALS_PER_MINUTE``) the
        ticket is only counted: a sender probing sessions cannot flood the dead-letter topic.
        """
        ticket = record.ticket
        sender = ownership.sender(ticket)
        if self.refusals.keep(sender):
            await self.dead_letter(dead_letters.conflict(stage, ticket, problem, source), source)
            outcome = "refused"
        else:
            if self.refusals.dropped(sender) == 1:
                log.warning(
                    "%s: sender %s was refused %d times within a minute; its further refused "
                    "tickets this minute are counted, not dead-lettered",
                    stage,
                    shown(sender),
                    self.refusals.per_minute,
                )
            outcome = "throttled"
        self.gate.leave(ticket.session_id, ticket.ticket_id)
        self.observer.stage_done(stage, outcome, 0.0)

    async def _fail_ticket(
        self, record: StageRecord, stage: StageName, dl: DeadLetter, source: Source
    ) -> None:
        """Dead-letter the ticket (carrying the record) and still answer it once: with its
        pending reply if this stage is the one that finishes it, else as degraded."""
        ticket = record.ticket
        if not dl.payload:
            dl = dl.model_copy(update={"payload": dumps(record).decode()})
        await self.dead_letter(dl, source)
        entry = self.redelivery.entry(ticket)
        baton = self.batons.get(ticket.session_id)
        if (
            entry is not None
            and entry.pending
            and baton is not None
            and self._resumes(stage, baton)
        ):
            # This record is the one that finishes the pending reply (its check of the topic
            # failed every attempt); no other copy will, and the session's next ticket waits
            # for it: sent unchecked (at worst a second copy) rather than never.
            await self._answered(*await self.redelivery.resume(entry, baton, checked=False))
            return
        if self.redelivery.finished(ticket, entry):
            self.gate.leave(ticket.session_id, ticket.ticket_id)
            return
        if ownership.conflict(baton, ticket) is not None:
            self.gate.leave(ticket.session_id, ticket.ticket_id)
            return
        baton = baton or memory.new_baton(ticket)
        note = f"{stage} failed ({dl.reason}): {dl.error}; dead letter {dl.id}"
        reply = replies.fallback(
            record,
            baton,
            stage,
            note,
            llm=self.llm.name,
            languages=self.policy.languages,
            policy=self.policy,
        )
        packet = self.desk.for_fallback(record, baton, reply, dl)
        await self._answered(reply, await self.redelivery.reply(reply, baton, packet))

    def _resumes(self, stage: StageName, baton: Baton) -> bool:
        """Whether ``stage``'s record finishes a pending reply (as the stage's run does): the
        answering stage's, or the first stage's while a person has the session."""
        chain = self.redelivery.chain
        return stage == chain.answering.name or (stage == chain.first.name and baton.taken_over)

    async def _reject(
        self, stage: StageName, value: bytes | None, exc: InvalidRecord, source: Source
    ) -> None:
        dl = dead_letters.letter(
            stage=stage, reason="invalid_input", error=str(exc), payload=value or b"", source=source
        )
        await self.dead_letter(dl, source)

    async def dead_letter(self, dl: DeadLetter, source: Source) -> None:
        """Write a dead letter (in ``BATON_DEAD_LETTER_FORMAT``) and wait for the broker's ack."""
        self.observer.dead_letter(dl.stage, dl.reason)
        dl = dl.model_copy(update={"policy_version": self.policy.version})
        if self.settings.dead_letter_format == "connect":
            raw_key, value, headers = connect_record(dl, source, self.settings.app_id)
            # The record's own headers carry its trace already; the key as it was read
            # (surrogate-escaped so that bytes that are not UTF-8 come back unchanged).
            key = None if raw_key is None else raw_key.decode("utf-8", "surrogateescape")
            await self.raw.send(self.topics.dead_letters, key, value, headers)
            return
        key = dl.session_id or dl.ticket_id
        if dl.reason == "session_conflict" and dl.ticket is not None:
            # Filed under who sent it, never under the session it tried to use.
            key = ownership.sender(dl.ticket)
        # Through ``out``: dead letters are not signed, but carry the ticket's trace.
        await self.out.send(self.topics.dead_letters, key, dumps(dl), dead_letters.headers(dl))

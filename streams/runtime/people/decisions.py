"""People's decisions off ``support.decisions``: checked, applied once in the session's order."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TypeVar

from aiokafka.errors import KafkaError

from baton_kafka.agents import people, people_answers, people_replays
from baton_kafka.agents.history import recallable
from baton_kafka.agents.orders import OrderSource, StoreUnavailable
from baton_kafka.agents.policy import Policy
from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.codec import InvalidRecord, dumps, parse
from baton_kafka.schemas.decision import AUTHORISING, ON_ACTION, ON_OFFER, Decision
from baton_kafka.schemas.records import DeadLetter, Order, Reply, StageName, Ticket, utcnow
from baton_kafka.streams.actions.closing import Closer
from baton_kafka.streams.actions.publish import publish
from baton_kafka.streams.observe.observer import Observer
from baton_kafka.streams.observe.shown import shown
from baton_kafka.streams.runtime.answers.index import CustomerIndex
from baton_kafka.streams.runtime.answers.redelivery import REPLY_SCAN_MARGIN
from baton_kafka.streams.runtime.records import dead_letters
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.signing import HEADER, Headers, Signer
from baton_kafka.streams.runtime.records.sink import Sink
from baton_kafka.streams.runtime.session.batons import BatonStore
from baton_kafka.streams.runtime.session.scheduler import SessionGate
from baton_kafka.streams.runtime.trust.admission import Admission

log = logging.getLogger("baton.decisions")

STAGE: StageName = "decide"
STORE_ATTEMPTS = 3
T = TypeVar("T")
# What a broker or the network throws: the record is read again, never dead-lettered for it.
TRANSIENT = (ConnectionError, OSError, TimeoutError, KafkaError)


def holder(decision_id: str) -> str:
    """The name a decision holds its session's gate under (never a ticket id's)."""
    return f"decision:{decision_id}"


def place(source: Source) -> str:
    """Where a record was read, as a decision's note keeps it: a copy read there again is a
    redelivery, the same decision read anywhere else a replay."""
    return f"{source.topic}:{source.partition}:{source.offset}"


def signed(baton: Baton, decision: Decision, value: bytes, headers: Headers | None) -> Baton:
    """``baton`` with the decision's note keeping the record as read and its signature, so
    the executor verifies the signature again before the money it authorised moves."""
    signature = next((v for k, v in reversed(headers or []) if k == HEADER), b"")
    people_ = [
        n.model_copy(
            update={
                "signed": value.decode(),
                "signature": bytes(signature).decode("ascii", "replace"),
            }
        )
        if n.decision_id == decision.decision_id
        else n
        for n in baton.people
    ]
    return baton.model_copy(update={"people": people_})


@dataclass(frozen=True)
class DecisionTopics:
    """Where decisions are read and where what they cause is written."""

    # The topic people's decisions are read from (the signature is checked for it).
    decisions: str
    # Where a decision's reply to the customer goes.
    replies: str
    # Where an approved offer's actions go, written with the decision's reply (empty: nowhere).
    actions: str = ""


@dataclass(kw_only=True)
class Decisions:
    """Applies each decision to its session's baton between the session's tickets, once.

    The session's gate orders it with the tickets: it waits for the ticket in flight, and the
    next ticket waits for it. The baton records the decision and its reply before the reply
    is sent, so a crash in between sends the reply after a restart, once.
    """

    topics: DecisionTopics
    batons: BatonStore
    gate: SessionGate
    signer: Signer
    admission: Admission
    sink: Sink
    store: OrderSource
    policy: Policy
    observer: Observer
    dead_letter: Callable[[DeadLetter, Source], Awaitable[None]]
    unfinished: Callable[[Ticket], str | None]
    index: CustomerIndex
    oldest: timedelta = field(default=timedelta(days=1))
    # Closes actions waiting for a person (done, failed); None: no executor, such decisions
    # close nothing and are refused.
    closer: Closer | None = None

    async def handle(
        self, value: bytes | None, source: Source, headers: Headers | None = None
    ) -> None:
        """Check one record of the decisions topic and apply it, or dead-letter it."""
        self.observer.record_in(STAGE)
        problem = self.signer.problem(self.topics.decisions, source.key, value, headers)
        if problem is not None:
            await self._refuse(value, "untrusted_record", problem, source)
            return
        try:
            decision = parse(Decision, value)
        except InvalidRecord as exc:
            await self._refuse(value, "invalid_input", str(exc), source)
            return
        if (stale := people_replays.stale(decision, utcnow(), self.oldest)) is not None:
            await self._refuse(value, "decision_expired", stale, source, decision)
            return
        if (problem := self.admission.misplaced(source)(decision.session_id)) is not None:
            await self._refuse(value, "untrusted_record", problem, source, decision)
            return
        session, name = decision.session_id, holder(decision.decision_id)
        probe = Ticket.model_construct(ticket_id=name, session_id=session, text="")
        await self.gate.enter(session, name, lambda: self.unfinished(probe))
        try:
            await self._apply(decision, value, source, headers)
        except TRANSIENT:
            raise  # left unacked: read again after a restart, and the dead letter could fail too
        except Exception as exc:
            # A bug or a record nobody foresaw: its partition moves on past a dead letter.
            log.exception("session %s: decision failed", shown(session))
            error = f"{type(exc).__name__}: {str(exc)[:300]}"
            await self._refuse(value, "decision_failed", error, source, decision)
        finally:
            self.gate.leave(session, name)
        if decision.action in ON_ACTION and self.closer is not None:
            # Outside the gate: telling notes the action in the baton, between tickets.
            await self.closer.told(decision)

    async def _apply(
        self, decision: Decision, value: bytes | None, source: Source, headers: Headers | None
    ) -> None:
        baton = self.batons.get(decision.session_id)
        note = people.applied(baton, decision.decision_id) if baton is not None else None
        kept = people_replays.seen(baton, decision.decision_id) if baton is not None else None
        read_at = kept.source if kept is not None else note.source if note is not None else None
        if baton is not None and read_at is not None:
            if read_at != place(source):
                error = f"decision {decision.decision_id} was applied already (read at {read_at})"
                await self._refuse(value, "decision_replayed", error, source, decision)
                return
            # A redelivered copy: finish what the crash interrupted, no second reply.
            if note is not None:
                await self._deliver(decision, baton, note.reply, resumed=True)
            self.observer.stage_done(STAGE, "reused", 0.0)
            return
        try:
            people.check(decision, baton)
            assert baton is not None  # check refuses a session without one
            if decision.action in ON_ACTION:
                if self.closer is None:
                    raise people.Refused("decision_not_pending", "no executor: no action waits")
                await self.closer.close(decision)
            order = await self._order(decision, baton)
            customer = baton.customer_id
            done = people.apply(
                decision,
                baton,
                order=order,
                policy=self.policy,
                today=utcnow().date(),
                history=recallable(baton, self.batons.index(customer) if customer else None),
                own=await self._own(decision, baton),
                source=place(source),
                keep_for=self.oldest,
            )
        except people.Refused as exc:
            await self._refuse(value, exc.reason, str(exc), source, decision)
            return
        log.info(
            "session %s: %s decision %s applied",
            shown(decision.session_id),
            decision.action,
            shown(decision.decision_id),
        )
        if decision.action in AUTHORISING and value is not None:
            done = people.Applied(signed(done.baton, decision, value, headers), done.reply)
        # Durable before the reply goes out: a crash in between resends it from the note.
        await self.batons.save_durably(done.baton)
        reply = dumps(done.reply).decode() if done.reply is not None else ""
        await self._deliver(decision, done.baton, reply, resumed=False)
        self.observer.stage_done(STAGE, "ok", 0.0)

    async def _order(self, decision: Decision, baton: Baton) -> Order | None:
        """The order as the store holds it now: the parked offer's (approve and deny), or the
        one an answer is about; None for the other actions."""
        if decision.action == "answer":
            order_id = people_answers.order_id(decision, baton)
        elif decision.action in ON_OFFER and baton.pending is not None:
            lines = baton.pending.offer.lines
            order_id = lines[0].order_id if lines else None
        else:
            order_id = None
        if not order_id:
            return None
        return await self._read(lambda: self.store.get(order_id))

    async def _own(self, decision: Decision, baton: Baton) -> list[Order]:
        """The customer's orders as the store holds them, for an answer (it may name any)."""
        if decision.action != "answer" or not baton.customer_id:
            return []
        customer = baton.customer_id
        return await self._read(lambda: self.store.for_customer(customer))

    async def _read(self, read: Callable[[], Awaitable[T]]) -> T:
        """``read()`` from the order store, tried again with backoff; a store that stays away
        refuses the decision (``order_store_unavailable``), which a copy may retry."""
        for attempt in range(STORE_ATTEMPTS - 1):
            try:
                return await read()
            except StoreUnavailable:
                await asyncio.sleep(0.2 * 2**attempt)
        try:
            return await read()
        except StoreUnavailable as exc:
            raise people.Refused("order_store_unavailable", str(exc)) from exc

    async def _deliver(self, decision: Decision, baton: Baton, reply: str, resumed: bool) -> None:
        """Send the decision's reply unless the topic has it, then mark it sent."""
        sent: Reply | None = None
        if reply:
            sent = Reply.model_validate_json(reply)
            if not (resumed and await self._on_topic(sent, decision.decision_id)):
                await self.sink.send(self.topics.replies, sent.session_id, reply.encode())
            since = sent.replied_at - REPLY_SCAN_MARGIN if resumed else None
            await publish(self.sink, self.topics.actions, sent, since)
            baton = people.delivered(baton, decision.decision_id)
            await self.batons.save_durably(baton)
        if sent is not None:
            self.observer.reply(sent, None)
        await self.index.send(baton, sent.ticket_id if sent is not None else None)

    async def _on_topic(self, reply: Reply, decision_id: str) -> bool:
        marker = f'"decision_id":{dumps(decision_id).decode()}'.encode()

        def is_it(value: bytes) -> bool:
            return marker in value and Reply.model_validate_json(value).decision_id == decision_id

        since = reply.replied_at - REPLY_SCAN_MARGIN
        return await self.sink.contains(self.topics.replies, reply.session_id, since, is_it)

    async def _refuse(
        self,
        value: bytes | None,
        reason: str,
        error: str,
        source: Source,
        decision: Decision | None = None,
    ) -> None:
        """Dead-letter a decision that cannot be applied: nothing of the session changes."""
        dl = dead_letters.letter(
            stage=STAGE,
            reason=reason,
            error=error,
            payload=value or b"",
            source=source,
            session_id=decision.session_id if decision else None,
            ticket_id=decision.item if decision else None,
        )
        await self.dead_letter(dl, source)
        self.observer.stage_done(STAGE, "refused", 0.0)

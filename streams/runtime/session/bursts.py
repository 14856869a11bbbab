"""Bursts answered once: a session's tickets that reach baton close together become one turn."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from baton_kafka.schemas.codec import InvalidRecord
from baton_kafka.schemas.records import MAX_TEXT_CHARS, Reply, utcnow
from baton_kafka.schemas.stages import StageRecord
from baton_kafka.streams.runtime.records.dead_letters import Source
from baton_kafka.streams.runtime.records.delivery import Delivery
from baton_kafka.streams.runtime.session import ownership

# A customer writing on and on still gets an answer: a turn takes at most this many tickets.
BURST_MAX = 8
# The messages of a turn, one per line: the understand prompt reads them as one message.
SEPARATOR = "\n"
# How long a record read again (its window long past) waits for the records read with it to
# take their places behind it: a restarted worker gathers the burst it was holding.
GRACE_S = 1.0


def turn_ids(record: StageRecord) -> list[str]:
    """Every ticket the record's turn answers, oldest first."""
    return [record.ticket.ticket_id, *record.burst]


def joined(record: StageRecord, later: list[StageRecord]) -> StageRecord:
    """``record`` as the turn of ``later`` too: their texts after its own, their ids in burst."""
    if not later:
        return record
    text = SEPARATOR.join([record.ticket.text, *(r.ticket.text for r in later)])
    return record.model_copy(
        update={
            "ticket": record.ticket.model_copy(update={"text": text}),
            "burst": [*record.burst, *(r.ticket.ticket_id for r in later)],
        }
    )


def coalesced(reply: Reply) -> list[Reply]:
    """The record of each other ticket ``reply`` answers, naming the reply (derived from the
    reply alone: a resumed reply derives the same records)."""
    return [
        Reply(
            ticket_id=ticket_id,
            session_id=reply.session_id,
            customer_id=reply.customer_id,
            status="coalesced",
            reply="",
            solution="",
            internal_note=f"Answered together with ticket {reply.ticket_id} by its reply.",
            confidence=reply.confidence,
            order_id=reply.order_id,
            product=reply.product,
            language=reply.language,
            baton_version=reply.baton_version,
            llm=reply.llm,
            policy_version=reply.policy_version,
            answered_by=reply.ticket_id,
            replied_at=reply.replied_at,
        )
        for ticket_id in reply.ticket_ids[1:]
    ]


def is_coalesced(value: bytes, ticket_id: str, by: str) -> bool:
    """The replies-topic record ``value`` is ``ticket_id``'s coalesced record naming ``by``."""
    if ticket_id.encode() not in value or b'"coalesced"' not in value:
        return False
    found = Reply.model_validate_json(value)
    return found.ticket_id == ticket_id and found.answered_by == by


@dataclass
class Bursts:
    """The records of each session queued at the first stage, and the turn a ticket gathers.

    A queued record stays unacked until its own turn on the stage (the scheduler acks in
    order), so a ticket gathered into an earlier one's turn is read again after a crash or a
    rebalance, and the baton then settles it: held in the window, it is never lost.
    """

    window_s: float
    # Per session, its queued records with when each took its place (monotonic seconds).
    _queued: dict[str, list[tuple[Delivery, float]]] = field(default_factory=dict)
    _news: dict[str, asyncio.Event] = field(default_factory=dict)

    def arrived(self, delivery: Delivery) -> None:
        """A record took its place in its session's queue at the first stage."""
        ticket = delivery.ticket()
        if ticket is None:
            return
        self._queued.setdefault(ticket.session_id, []).append((delivery, time.monotonic()))
        news = self._news.pop(ticket.session_id, None)
        if news is not None:
            news.set()

    def started(self, delivery: Delivery) -> None:
        """The record's own turn on the first stage began: it waits in no queue any more."""
        ticket = delivery.ticket()
        queued = self._queued.get(ticket.session_id) if ticket is not None else None
        if ticket is None or queued is None:
            return
        queued[:] = [q for q in queued if q[0] is not delivery]
        if not queued:
            del self._queued[ticket.session_id]

    def queued(self, session_id: str) -> int:
        """Records of the session waiting in its queue (for the tests and the metrics)."""
        return len(self._queued.get(session_id, ()))

    def arrival(self, delivery: Delivery) -> float | None:
        """When the queued ``delivery`` took its place (monotonic seconds), if it is queued."""
        ticket = delivery.ticket()
        queued = self._queued.get(ticket.session_id, []) if ticket is not None else []
        return next((at for d, at in queued if d is delivery), None)

    async def gather(
        self,
        record: StageRecord,
        source: Source,
        joins: Callable[[Delivery], bool],
        arrived: float | None = None,
    ) -> list[StageRecord]:
        """The session's tickets queued behind ``record`` (read at ``source``, queued at
        ``arrived``) that join its turn: each reached baton within the window of the one
        before; the window of the last is waited out for one more, and at least ``GRACE_S``
        after it was queued here.

        Only tickets of ``record``'s own sender (its customer, its guest) join, baton or not:
        another sender's ticket is passed over, to be refused in its own turn. ``joins`` says
        whether a queued record may be answered in another ticket's turn (a valid ticket of
        the session's owner, not a copy); the turn ends before the first that may not, so no
        ticket is answered ahead of an earlier one.
        """
        try:
            return await self._gather(record, source, joins, arrived)
        finally:
            # One waiter per session at a time (its records run in order): none left behind.
            self._news.pop(record.ticket.session_id, None)

    async def _gather(
        self,
        record: StageRecord,
        source: Source,
        joins: Callable[[Delivery], bool],
        arrived: float | None,
    ) -> list[StageRecord]:
        session_id = record.ticket.session_id
        while True:
            later, queued_at = self._later(record, source, joins)
            if len(later) + 1 >= BURST_MAX:
                return later
            last = later[-1] if later else record
            left = (last.received_at - utcnow()).total_seconds() + self.window_s
            local = queued_at if later else arrived
            if local is not None:
                grace = min(GRACE_S, self.window_s)
                left = max(left, local + grace - time.monotonic())
            if left <= 0:
                return later
            news = self._news.setdefault(session_id, asyncio.Event())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(news.wait(), left)

    def _later(
        self, record: StageRecord, source: Source, joins: Callable[[Delivery], bool]
    ) -> tuple[list[StageRecord], float | None]:
        later: list[StageRecord] = []
        last, chars, queued_at = record, len(record.ticket.text), None
        seen = {record.ticket.ticket_id}
        for delivery, at_local in self._queued.get(record.ticket.session_id, ()):
            at = delivery.source
            if at.topic != source.topic or at.partition != source.partition:
                break
            if source.offset is not None and at.offset is not None and at.offset <= source.offset:
                continue  # left by a turn a rebalance cut short: read again behind this one
            try:
                candidate = delivery.record()
            except InvalidRecord:
                break
            if not ownership.shares(record.ticket, candidate.ticket):
                # Another sender's ticket: never part of this turn, whether or not the session
                # has a baton yet; its own turn refuses it once the turn's owner holds it.
                continue
            gap = (candidate.received_at - last.received_at).total_seconds()
            chars += len(SEPARATOR) + len(candidate.ticket.text)
            ticket_id = candidate.ticket.ticket_id
            if gap > self.window_s or chars > MAX_TEXT_CHARS or ticket_id in seen:
                break
            if len(later) + 1 >= BURST_MAX or not joins(delivery):
                break
            later.append(candidate)
            seen.add(ticket_id)
            last, queued_at = candidate, at_local
        return later, queued_at

"""Approval deadlines: an offer no person decides in time is escalated once, in session order."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from baton_kafka.agents import escalation
from baton_kafka.schemas.baton import Baton
from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.decision import Escalation
from baton_kafka.schemas.handoff import HandoffPacket
from baton_kafka.schemas.records import Reply, Ticket, utcnow
from baton_kafka.streams.observe.shown import shown
from baton_kafka.streams.runtime.answers.clocks import Clocks
from baton_kafka.streams.runtime.answers.handoffs import Desk
from baton_kafka.streams.runtime.answers.index import CustomerIndex
from baton_kafka.streams.runtime.answers.redelivery import REPLY_SCAN_MARGIN
from baton_kafka.streams.runtime.records.sink import Sink
from baton_kafka.streams.runtime.session import expiry
from baton_kafka.streams.runtime.session.batons import BatonStore
from baton_kafka.streams.runtime.session.scheduler import SessionGate

log = logging.getLogger("baton.escalations")


def holder(item: str) -> str:
    """The name an escalation holds its session's gate under (never a ticket id's)."""
    return f"escalation:{item}"


def _everywhere(session_id: str) -> bool:
    return True


@dataclass
class Escalations:
    """Sets each parked offer's approval deadline on the worker's clocks; escalates it once.

    The escalation enters the session's gate like a decision, so it is ordered with the
    session's tickets and decisions; the baton records it with its reply and packet before
    either is sent, and a worker that finds them unsent (a crash between) sends what the
    topics lack.
    """

    timeout_s: float
    batons: BatonStore
    clocks: Clocks
    gate: SessionGate
    sink: Sink
    replies_topic: str
    handoffs_topic: str
    desk: Desk
    index: CustomerIndex
    policy_version: str
    default_language: str
    unfinished: Callable[[Ticket], str | None]
    # Whether this worker owns the session now (its partition is assigned to it).
    owned: Callable[[str], bool] = field(default=_everywhere)
    escalated: int = 0

    def arm(self, baton: Baton) -> None:
        """Set the deadline of ``baton``'s pending offer, or finish an unsent escalation."""
        session = baton.session_id
        # One recorded before the timeout was turned off is still finished.
        for late in escalation.unsent(baton):
            self.clocks.alarm(holder(late.item), utcnow(), self._step(session, late.item, True))
        if baton.pending is not None and self.timeout_s > 0:
            at = escalation.due(baton.pending, self.timeout_s)
            self.clocks.alarm(
                holder(baton.pending.item), at, self._step(session, baton.pending.item)
            )

    def _step(self, session: str, item: str, resume: bool = False) -> Callable[[], Awaitable[None]]:
        async def ring() -> None:
            if not self.owned(session):
                return  # the session moved: its new worker's sweep sets the deadline again
            await self._held(session, item, self._finish if resume else self._escalate)

        return ring

    async def sweep(self, owned: Callable[[str], bool]) -> int:
        """Arm the deadlines of every owned session's pending offer (after a start or a
        rebalance, this worker's clocks know none of them); returns how many are parked."""
        parked = 0
        for seen, baton in enumerate(self.batons.parked(owned), 1):
            if seen % expiry.YIELD_EVERY == 0:
                await asyncio.sleep(0)
            if baton.pending is not None or escalation.unsent(baton):
                parked += baton.pending is not None
                self.arm(baton)
        return parked

    async def _held(
        self, session: str, item: str, step: Callable[[str, str], Awaitable[None]]
    ) -> None:
        """``step`` between the session's tickets and decisions, holding its gate."""
        name = holder(item)
        probe = Ticket.model_construct(ticket_id=name, session_id=session, text="")
        await self.gate.enter(session, name, lambda: self.unfinished(probe))
        try:
            await step(session, item)
        finally:
            self.gate.leave(session, name)

    async def _escalate(self, session: str, item: str) -> None:
        baton = self.batons.get(session)
        if not escalation.overdue(baton, item, self.timeout_s, utcnow()):
            # Decided meanwhile, or a person has the session: the next sweep looks again.
            return
        assert baton is not None and baton.pending is not None
        reply = escalation.reply_of(
            baton, baton.pending, self.policy_version, self.default_language
        )
        packet = self.desk.for_escalation(baton, reply, self.timeout_s)
        done = escalation.escalate(baton, reply, packet)
        # Durable before either is sent: a restart finds them in the baton, never escalates
        # again, and a late decision on the offer is refused.
        await self.batons.save_durably(done)
        log.info("session %s: the approval of %s timed out, escalated", shown(session), shown(item))
        await self.sink.send(self.replies_topic, session, dumps(reply))
        await self.sink.send(self.handoffs_topic, session, dumps(packet))
        await self._sent(done, item, reply)

    async def _finish(self, session: str, item: str) -> None:
        """Send what the topics lack of an escalation recorded before a crash."""
        baton = self.batons.get(session)
        late = escalation.of(baton, item)
        if baton is None or late is None or not (late.reply or late.packet):
            return
        reply = Reply.model_validate_json(late.reply) if late.reply else None
        if reply is not None and not await self._on_topic(reply, late):
            await self.sink.send(self.replies_topic, session, late.reply.encode())
        if late.packet and not await self._packet_on_topic(session, late):
            await self.sink.send(self.handoffs_topic, session, late.packet.encode())
        await self._sent(baton, item, reply)

    async def _sent(self, baton: Baton, item: str, reply: Reply | None) -> None:
        baton = escalation.sent(baton, item)
        await self.batons.save_durably(baton)
        self.escalated += 1
        await self.index.send(baton, reply.ticket_id if reply is not None else None)

    async def _on_topic(self, reply: Reply, late: Escalation) -> bool:
        marker = f'"llm":"{escalation.ESCALATED}"'.encode()

        def is_it(value: bytes) -> bool:
            if marker not in value:
                return False
            found = Reply.model_validate_json(value)
            return found.ticket_id == reply.ticket_id and found.llm == escalation.ESCALATED

        since = late.at - REPLY_SCAN_MARGIN
        return await self.sink.contains(self.replies_topic, reply.session_id, since, is_it)

    async def _packet_on_topic(self, session: str, late: Escalation) -> bool:
        packet_id = HandoffPacket.model_validate_json(late.packet).packet_id
        marker = f'"packet_id":{dumps(packet_id).decode()}'.encode()

        def is_it(value: bytes) -> bool:
            return (
                marker in value and HandoffPacket.model_validate_json(value).packet_id == packet_id
            )

        since = late.at - REPLY_SCAN_MARGIN
        return await self.sink.contains(self.handoffs_topic, session, since, is_it)


class EscalationGauges(Collector):
    """Approval deadlines set on this worker's clocks; approvals escalated."""

    def __init__(self, escalations: Escalations) -> None:
        self.escalations = escalations

    def describe(self) -> Iterable[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(
            "baton_approval_deadlines",
            "Offers waiting for approval whose deadline this worker's clocks hold",
            value=sum(key.startswith("escalation:") for key in self.escalations.clocks.alarms),
        )
        yield CounterMetricFamily(
            "baton_approval_escalations",
            "Offers escalated after waiting for approval past BATON_APPROVAL_TIMEOUT",
            value=self.escalations.escalated,
        )

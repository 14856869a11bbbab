"""Redelivered copies made harmless by the baton's entry in flight (docs/guarantees.md)."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from baton_kafka.agents import memory, people
from baton_kafka.schemas.baton import Baton, InFlight
from baton_kafka.schemas.codec import dumps
from baton_kafka.schemas.handoff import HandoffPacket
from baton_kafka.schemas.records import Reply, StageName, Ticket
from baton_kafka.schemas.stages import StageRecord
from baton_kafka.streams.actions.publish import publish
from baton_kafka.streams.observe.observer import Observer
from baton_kafka.streams.runtime.chain import BUILTIN, Chain
from baton_kafka.streams.runtime.records.sink import Sink
from baton_kafka.streams.runtime.session.batons import BatonStore
from baton_kafka.streams.runtime.session.bursts import coalesced, is_coalesced
from baton_kafka.streams.runtime.session.scheduler import SessionGate

# How far before its pending entry a reply is looked for on the topic: the entry's time is
# taken before the send, the record's timestamp by the broker.
REPLY_SCAN_MARGIN = timedelta(seconds=5)

# How the session's baton is read: a caller that read it already passes its reader (the
# record's view), so one record's checks read the store once.
Held = Callable[[], Baton | None]


def own_entry(baton: Baton | None, ticket: Ticket) -> InFlight | None:
    """The baton's entry in flight if it belongs to ``ticket``."""
    entry = baton.in_flight if baton is not None else None
    return entry if entry is not None and entry.ticket_id == ticket.ticket_id else None


@dataclass
class Redelivery:
    """Writes each stage's result into the baton before sending it; settles copies from it."""

    batons: BatonStore
    sink: Sink
    gate: SessionGate
    observer: Observer
    replies_topic: str
    handoffs_topic: str = ""
    chain: Chain = BUILTIN
    # Awaited with the ticket id before its reply is sent (the first-reply clock stops).
    answering: Callable[[str], Awaitable[None]] | None = None
    # Called with the baton a reply parked on an offer waiting for approval (its deadline).
    parked: Callable[[Baton], None] | None = None
    # Where an approved offer's actions go, written with the reply (empty: nowhere).
    actions_topic: str = ""

    def _reader(self, ticket: Ticket, held: Held | None) -> Held:
        return held if held is not None else lambda: self.batons.get(ticket.session_id)

    def entry(self, ticket: Ticket, held: Held | None = None) -> InFlight | None:
        """The ticket's entry in flight, if its session's baton holds one."""
        return own_entry(self._reader(ticket, held)(), ticket)

    def known(self, ticket: Ticket, held: Held | None = None) -> bool:
        """The baton holds the ticket in flight or answered: a copy is settled from it."""
        entry = self.entry(ticket, held)
        return entry is not None or self.finished(ticket, entry, held)

    def finished(self, ticket: Ticket, entry: InFlight | None, held: Held | None = None) -> bool:
        """The ticket has its reply (sent, or pending in ``entry``): a copy goes no further."""
        if entry is not None and entry.pending:
            return True
        baton = self._reader(ticket, held)()
        return baton is not None and ticket.ticket_id in baton.answered

    def unfinished(self, ticket: Ticket) -> str | None:
        """Another ticket of the session the baton shows started and not answered."""
        baton = self.batons.get(ticket.session_id)
        if baton is None:
            return None
        # Only tickets the chain saw start can be unfinished: memories rebuilt from a record's
        # snapshot stand for earlier tickets, have no status and must not hold the session.
        first = self.chain.first.name
        started = {e.ticket_id for e in baton.chain if e.stage == first}
        open_ = [
            t.ticket_id
            for t in baton.tickets
            if t.status is None and t.ticket_id != ticket.ticket_id and t.ticket_id in started
        ]
        return open_[-1] if open_ else None

    async def settle(
        self,
        stage: StageName,
        ticket: Ticket,
        entry: InFlight | None,
        topic: str,
        held: Held | None = None,
    ) -> bool:
        """Settle a copy of a ticket the stage has seen before (``entry``); False if it must run.

        A finished ticket's copy stops here and frees the session. A ticket past this stage
        has its output on the next topic already, so the copy stops without freeing the
        session (the original is still on its way). A ticket whose entry is this stage's
        sends the recorded output again: the crash may have come before it was acknowledged.
        """
        if self.finished(ticket, entry, held):
            self.gate.leave(ticket.session_id, ticket.ticket_id)
        elif entry is None or not entry.reached(stage, self.chain.names):
            return False
        elif entry.stage == stage:
            await self.sink.send(topic, ticket.session_id, entry.output.encode())
        self.observer.stage_done(stage, "reused", 0.0)
        return True

    async def forward(
        self, stage: StageName, out: StageRecord, baton: Baton, topic: str
    ) -> tuple[bytes, int | None]:
        """Record ``out`` as the ticket's entry in ``baton``, then send it to ``topic``; returns
        the bytes sent and their offset (None: not known)."""
        data = dumps(out)
        # One changelog record for both: the baton and the output a redelivered copy resends.
        entry = InFlight(
            ticket_id=out.ticket.ticket_id, stage=stage, output=data.decode(), reply=False
        )
        self.batons.save(baton.model_copy(update={"in_flight": entry}))
        return data, await self.sink.send(topic, out.ticket.session_id, data)

    async def reply(self, reply: Reply, baton: Baton, packet: HandoffPacket | None = None) -> Baton:
        """Publish the reply once, then its hand-off packet if any; returns the baton that
        records the reply as answered.

        The baton first holds both as pending (acknowledged before either is sent), so a crash
        between sending and recording is resolved from the topics themselves.
        """
        data = dumps(reply)
        handoff = dumps(packet).decode() if packet is not None else None
        pending = InFlight(
            ticket_id=reply.ticket_id,
            stage=self.chain.answering.name,
            output=data.decode(),
            reply=True,
            handoff=handoff,
        )
        await self.batons.save_durably(baton.model_copy(update={"in_flight": pending}))
        await self._answering(reply)
        await self.sink.send(self.replies_topic, reply.session_id, data)
        for other in coalesced(reply):
            await self.sink.send(self.replies_topic, reply.session_id, dumps(other))
        if handoff is not None:
            await self.sink.send(self.handoffs_topic, reply.session_id, handoff.encode())
        await publish(self.sink, self.actions_topic, reply)
        return await self._answered(reply, baton)

    async def resume(
        self, entry: InFlight, baton: Baton, *, checked: bool = True
    ) -> tuple[Reply, Baton]:
        """Finish the reply ``baton`` holds as pending: send it unless the topic has it
        (``checked=False``: send it without looking, when the topics cannot be read)."""
        reply = Reply.model_validate_json(entry.output)
        marker = f'"ticket_id":{dumps(reply.ticket_id).decode()}'.encode()

        def is_it(value: bytes) -> bool:
            if marker not in value:
                return False
            # A person's decision may answer the same ticket, a holding reply precede it:
            # neither is the agents' reply.
            found = Reply.model_validate_json(value)
            return (
                found.ticket_id == reply.ticket_id
                and found.decision_id is None
                and found.status != "holding"
            )

        since = entry.at - REPLY_SCAN_MARGIN

        async def on_topic(topic: str, match: Callable[[bytes], bool]) -> bool:
            return checked and await self.sink.contains(topic, reply.session_id, since, match)

        await self._answering(reply)
        if await on_topic(self.replies_topic, is_it):
            self.observer.stage_done(entry.stage, "reused", 0.0)
        else:
            await self.sink.send(self.replies_topic, reply.session_id, entry.output.encode())
        for other in coalesced(reply):
            found = functools.partial(is_coalesced, ticket_id=other.ticket_id, by=reply.ticket_id)
            if not await on_topic(self.replies_topic, found):
                await self.sink.send(self.replies_topic, reply.session_id, dumps(other))
        if entry.handoff is not None:
            await self._resume_packet(entry.handoff, reply, since, checked)
        await publish(self.sink, self.actions_topic, reply, since if checked else None)
        return reply, await self._answered(reply, baton)

    async def _answering(self, reply: Reply) -> None:
        """Stop the first-reply clock of every ticket the reply answers."""
        if self.answering is not None:
            for ticket_id in reply.ticket_ids:
                await self.answering(ticket_id)

    async def _resume_packet(
        self, handoff: str, reply: Reply, since: datetime, checked: bool = True
    ) -> None:
        """Send the pending hand-off packet unless the handoffs topic has it already."""
        packet = HandoffPacket.model_validate_json(handoff)
        marker = f'"packet_id":{dumps(packet.packet_id).decode()}'.encode()

        def is_it(value: bytes) -> bool:
            return (
                marker in value
                and HandoffPacket.model_validate_json(value).packet_id == packet.packet_id
            )

        if not (
            checked
            and await self.sink.contains(self.handoffs_topic, reply.session_id, since, is_it)
        ):
            await self.sink.send(self.handoffs_topic, reply.session_id, handoff.encode())

    async def _answered(self, reply: Reply, baton: Baton) -> Baton:
        # An offer waiting for approval parks the session in the same write.
        baton = people.park(memory.apply_reply(baton, reply), reply)
        # Durable before the session moves on: from then on only the baton's answered list
        # keeps a redelivered copy from a second reply.
        await self.batons.save_durably(baton)
        if baton.pending is not None and self.parked is not None:
            self.parked(baton)
        return baton

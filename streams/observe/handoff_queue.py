"""The dashboard's hand-off queue: the hand-offs no person's decision settled yet, oldest
first, and the decisions the worker refused on them; read from the handoffs, decisions,
replies and dead-letters topics."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from aiokafka import TopicPartition
from pydantic import ValidationError

from baton_kafka.agents import staff_notes
from baton_kafka.schemas.decision import ON_OFFER, Decision
from baton_kafka.schemas.framing import unframe
from baton_kafka.schemas.handoff import HandoffPacket
from baton_kafka.schemas.records import DeadLetter, Reply
from baton_kafka.streams.kafka.client import Message
from baton_kafka.streams.settings import Settings

REFRESH_S = 3.0
"""A read of the topics serves every request of the next few seconds, whoever asks."""
SHOWN = 100
"""Open hand-offs the page lists, oldest first (the count says how many there are)."""
# A person's decision's reply, before it is parsed: plain replies carry "decision_id":null.
_DECIDED = b'"decision_id":"'
# An action's follow-up, before it is parsed: one of an offer no person approved carries
# "decision_id":null too, yet it settles the action's hand-off.
_FOLLOW_UP = b'"ticket_id":"action:'
# A refused decision's dead letter, before it is parsed.
_REFUSED = b'"stage":"decide"'
# Clocks of the desk and of the workers differ a little: a reply read from a bit earlier.
REPLY_MARGIN = timedelta(minutes=5)
_NEVER = datetime.min.replace(tzinfo=UTC)
M = TypeVar("M", HandoffPacket, Decision, Reply, DeadLetter)


@dataclass(frozen=True)
class Sent:
    """A decision this dashboard sent on a hand-off, until the queue sees it settled."""

    decision_id: str
    action: str
    at: datetime


@dataclass(frozen=True)
class Refusal:
    """A decision on a hand-off that the worker dead-lettered: why, in its words."""

    decision_id: str
    action: str
    reason: str
    error: str
    at: datetime


@dataclass(frozen=True)
class Read:
    """What the queue is built from: the packets, the decisions, people's replies, and the
    dead letters of refused decisions."""

    packets: list[HandoffPacket]
    decisions: list[Decision] = field(default_factory=list)
    replies: list[Reply] = field(default_factory=list)
    letters: list[DeadLetter] = field(default_factory=list)


def records(model: type[M], messages: Iterable[Message]) -> list[M]:
    """The readable records of ``model`` among ``messages`` (framed or plain); others skipped."""
    out: list[M] = []
    for m in messages:
        try:
            out.append(model.model_validate_json(unframe(m.value or b"")[1]))
        except ValidationError:
            continue  # not such a record: a consumer skips it, as the docs say
    return out


def open_handoffs(read: Read) -> list[HandoffPacket]:
    """The packets still waiting for a person, each once, oldest first.

    A packet with an offer waiting for approval is settled by an approval or a denial of the
    session applied after it (its reply is on the replies topic: a refused decision settles
    nothing); an action's by the follow-up of a person's done or failed on it; any other by a
    person's reply to its ticket; every packet by a close of its session decided after it.
    """
    by_id = {d.decision_id: d for d in read.decisions}
    closed: dict[str, datetime] = {}
    for d in read.decisions:
        if d.action == "close":
            closed[d.session_id] = max(closed.get(d.session_id, _NEVER), d.decided_at)
    offer_settled: dict[str, datetime] = {}
    answered: set[tuple[str, str]] = set()
    for r in read.replies:
        decision = by_id.get(r.decision_id or "")
        if decision is None:
            continue
        if decision.action in ON_OFFER:
            last = offer_settled.get(r.session_id, _NEVER)
            offer_settled[r.session_id] = max(last, r.replied_at)
        answered.add((r.session_id, r.ticket_id))
    # A person's closing of an action: its follow-up is action:<key>:<decision id>.
    acted = {
        r.ticket_id.split(":")[1]
        for r in read.replies
        if r.ticket_id.startswith("action:") and r.ticket_id.count(":") >= 2
    }
    seen: set[str] = set()
    out: list[HandoffPacket] = []
    for p in sorted(read.packets, key=lambda p: (p.handed_off_at, p.packet_id)):
        if p.packet_id in seen or p.handed_off_at <= closed.get(p.session_id, _NEVER):
            continue
        seen.add(p.packet_id)
        if p.action is not None:
            if p.action.idempotency_key in acted:
                continue
        elif p.proposed_offer is not None:
            if p.handed_off_at <= offer_settled.get(p.session_id, _NEVER):
                continue
        elif (p.session_id, p.ticket_id) in answered:
            continue
        out.append(p)
    return out


def settling(value: bytes | None) -> bool:
    """Whether a record of the replies topic may settle a hand-off (a reply to a person's
    decision, or an action's follow-up), read before it is parsed."""
    return value is not None and (_DECIDED in value or _FOLLOW_UP in value)


def refusals(read: Read) -> dict[tuple[str, str], Refusal]:
    """The latest refused decision on each ``(session, ticket)``, from its dead letter."""
    out: dict[tuple[str, str], Refusal] = {}
    for letter in sorted(read.letters, key=lambda dl: dl.failed_at):
        if letter.stage != "decide":
            continue
        try:
            d = Decision.model_validate_json(letter.payload)
        except ValidationError:
            continue  # not a decision at all: it names no hand-off
        if d.item is not None:
            out[(d.session_id, d.item)] = Refusal(
                d.decision_id, d.action, letter.reason, letter.error, letter.failed_at
            )
    return out


def money_lines(packet: HandoffPacket) -> int:
    """How many lines of the packet's proposed offer carry an amount (0: no offer)."""
    offer = packet.proposed_offer
    return sum(1 for line in offer.lines if line.amount) if offer is not None else 0


def key(packet: HandoffPacket) -> tuple[str, str]:
    """What a decision on the packet names, as ``(session, item)``: an action's hand-off its
    action's idempotency key (done, failed), any other its ticket id; a decision on the offer
    that led to the action is not the action's."""
    if packet.action is not None:
        return (packet.session_id, packet.action.idempotency_key)
    return (packet.session_id, packet.ticket_id)


def item(packet: HandoffPacket, sent: Sent | None, refused: Refusal | None) -> dict[str, Any]:
    """One open hand-off as the page gets it: the packet, whether its amount may be changed,
    the decision sent on it from this dashboard and the last one the worker refused, if any."""
    if refused is not None and refused.at < packet.handed_off_at:
        refused = None  # about an earlier hand-off of the ticket
    note = packet.note
    if note is not None and not note.flagged and (found := staff_notes.flags(note.text)):
        # A packet from before notes were flagged: flagged here, before a person reads it.
        note = note.model_copy(update={"flagged": found})
        packet = packet.model_copy(update={"note": note, "internal_note": note.labelled()})
    return {
        **packet.model_dump(mode="json"),
        "amount_editable": money_lines(packet) == 1,
        "sent": (
            {"decision_id": sent.decision_id, "action": sent.action, "at": sent.at.isoformat()}
            if sent is not None
            else None
        ),
        "refused": (
            {
                "decision_id": refused.decision_id,
                "action": refused.action,
                "reason": refused.reason,
                "error": refused.error,
            }
            if refused is not None
            else None
        ),
    }


async def read_desk(settings: Settings) -> Read:
    """The handoffs and decisions topics whole; the replies and dead letters since the oldest
    open packet."""
    from baton_kafka.streams.kafka.reader import offsets_at, read_topics
    from baton_kafka.streams.kafka.topics import TopicNames

    names = TopicNames.of(settings)
    found = await read_topics(settings, [names.handoffs, names.decisions])
    read = Read(
        records(HandoffPacket, found[names.handoffs]), records(Decision, found[names.decisions])
    )
    waiting = open_handoffs(read)
    if not waiting:
        return read
    since = int((waiting[0].handed_off_at - REPLY_MARGIN).timestamp() * 1000)
    later = [names.replies, names.dead_letters]
    start: dict[TopicPartition, int] = {}
    for topic in later:
        offsets = await offsets_at(settings, topic, since)
        # A partition with no record that late is read whole (its records are few or old).
        start |= {TopicPartition(topic, p): o for p, o in offsets.items() if o is not None}
    found = await read_topics(settings, later, start=start)
    replies = [m for m in found[names.replies] if settling(m.value)]
    letters = [m for m in found[names.dead_letters] if m.value and _REFUSED in m.value]
    return Read(read.packets, read.decisions, records(Reply, replies), records(DeadLetter, letters))


class HandoffQueue:
    """The open hand-offs, re-read at most every ``REFRESH_S`` seconds, and the decisions
    this dashboard sent on them."""

    def __init__(
        self,
        settings: Settings,
        read: Callable[[Settings], Awaitable[Read]] = read_desk,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings, self._read, self._clock = settings, read, clock
        self.sent: dict[tuple[str, str], Sent] = {}
        self._open: list[HandoffPacket] = []
        self._refused: dict[tuple[str, str], Refusal] = {}
        self._read_at = -REFRESH_S
        self._lock = asyncio.Lock()

    async def open(self, fresh: bool = False) -> Sequence[HandoffPacket]:
        """The open hand-offs, oldest first; ``fresh``: read now, whenever the last read was."""
        async with self._lock:
            if fresh or self._clock() - self._read_at >= REFRESH_S:
                read = await self._read(self.settings)
                self._open, self._refused = open_handoffs(read), refusals(read)
                self._read_at = self._clock()
                # Settled, or refused by the worker: the person may decide again.
                still = {key(p) for p in self._open}
                gone = {r.decision_id for r in self._refused.values()}
                self.sent = {
                    k: v for k, v in self.sent.items() if k in still and v.decision_id not in gone
                }
        return self._open

    async def find(
        self, session_id: str, ticket_id: str, key: str | None = None
    ) -> HandoffPacket | None:
        """The open hand-off of that session and ticket (with ``key``: the one handing a person
        the action of that idempotency key), read again if not among the last."""
        for fresh in (False, True):
            for p in await self.open(fresh):
                if (p.session_id, p.ticket_id) == (session_id, ticket_id) and (
                    key is None or (p.action is not None and p.action.idempotency_key == key)
                ):
                    return p
        return None

    async def shown(self) -> dict[str, Any]:
        """The page's queue: how many are open, the oldest ``SHOWN`` of them."""
        waiting = await self.open()
        items = [item(p, self.sent.get(key(p)), self._refused.get(key(p))) for p in waiting[:SHOWN]]
        return {"open": len(waiting), "items": items}
